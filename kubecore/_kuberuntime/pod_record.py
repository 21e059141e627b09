"""What a pod's worker remembers about its pod between syncs (besides probes): the back-off
history of its containers and images, and the refusals already reported. The executor never
changes the worker's record: it works on a copy (``PodRecord.copy``) and returns it in its
``SyncResult``, and the worker keeps that one."""

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

    def copy(self) -> PodRecord:
        """A record equal to this one that shares nothing that can change with it."""
        return attrs.evolve(
            self,
            crash_backoff=dict(self.crash_backoff),
            image_backoff=dict(self.image_backoff),
            post_start_failed=set(self.post_start_failed),
            resized=dict(self.resized),
            backoff_events=dict(self.backoff_events),
            warned=set(self.warned),
        )
