"""kubecore's CRI adapter: a ``runtime.v1`` gRPC client for containerd (and CRI-O).

Importing this package does not import ``grpc``: the generated messages and stubs are imported
by the modules that use them, and the channels are opened on first use.
"""
