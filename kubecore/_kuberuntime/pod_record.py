"""What a pod's worker remembers about its pod between syncs (besides probes): the back-off
history of its containers and images, and the refusals already reported."""

from __future__ import annotations

import attrs

from kubecore._planner.actions import BackoffEntry


@attrs.define
class PodRecord:
    """What the agent remembers about one pod between syncs (besides probes)."""

    crash_backoff: dict[str, BackoffEntry] = attrs.field(factory=dict)
    image_backoff: dict[str, BackoffEntry] = attrs.field(factory=dict)
    post_start_failed: set[str] = attrs.field(factory=set)
    resized: dict[str, str] = attrs.field(factory=dict)
    """Container id -> the resources record it was resized to in place."""
    backoff_events: dict[str, float] = attrs.field(factory=dict)
    """(kind, container) -> the backoff deadline an event was already recorded for."""
    warned: set[str] = attrs.field(factory=set)
    """Refusals already reported by an event (not repeated at every sync)."""
    failed_mount: str = ""
    """The last FailedMount reported (an event is recorded when it changes)."""
    pull_seconds: float = 0.0
    """Time spent pulling this pod's images (left out of its start SLI)."""
    worker_started: bool = False
    """Its worker's first sync was timed (``kubelet_pod_worker_start_duration_seconds``)."""
