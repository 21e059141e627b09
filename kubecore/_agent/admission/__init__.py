"""Admission: whether the agent takes a desired pod onto this node. ``security`` holds the rules
a pod is refused by (privilege and host namespaces, the security context the node can honour,
the pod limit, host-port conflicts, volumes the node cannot serve) and the rejection a refused
pod keeps; ``pod_security`` the Pod Security Standards' levels a pod must meet; ``node_fit``
re-checks what a scheduler decided (the node's labels against ``nodeSelector`` and node affinity,
resources the node does not have); ``cordon`` keeps new API pods off a cordoned node and holds
the node's record."""
