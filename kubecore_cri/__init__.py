"""kubecore's CRI adapter: a ``runtime.v1`` gRPC client for containerd (and CRI-O).

``create_cri_runtime`` (the ``cri`` plugin's factory, what ``kubecore.load_runtime("cri", ...)``
calls) builds a ``CriRuntime`` and a ``CriPuller`` over one ``CriConnection``, configured by
``CriOptions``.

Importing this package does not import ``grpc``: the names are imported on first use, the
generated messages and stubs by the modules that use them, and the channels are opened on first
use.

Interactive exec, attach and port-forward (``StreamingRuntime``, ``PortForwarder``) go through
the runtime's streaming server (the URL ``Exec``, ``Attach`` and ``PortForward`` answer) over
SPDY/3.1: ``_streams`` and ``_ports``. Node leases (``NodeClaims``) are files on the runtime's
host (CRI has no object a renewable lease could live in): ``_lease``.
A memory-backed emptyDir is a tmpfs the agent mounts on the host (``HostMemoryVolumes``), as the
kubelet does; a ``memory_backed`` mount given to the runtime itself is refused with
``InvalidConfig``. The sandbox image is the runtime's own
(containerd's ``sandbox_image``): CRI has no field for it.
"""

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubecore_cri._client import CriConnection, CriOptions
    from kubecore_cri._images import CriPuller
    from kubecore_cri._plugin import create_cri_runtime
    from kubecore_cri._runtime import CriRuntime

# Names are imported on first use: the runtime and the puller import the generated gRPC code.
_DEFINED_IN = {
    "CriConnection": "kubecore_cri._client",
    "CriOptions": "kubecore_cri._client",
    "CriPuller": "kubecore_cri._images",
    "CriRuntime": "kubecore_cri._runtime",
    "create_cri_runtime": "kubecore_cri._plugin",
}


def __getattr__(name: str) -> Any:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_DEFINED_IN])


__all__ = ["CriConnection", "CriOptions", "CriPuller", "CriRuntime", "create_cri_runtime"]

# A library prints nothing unless its host configures logging (see ``kubecore``).
logging.getLogger(__name__).addHandler(logging.NullHandler())
