"""The node's Kubernetes API: a node-scoped subset of it, so that the real ``kubectl`` works
against a node (pods, ConfigMaps, Secrets, events, namespaces, the node itself, discovery and
OpenAPI), served by the kubelet HTTP server under ``/version``, ``/api``, ``/apis`` and
``/openapi``. ``server`` holds ``KubeApi`` (authentication and routing) and ``attach_api``;
``registry`` is the one create/get/list/watch/replace/patch/apply/delete path every kind goes
through, over the kind's ``Resource`` (``resources``): ``pods`` (with ``pod_logs`` for
``pods/log``) and ``objects`` (ConfigMaps and Secrets); ``events`` serves events and namespaces
read-only, and ``nodes`` the agent's own Node (``node_document``, which an etcd writer publishes
too); ``storage`` guards every write (one lock, the store first, no write while it cannot be
read) over the files of ``store``; ``watch`` is the pods' change log behind resourceVersions and
watch streams; ``request`` the request and its body, ``errors`` the v1 ``Status`` failures,
``auth`` the bearer token check, ``tables`` kubectl's ``Table`` columns, ``selectors`` label and
field selectors, ``patch`` merge and strategic merge patches, ``discovery`` and ``openapi`` the
documents kubectl reads first, ``protobuf`` the wire format of the OpenAPI v2 document and of
protobuf bodies, and ``kubelet`` what the API reads from the agent. Beside ``nodes``:
``node_status`` (the Node's conditions and heartbeat), ``node_writes`` (what ``kubectl cordon``
may change) and ``leases`` (the node Lease in ``coordination.k8s.io``)."""
