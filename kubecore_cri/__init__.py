"""kubecore's CRI adapter: a ``runtime.v1`` gRPC client for containerd (and CRI-O).

Importing this package does not import ``grpc``: the generated messages and stubs are imported
by the modules that use them, and the channels are opened on first use.

Not offered yet: interactive exec, attach and port-forward (``StreamingRuntime``,
``PortForwarder``: the agent says the runtime cannot stream), node leases (``NodeClaims``), and
memory-backed emptyDirs (refused with ``InvalidConfig``). The sandbox image is the runtime's own
(containerd's ``sandbox_image``): CRI has no field for it.
"""

import logging

# A library prints nothing unless its host configures logging (see ``kubecore``).
logging.getLogger(__name__).addHandler(logging.NullHandler())
