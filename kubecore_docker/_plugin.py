"""The pluggy entry point: registers the ``docker`` runtime (entry point ``kubecore: docker``)."""

from __future__ import annotations

from typing import Any

from kubecore import RuntimeBundle, hookimpl
from kubecore_docker._client import DockerConnection, DockerOptions
from kubecore_docker._images import DockerPuller
from kubecore_docker._runtime import DockerRuntime

NAME = "docker"


@hookimpl
def kubecore_register_runtimes(registry: Any) -> None:
    registry.register(NAME, create_docker_runtime, "Docker Engine via docker-py")


def create_docker_runtime(**options: Any) -> RuntimeBundle:
    """Build the Docker runtime and puller over one connection (opened on first use).

    Options (strings are accepted): ``base_url`` (default ``$DOCKER_HOST`` or the unix socket),
    ``timeout`` (60 s per call), ``max_pool_size`` (16 connections), ``api_version`` (``auto``),
    ``sandbox_image`` (``registry.k8s.io/pause:3.9``), ``sandbox_stop_timeout`` (10 s), and
    ``clock``. Unknown options raise ``InvalidConfig``.
    """
    clock = options.pop("clock", None)
    connection = DockerConnection(DockerOptions.from_mapping(options))
    return RuntimeBundle(
        runtime=DockerRuntime(connection, clock=clock),
        puller=DockerPuller(connection),
        health_checker=None,
        name=NAME,
    )
