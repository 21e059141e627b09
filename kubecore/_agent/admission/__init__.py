"""Admission: whether the agent takes a desired pod onto this node. ``admit`` runs the rules in
order and remembers each pod's verdict (the rejection a refused pod keeps is
``kubecore._model.rejection``); ``security`` refuses privileged containers and host namespaces
and enforces the pod-security policy (``pod_security``: the Pod Security Standards' levels);
``features`` what the node cannot serve (claims without ``--pvc-dir``, gRPC probes without the
client); ``node_fit`` re-checks what a scheduler decided (the node's labels against
``nodeSelector`` and node affinity, resources the node does not have); ``host_ports`` refuses a
host port already bound; ``cordon`` keeps new API pods off a cordoned node (the cordon is kept in
the node's record, ``kubecore._model.node_record``)."""
