"""The runtime config of an ephemeral container: marked as one (so the planner never restarts it
and its status goes under ``ephemeralContainerStatuses``), and, when it targets another
container, in that container's process namespace (CRI ``NamespaceOption.pid`` TARGET)."""

from __future__ import annotations

import attrs

from kubecore._contract.labels import EPHEMERAL_CONTAINER_ANNOTATION
from kubecore._contract.values import ContainerConfig, NamespaceMode, SandboxConfig


def ephemeral_config(
    config: ContainerConfig, target_id: str, sandbox: SandboxConfig
) -> ContainerConfig:
    """``config`` (an ephemeral container's) marked, and joined to ``target_id``'s process
    namespace when not ''."""
    annotations = {**config.annotations, EPHEMERAL_CONTAINER_ANNOTATION: "true"}
    namespaces = None
    if target_id:
        namespaces = attrs.evolve(
            sandbox.namespace_options, pid=NamespaceMode.TARGET, target_id=target_id
        )
    return attrs.evolve(config, annotations=annotations, namespace_options=namespaces)
