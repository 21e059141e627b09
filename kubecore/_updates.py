"""What pod sources send to the agent."""

from __future__ import annotations

import enum

import attrs

from kubecore._model import KubeObject, Pod

SOURCE_ANNOTATION = "kubernetes.io/config.source"
"""Every pod is stamped with the name of the source it came from."""


class Operation(enum.Enum):
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
