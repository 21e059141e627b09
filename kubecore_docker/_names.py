"""dockershim names and labels: what ``docker ps`` and existing tooling read; and the names of
the node leases' marker containers."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from kubecore.runtime import SANDBOX_CONTAINER_NAME, ContainerConfig, SandboxConfig

NAME_PREFIX = "k8s"
DOCKER_TYPE_LABEL = "io.kubernetes.docker.type"
"""dockershim's label saying what a container is: ``podsandbox`` or ``container``."""
SANDBOX_TYPE = "podsandbox"
CONTAINER_TYPE = "container"
SANDBOX_ID_LABEL = "io.kubernetes.sandbox.id"
"""dockershim's label on a container naming its sandbox (the sandbox container's id)."""
ANNOTATION_PREFIX = "annotation."
"""The prefix of the Docker labels that carry a sandbox's or a container's annotations."""

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
    """The engine labels of a sandbox: the config's labels as given (the core wrote the pod's
    identity into them, ``kubecore.runtime``), dockershim's type, and its annotations."""
    labels = dict(config.labels)
    labels[DOCKER_TYPE_LABEL] = SANDBOX_TYPE
    return _with_annotations(labels, config.annotations)


def container_labels(
    config: ContainerConfig, sandbox_id: str, sandbox: SandboxConfig
) -> dict[str, str]:
    """The engine labels of a container: the config's labels as given, dockershim's type and
    sandbox id, and its annotations."""
    labels = dict(config.labels)
    labels[DOCKER_TYPE_LABEL] = CONTAINER_TYPE
    labels[SANDBOX_ID_LABEL] = sandbox_id
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
