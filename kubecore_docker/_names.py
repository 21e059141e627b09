"""dockershim names and labels: what ``docker ps`` and existing tooling read; and the names of
the node leases' marker containers."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from kubecore import ContainerConfig, SandboxConfig
from kubecore.labels import (
    CONTAINER_NAME_LABEL,
    MANAGED_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    SANDBOX_CONTAINER_NAME,
)

NAME_PREFIX = "k8s"
DOCKER_TYPE_LABEL = "io.kubernetes.docker.type"
SANDBOX_TYPE = "podsandbox"
CONTAINER_TYPE = "container"
SANDBOX_ID_LABEL = "io.kubernetes.sandbox.id"
ANNOTATION_PREFIX = "annotation."

LEASE_PREFIX = "kubecore-node-lease_"
LEASE_LABEL = "io.kubecore.node-lease"
"""On a node lease's marker container (never ``MANAGED_LABEL``: no agent lists it as a pod's):
the node name it holds; the holder's fields are ``LEASE_LABEL.<field>``."""
LEASE_IMAGE = "kubecore/node-lease:1"
"""The image of the marker containers: empty, imported on the engine (never pulled)."""
_ENGINE_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*")


def sandbox_name(config: SandboxConfig) -> str:
    """``k8s_POD_<pod>_<namespace>_<uid>_<attempt>``."""
    return "_".join(
        (
            NAME_PREFIX,
            SANDBOX_CONTAINER_NAME,
            config.name,
            config.namespace,
            config.uid,
            str(config.attempt),
        )
    )


def container_name(config: ContainerConfig, sandbox: SandboxConfig) -> str:
    """``k8s_<container>_<pod>_<namespace>_<uid>_<attempt>``."""
    return "_".join(
        (
            NAME_PREFIX,
            config.name,
            sandbox.name,
            sandbox.namespace,
            sandbox.uid,
            str(config.attempt),
        )
    )


def attempt_from_name(name: str) -> int:
    """The attempt at the end of a dockershim name (0 if the name is not one)."""
    name = name.lstrip("/")
    if not name.startswith(NAME_PREFIX + "_"):
        return 0
    _, _, last = name.rpartition("_")
    return int(last) if last.isdigit() else 0


def _with_annotations(labels: dict[str, str], annotations: Mapping[str, str]) -> dict[str, str]:
    for key, value in annotations.items():
        labels[ANNOTATION_PREFIX + key] = value
    return labels


def sandbox_labels(config: SandboxConfig) -> dict[str, str]:
    labels = dict(config.labels)
    labels.update(
        {
            MANAGED_LABEL: "true",
            DOCKER_TYPE_LABEL: SANDBOX_TYPE,
            POD_NAME_LABEL: config.name,
            POD_NAMESPACE_LABEL: config.namespace,
            POD_UID_LABEL: config.uid,
            CONTAINER_NAME_LABEL: SANDBOX_CONTAINER_NAME,
        }
    )
    return _with_annotations(labels, config.annotations)


def container_labels(
    config: ContainerConfig, sandbox_id: str, sandbox: SandboxConfig
) -> dict[str, str]:
    labels = dict(config.labels)
    labels.update(
        {
            MANAGED_LABEL: "true",
            DOCKER_TYPE_LABEL: CONTAINER_TYPE,
            POD_NAME_LABEL: sandbox.name,
            POD_NAMESPACE_LABEL: sandbox.namespace,
            POD_UID_LABEL: sandbox.uid,
            CONTAINER_NAME_LABEL: config.name,
            SANDBOX_ID_LABEL: sandbox_id,
        }
    )
    return _with_annotations(labels, config.annotations)


def split_labels(engine_labels: Mapping[str, str] | None) -> tuple[dict[str, str], dict[str, str]]:
    """Engine labels back into (labels, annotations)."""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    for key, value in (engine_labels or {}).items():
        if key.startswith(ANNOTATION_PREFIX):
            annotations[key[len(ANNOTATION_PREFIX) :]] = value
        else:
            labels[key] = value
    return labels, annotations


def lease_name(node_name: str) -> str:
    """The marker container of the lease on ``node_name``: unique on the engine, as names are.
    A node name that is no valid container name is hashed."""
    if _ENGINE_NAME.fullmatch(node_name):
        return LEASE_PREFIX + node_name
    return LEASE_PREFIX + "sha256-" + hashlib.sha256(node_name.encode()).hexdigest()[:32]
