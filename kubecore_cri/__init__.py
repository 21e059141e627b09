"""kubecore's CRI adapter: a ``runtime.v1`` gRPC client for containerd (and CRI-O).

Importing this package does not import ``grpc``: the generated messages and stubs are imported
by the modules that use them, and the channels are opened on first use.

Interactive exec, attach and port-forward (``StreamingRuntime``, ``PortForwarder``) go through
the runtime's streaming server (the URL ``Exec``, ``Attach`` and ``PortForward`` answer) over
SPDY/3.1: ``_streams`` and ``_ports``. Not offered yet: node leases (``NodeClaims``), and
memory-backed emptyDirs (refused with ``InvalidConfig``). The sandbox image is the runtime's own
(containerd's ``sandbox_image``): CRI has no field for it.
"""
