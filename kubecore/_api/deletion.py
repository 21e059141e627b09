"""Graceful deletion of the API's pods, as the API server decides it (``BeforeDelete`` and the
pod strategy's ``CheckGracefulDelete``): a delete sets ``metadata.deletionTimestamp`` (when the
grace period ends) and ``metadata.deletionGracePeriodSeconds``, the pod is shown ``Terminating``
until the agent has stopped its containers, and only then does it leave the API.

The grace period is the delete's (``gracePeriodSeconds`` in the query or the ``DeleteOptions``),
else the pod's ``terminationGracePeriodSeconds``; a pod that has already ended (phase Succeeded or
Failed) goes at once. A second delete of a terminating pod may shorten the grace period, never
lengthen it; a grace period of 0 (``kubectl delete --grace-period=0 --force``) takes the pod out
of the API at once, its containers killed right away.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from kubecore._model.v1 import TERMINAL_PHASES, Pod
from kubecore._util.timefmt import parse_time, rfc3339

DELETION_TIMESTAMP = "deletionTimestamp"
DELETION_GRACE = "deletionGracePeriodSeconds"


@attrs.frozen
class Deletion:
    """A pod being deleted: the pod as the API held it, when its grace period ends (RFC 3339,
    as ``deletionTimestamp``) and that grace period in seconds."""

    pod: Pod
    timestamp: str
    grace: int

    def fields(self) -> dict[str, Any]:
        """The metadata fields the API shows on the pod while it terminates."""
        return {DELETION_TIMESTAMP: self.timestamp, DELETION_GRACE: self.grace}

    def seconds_left(self, now: float) -> int:
        """Whole seconds of the grace period left at ``now`` (0 once it has run out)."""
        ends = parse_time(self.timestamp)
        return max(0, math.ceil(ends - now)) if ends is not None else 0


def first_deletion(pod: Pod, asked: int | None, phase: str, now: float) -> Deletion:
    """The deletion a first delete of ``pod`` (in ``phase``) starts at ``now``."""
    if phase in TERMINAL_PHASES:
        grace = 0  # nothing left to stop
    elif asked is not None:
        grace = asked
    else:
        grace = pod.spec.termination_grace_period_seconds
    return Deletion(pod, rfc3339(now + grace), grace)


def next_deletion(current: Deletion, asked: int | None, now: float) -> Deletion | None:
    """What a further delete of a pod already terminating changes: only a shorter grace period
    (None: nothing)."""
    if asked is None or asked >= current.grace:
        return None
    return Deletion(current.pod, rfc3339(now + asked), asked)


def split_deletion(document: dict[str, Any]) -> tuple[dict[str, Any], str, int] | None:
    """A stored pod document's deletion fields taken out: the document without them, the
    timestamp and the grace period (None: the pod is not being deleted). ``ValueError`` when
    they are not a deletion."""
    meta = document.get("metadata")
    if not isinstance(meta, dict) or DELETION_TIMESTAMP not in meta:
        return None
    meta = dict(meta)
    timestamp = meta.pop(DELETION_TIMESTAMP)
    grace = meta.pop(DELETION_GRACE, 0)
    if not isinstance(timestamp, str) or parse_time(timestamp) is None:
        raise ValueError(f"holds a {DELETION_TIMESTAMP} that is not a time: {timestamp!r}")
    if not isinstance(grace, int) or isinstance(grace, bool) or grace < 0:
        raise ValueError(f"holds a {DELETION_GRACE} that is not a count of seconds: {grace!r}")
    return {**document, "metadata": meta}, timestamp, grace
