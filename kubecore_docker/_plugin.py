"""The pluggy entry point: registers the ``docker`` runtime (entry point ``kubecore: docker``).

docker-py is an optional dependency (``pip install kubecore[docker]``): without it the runtime
is still listed, with a note saying how to install it, and loading it is a clear error.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from kubecore import PluginError, hookimpl
from kubecore.runtime import RuntimeBundle
from kubecore_docker._client import DockerConnection, DockerOptions
from kubecore_docker._images import DockerPuller
from kubecore_docker._runtime import DockerRuntime

NAME = "docker"
MISSING_DOCKER_PY = "docker-py is not installed: pip install 'kubecore[docker]'"


@hookimpl
def kubecore_register_runtimes(registry: Any) -> None:
    registry.register(
        NAME,
        create_docker_runtime,
        "Docker Engine via docker-py",
        unavailable="" if _docker_py_installed() else MISSING_DOCKER_PY,
    )


def _docker_py_installed() -> bool:
    """Whether ``import docker`` can find docker-py, without importing it."""
    return importlib.util.find_spec("docker") is not None


def create_docker_runtime(**options: Any) -> RuntimeBundle:
    """Build the Docker runtime and puller over one connection (opened on first use).

    Options (strings are accepted): ``base_url`` (default ``$DOCKER_HOST`` or the unix socket),
    ``timeout`` (60 s per call), ``max_pool_size`` (16 connections), ``api_version`` (``auto``),
    ``sandbox_image`` (``registry.k8s.io/pause:3.9``), ``sandbox_stop_timeout`` (10 s), and
    ``clock``. Unknown options raise ``InvalidConfig``.
    """
    try:
        import docker  # noqa: F401  (the engine's client library, used on first call)
    except ImportError as exc:
        raise PluginError(f"the {NAME} runtime cannot start: {MISSING_DOCKER_PY} ({exc})") from None
    clock = options.pop("clock", None)
    connection = DockerConnection(DockerOptions.from_mapping(options))
    return RuntimeBundle(
        runtime=DockerRuntime(connection, clock=clock),
        puller=DockerPuller(connection),
        health_checker=None,
        name=NAME,
        clock=clock,
    )
