"""What pod sources send to the agent."""

from __future__ import annotations

import enum

import attrs

from kubecore._manifest.identity import SOURCE_ANNOTATION
from kubecore._model.v1 import KubeObject, Pod


class SourceName(enum.StrEnum):
    """The names of kubecore's own pod sources (stamped under ``SOURCE_ANNOTATION``)."""

    FILE = "file"
    """Manifest files and directories."""
    HTTP = "http"
    """A manifest URL."""
    API = "api"
    """The embedding program (``StaticSource``, ``Kubelet.set_pods``)."""
    KUBE_APISERVER = "kube-apiserver"
    """The node's Kubernetes API, what kubectl writes to."""
    ETCD = "etcd"
    """Pods bound to the node in etcd."""


CLUSTER_SOURCES = frozenset(
    {SourceName.API.value, SourceName.KUBE_APISERVER.value, SourceName.ETCD.value}
)
"""Pods from these sources are the API server's (or the scheduler's, or the embedder's); the
others are *static* pods, as the kubelet's metrics label them."""


def is_static(pod: Pod) -> bool:
    """The pod came from a manifest file or URL (or a source of the embedder's own naming)."""
    return pod.metadata.annotations.get(SOURCE_ANNOTATION, "") not in CLUSTER_SOURCES


class Operation(enum.Enum):
    """What a ``PodUpdate`` does with its pods (kubelet's ``PodOperation``)."""

    SET = "set"
    """The source's complete pod list: pods it no longer lists are removed."""
    ADD = "add"
    UPDATE = "update"
    REMOVE = "remove"
    NOT_READY = "not-ready"
    """The source cannot be read now (a directory gone, a URL down): its pods stay as they were,
    and the agent deletes nothing until the source reports again."""


@attrs.frozen
class PodUpdate:
    """One update from a pod source: an operation on some pods (and the source's ConfigMaps and
    Secrets), as the agent's pod config merges them."""

    op: Operation
    pods: tuple[Pod, ...]
    source: str
    objects: tuple[KubeObject, ...] | None = None
    """ConfigMaps and Secrets, with the same operation as the pods (``SET`` replaces all the
    source's objects; ``REMOVE`` takes the objects named out). None: the update says nothing
    about objects (a ``SET`` of pods alone keeps the source's objects)."""
    reason: str = attrs.field(default="", eq=False)
    """With ``NOT_READY``: why the source cannot be read (``/healthz`` shows it); not part of
    the update's identity. With another operation (a ``SET`` of the pods the source remembers,
    sent while it cannot be read at start): the pods are applied but the source stays not ready
    for this reason."""
