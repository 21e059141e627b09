"""kubecore's CRI adapter: a ``runtime.v1`` gRPC client for containerd (and CRI-O).

Importing this package does not import ``grpc``: the generated messages and stubs are imported
by the modules that use them, and the channels are opened on first use.

Not offered yet: interactive exec, attach and port-forward (``StreamingRuntime``,
``PortForwarder``: the agent says the runtime cannot stream) and node leases (``NodeClaims``).
A memory-backed emptyDir is a tmpfs the agent mounts on the host (``HostMemoryVolumes``), as the
kubelet does; a ``memory_backed`` mount given to the runtime itself is refused with
``InvalidConfig``. The sandbox image is the runtime's own
(containerd's ``sandbox_image``): CRI has no field for it.
"""
