"""The pluggy entry point: registers the ``cri`` runtime (entry point ``kubecore: cri``).

grpcio and protobuf are optional dependencies (``pip install kubecore[cri]``): without them the
runtime is still listed, with a note saying how to install them, and loading it is a clear error.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from kubecore import PluginError, hookimpl
from kubecore.runtime import RuntimeBundle

NAME = "cri"
MISSING_GRPC = "grpcio and protobuf are not installed: pip install 'kubecore[cri]'"


@hookimpl
def kubecore_register_runtimes(registry: Any) -> None:
    registry.register(
        NAME,
        create_cri_runtime,
        "a CRI runtime (containerd, CRI-O) over gRPC",
        unavailable="" if _grpc_installed() else MISSING_GRPC,
    )


def _grpc_installed() -> bool:
    """Whether grpcio and protobuf can be found, without importing them."""
    return all(importlib.util.find_spec(name) is not None for name in ("grpc", "google.protobuf"))


def create_cri_runtime(**options: Any) -> RuntimeBundle:
    """Build the CRI runtime and puller over one connection (opened on first use).

    Options (strings are accepted): ``endpoint`` (``unix:///run/containerd/containerd.sock``),
    ``image_endpoint`` (the endpoint's), ``timeout`` (30 s per call), ``pull_timeout`` (600 s),
    ``log_root`` (``/var/log/pods``), ``cgroup_parent``, ``runtime_handler`` and ``clock``.
    Unknown options raise ``InvalidConfig``.
    """
    try:
        import google.protobuf  # noqa: F401
        import grpc  # noqa: F401  (the client library, used on first call)
    except ImportError as exc:
        raise PluginError(f"the {NAME} runtime cannot start: {MISSING_GRPC} ({exc})") from None
    from kubecore_cri._client import CriConnection, CriOptions
    from kubecore_cri._images import CriPuller
    from kubecore_cri._runtime import CriRuntime

    clock = options.pop("clock", None)
    connection = CriConnection(CriOptions.from_mapping(options))
    return RuntimeBundle(
        runtime=CriRuntime(connection, clock=clock),
        puller=CriPuller(connection),
        health_checker=None,
        name=NAME,
        clock=clock,
    )
