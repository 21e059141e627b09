"""Values passed between the pure planner and the executor.

``compute_pod_actions(pod, observed, history, now) -> PodActions`` (in ``_planner.plan``) reads only
these values; the executor carries a ``PodActions`` out through the runtime protocols.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs


class KillReason(enum.Enum):
    SANDBOX_MISSING = "the pod sandbox is missing"
    SANDBOX_DEAD = "the pod sandbox is not ready"
    SANDBOX_CHANGED = "the pod sandbox must be recreated"
    POD_TERMINAL = "the pod reached a terminal phase"
    SPEC_CHANGED = "the container spec changed"
    RESOURCES_CHANGED = "the container's resources changed"
    NOT_IN_SPEC = "the container is not in the pod spec"
    DUPLICATE = "a newer container of the same name runs"
    LIVENESS_FAILED = "the liveness probe failed"
    STARTUP_FAILED = "the startup probe failed"
    POST_START_FAILED = "the postStart hook failed"
    DEADLINE_EXCEEDED = "the pod was active longer than its activeDeadlineSeconds"
    UNKNOWN_STATE = "the container's state is unknown"


@attrs.frozen
class BackoffEntry:
    """Backoff of one container (or image): it may not be retried before ``until``."""

    delay: float
    until: float
    last_failure: float


@attrs.frozen
class ProbeState:
    """The probe worker's latest verdict for one running container (by container id)."""

    liveness_failed: bool = False
    """The container must be killed: its liveness (or startup) probe failed."""
    startup_failed: bool = False
    """It was its startup probe that failed."""
    ready: bool = False
    started: bool = False
    message: str = ""


@attrs.frozen
class PodHistory:
    """What the agent remembers about a pod between syncs. Everything else comes from the runtime.

    Keys of ``crash_backoff`` / ``image_backoff`` are container names; ``probes`` is keyed by
    runtime container id.
    """

    crash_backoff: Mapping[str, BackoffEntry] = attrs.field(factory=dict)
    image_backoff: Mapping[str, BackoffEntry] = attrs.field(factory=dict)
    probes: Mapping[str, ProbeState] = attrs.field(factory=dict)
    post_start_failed: frozenset[str] = frozenset()
    """Runtime container ids whose postStart hook failed."""
    resized: Mapping[str, str] = attrs.field(factory=dict)
    """Runtime container id -> the resources record (``RESOURCES_ANNOTATION``'s form) it was
    resized to in place since it was created."""
    resize_in_place: bool = False
    """The runtime can resize a running container in place (``ResourceUpdater``)."""
    active_since: float | None = None
    """When the pod became active on the node (its status ``startTime``, on the agent's clock):
    ``activeDeadlineSeconds`` counts from there. None when the pod sets no deadline."""
    interrupted_starts: frozenset[str] = frozenset()
    """Runtime container ids whose start an earlier agent process began and never saw end
    (killed mid-start): one that never ran is an interrupted start, not a crash."""


@attrs.frozen
class ContainerToKill:
    container_id: str
    name: str
    reason: KillReason
    message: str = ""
    grace_period: float | None = None
    """Seconds it is given to stop (a failed probe's ``terminationGracePeriodSeconds``); None:
    the pod's grace period."""


@attrs.frozen
class ContainerToResize:
    """A running container whose resources change in place (its ``resizePolicy`` allows it)."""

    container_id: str
    name: str


@attrs.frozen
class ContainerToStart:
    """A container the plan starts now."""

    index: int
    """Index into ``spec.containers`` (``spec.init_containers`` for ``next_init_container``)."""
    restart_count: int = 0
    after_crash: bool = False
    """Its newest instance died (or never came up): this start grows its crash back-off."""
    replaces: str = ""
    """The id of its newest instance when that one was created but never started (an agent
    stopped between the two calls): it is removed first and its restart count reused, so an
    interrupted start is neither left behind nor counted as a restart."""
    replaced_end: str = ""
    """How the replaced instance ended, as the runtime says (exit code, reason, message): for
    the log line that tells an operator an interrupted start was replaced."""
    target_id: str = ""
    """An ephemeral container's: the runtime id of the running container whose process
    namespace it joins (its ``targetContainerName``); '' for the pod's."""


@attrs.frozen
class Waiting:
    """A container the planner wanted to start but may not yet, and why (for status)."""

    name: str
    reason: str
    """``CrashLoopBackOff``, ``ImagePullBackOff``, ``PodInitializing``, ..."""
    message: str = ""


@attrs.frozen
class PodActions:
    kill_pod: bool = False
    """Kill every container and the sandbox(es) of the pod before anything else."""
    create_sandbox: bool = False
    sandbox_id: str = ""
    """The sandbox the new containers join (empty when ``create_sandbox``)."""
    attempt: int = 0
    """Attempt number for a new sandbox."""
    next_init_container: ContainerToStart | None = None
    """The init container to start now."""
    sidecars_to_start: tuple[ContainerToStart, ...] = ()
    """Sidecars (restartable init containers, indices into ``spec.init_containers``) started
    again because they exited, were killed or never came up; they start before
    ``next_init_container`` and the app containers."""
    containers_to_start: tuple[ContainerToStart, ...] = ()
    ephemeral_containers_to_start: tuple[ContainerToStart, ...] = ()
    """Ephemeral containers (indices into ``spec.ephemeral_containers``) that have never run:
    each starts once, before the init and app containers, and never again."""
    containers_to_kill: tuple[ContainerToKill, ...] = ()
    containers_to_resize: tuple[ContainerToResize, ...] = ()
    sandboxes_to_remove: tuple[str, ...] = ()
    waiting: tuple[Waiting, ...] = ()
    pod_failed: bool = False
    """The pod can never run again (init container failed under Never, ...)."""
    kill_pod_reason: KillReason | None = None
    """Why ``kill_pod`` (sandbox missing / dead / changed, pod terminal, ...)."""
    terminal: bool = False
    """The pod reached Succeeded or Failed: nothing of it will start again."""
    failure_reason: str = ""
    """Why the pod failed as a whole, for its status (``DeadlineExceeded``)."""
    failure_message: str = ""

    @property
    def is_noop(self) -> bool:
        return not (
            self.kill_pod
            or self.create_sandbox
            or self.next_init_container is not None
            or self.sidecars_to_start
            or self.containers_to_start
            or self.ephemeral_containers_to_start
            or self.containers_to_kill
            or self.containers_to_resize
            or self.sandboxes_to_remove
        )

    def summary(self) -> str:
        """One line for the logs."""
        parts = []
        if self.kill_pod:
            parts.append("kill pod")
        if self.create_sandbox:
            parts.append(f"create sandbox (attempt {self.attempt})")
        if self.next_init_container is not None:
            parts.append(f"start init[{self.next_init_container.index}]")
        if self.sidecars_to_start:
            parts.append(f"restart sidecars {[start.index for start in self.sidecars_to_start]}")
        if self.containers_to_start:
            parts.append(f"start {[start.index for start in self.containers_to_start]}")
        if self.ephemeral_containers_to_start:
            started = [start.index for start in self.ephemeral_containers_to_start]
            parts.append(f"start ephemeral {started}")
        for kill in self.containers_to_kill:
            parts.append(f"kill {kill.name} ({kill.reason.name})")
        for resize in self.containers_to_resize:
            parts.append(f"resize {resize.name} in place")
        if self.sandboxes_to_remove:
            parts.append(f"remove {len(self.sandboxes_to_remove)} old sandbox(es)")
        for wait in self.waiting:
            parts.append(f"{wait.name} waits: {wait.reason}")
        return "; ".join(parts) or "nothing to do"
