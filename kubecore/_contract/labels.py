"""The labels and annotations that identify kubecore's sandboxes and containers: written here
and read here, as the kubelet keeps both in ``kuberuntime/labels.go``.

State lives only in these, so a runtime must store them as given and return them unchanged; a
runtime selects its own objects by ``MANAGED_LABEL``, and an agent the objects of its own node by
``NODE_LABEL`` (``owned_by``: an object without one is nobody's). The names are dockershim's, so
existing tooling (``docker ps``, crictl) reads them. Writing: ``sandbox_labels``,
``sandbox_annotations``, ``container_labels``, ``container_annotations``. Reading:
``container_name``, ``restart_count``, ``recorded_hash``, ``pod_identity``, ``grace_period``,
``init_flag`` / ``is_sidecar`` / ``is_ephemeral``, ``node_of`` / ``owned_by``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

MANAGED_LABEL = "io.kubecore.managed"
"""On every object kubecore makes: a runtime lists only the objects that carry it."""
NODE_LABEL = "io.kubecore.node"
"""The node (agent) that made the object: an agent leaves other nodes' objects alone."""
POD_NAME_LABEL = "io.kubernetes.pod.name"
"""The name of the pod the sandbox or container belongs to."""
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
"""The namespace of the pod the sandbox or container belongs to."""
POD_UID_LABEL = "io.kubernetes.pod.uid"
"""The uid of the pod the sandbox or container belongs to: the pod's identity on the engine."""
CONTAINER_NAME_LABEL = "io.kubernetes.container.name"
"""The container's name in its pod spec (``SANDBOX_CONTAINER_NAME`` on a sandbox)."""
SANDBOX_CONTAINER_NAME = "POD"
"""The ``CONTAINER_NAME_LABEL`` of a sandbox."""
# Annotations (stored by Docker as labels prefixed ``annotation.``).
HASH_ANNOTATION = "io.kubernetes.container.hash"
"""The hash of the container's spec it was created from: a changed spec restarts it."""
RESTART_COUNT_ANNOTATION = "io.kubernetes.container.restartCount"
"""How many times the container had restarted when this instance was created."""
TERMINATION_MESSAGE_PATH_ANNOTATION = "io.kubernetes.container.terminationMessagePath"
"""Where in the container its termination message is read from."""
GRACE_PERIOD_ANNOTATION = "io.kubernetes.pod.terminationGracePeriod"
"""The pod's termination grace period in seconds, for a kill after a restart of the agent."""
INIT_CONTAINER_ANNOTATION = "io.kubecore.container.init"
"""On an init container (``true``), so its status is reported under ``initContainerStatuses``."""
EPHEMERAL_CONTAINER_ANNOTATION = "io.kubecore.container.ephemeral"
"""On an ephemeral container (``true``): started once, never restarted, reported under
``ephemeralContainerStatuses``."""
SIDECAR_ANNOTATION = "io.kubecore.container.sidecar"
"""On an init container with ``restartPolicy: Always``: it runs beside the app containers."""
RESOURCES_ANNOTATION = "io.kubecore.container.resources"
"""The resources a container with a ``resizePolicy`` was created with (canonical JSON): its spec
hash leaves them out, and the planner compares them to decide on a resize."""
SANDBOX_HASH_ANNOTATION = "io.kubecore.sandbox.hash"
"""Hash of what a sandbox is built from (ports, host network, hostname, DNS policy)."""


class Labelled(Protocol):
    """What the readers need of an observed object (``RuntimeContainer`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def attempt(self) -> int: ...

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def annotations(self) -> Mapping[str, str]: ...


# --- writing ------------------------------------------------------------------------------------


def sandbox_labels(name: str, namespace: str, uid: str, node: str = "") -> dict[str, str]:
    """A sandbox's identity: kubecore's, of pod ``namespace/name`` (``uid``), made by ``node``
    (no node label when '')."""
    return container_labels(name, namespace, uid, SANDBOX_CONTAINER_NAME, node)


def container_labels(
    pod_name: str, namespace: str, uid: str, container: str, node: str = ""
) -> dict[str, str]:
    """A container's identity: kubecore's, ``container`` of pod ``namespace/pod_name`` (``uid``),
    made by ``node`` (no node label when '')."""
    labels = {
        MANAGED_LABEL: "true",
        POD_NAME_LABEL: pod_name,
        POD_NAMESPACE_LABEL: namespace,
        POD_UID_LABEL: uid,
        CONTAINER_NAME_LABEL: container,
    }
    if node:
        labels[NODE_LABEL] = node
    return labels


def sandbox_annotations(grace_period: int, sandbox_hash: str) -> dict[str, str]:
    """What a sandbox carries beyond its pod's annotations: the pod's grace period (a pod the
    agent never knew is killed with it) and the hash it was built from."""
    return {
        GRACE_PERIOD_ANNOTATION: str(grace_period),
        SANDBOX_HASH_ANNOTATION: sandbox_hash,
    }


def container_annotations(
    *,
    spec_hash: str,
    restart_count: int,
    grace_period: int,
    termination_message_path: str = "",
    is_init: bool = False,
    is_sidecar: bool = False,
    resources: str | None = None,
) -> dict[str, str]:
    """What a container carries for the agent after a restart: its spec hash, restart count,
    termination message path, init flag (and sidecar flag), the pod's grace period and, for a
    container that can be resized in place, the resources it was created with."""
    annotations = {
        HASH_ANNOTATION: spec_hash,
        RESTART_COUNT_ANNOTATION: str(restart_count),
        TERMINATION_MESSAGE_PATH_ANNOTATION: termination_message_path,
        INIT_CONTAINER_ANNOTATION: "true" if is_init else "false",
        GRACE_PERIOD_ANNOTATION: str(grace_period),
    }
    if is_init and is_sidecar:
        annotations[SIDECAR_ANNOTATION] = "true"
    if resources is not None:
        annotations[RESOURCES_ANNOTATION] = resources
    return annotations


# --- reading ------------------------------------------------------------------------------------


def container_name(c: Labelled) -> str:
    """The spec name of an observed container: its ``CONTAINER_NAME_LABEL`` (an empty label
    counts as absent), else the runtime's name."""
    return c.labels.get(CONTAINER_NAME_LABEL) or c.name


def restart_count(c: Labelled) -> int:
    """How many times the container had been restarted when this instance was created: the
    annotation (else a label of that name, else the runtime's attempt)."""
    raw = c.annotations.get(RESTART_COUNT_ANNOTATION) or c.labels.get(RESTART_COUNT_ANNOTATION)
    if raw is None:
        return c.attempt
    try:
        return int(raw)
    except ValueError:
        return c.attempt


def recorded_hash(c: Labelled) -> str:
    """The spec hash a container was created with: the annotation (else a label of that name,
    else '': not kubecore's, changed by nothing)."""
    return c.annotations.get(HASH_ANNOTATION) or c.labels.get(HASH_ANNOTATION, "")


def pod_identity(labels: Mapping[str, str]) -> tuple[str, str, str]:
    """(namespace, name, uid) of the pod an object belongs to ('' for each that is missing)."""
    return (
        labels.get(POD_NAMESPACE_LABEL, ""),
        labels.get(POD_NAME_LABEL, ""),
        labels.get(POD_UID_LABEL, ""),
    )


def grace_period(annotations: Mapping[str, str], default: float) -> float:
    """The pod's grace period an object carries, else ``default`` (missing or unreadable)."""
    raw = annotations.get(GRACE_PERIOD_ANNOTATION, "")
    try:
        return float(raw) if raw else default
    except ValueError:
        return default


def init_flag(annotations: Mapping[str, str]) -> bool | None:
    """Whether a container is an init container (None: not written by kubecore)."""
    flag = annotations.get(INIT_CONTAINER_ANNOTATION)
    return None if flag is None else flag == "true"


def is_ephemeral(annotations: Mapping[str, str]) -> bool:
    """Whether a container is an ephemeral container (``kubectl debug``)."""
    return annotations.get(EPHEMERAL_CONTAINER_ANNOTATION) == "true"


def is_sidecar(annotations: Mapping[str, str]) -> bool:
    """Whether an init container runs beside the app containers (``restartPolicy: Always``)."""
    return annotations.get(SIDECAR_ANNOTATION) == "true"


def node_of(labels: Mapping[str, str]) -> str:
    """The node (agent) that made an object: its ``NODE_LABEL``, '' when it has none."""
    return labels.get(NODE_LABEL, "")


def owned_by(labels: Mapping[str, str], node_name: str) -> bool:
    """The ownership rule, written once: an agent syncs, kills and collects an object only when
    the object's node label names the agent's node. Everything else on a shared engine (another
    node's objects, and objects that carry ``MANAGED_LABEL`` but no node label: made by hand,
    by another tool, or by an agent older than node labels) is left alone. (An agent with the
    empty node name labels nothing, and so owns just the unlabelled objects.)"""
    return labels.get(NODE_LABEL, "") == node_name
