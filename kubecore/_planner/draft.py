"""The scratchpad of one planning run: the kills, starts, resizes and waiting reasons found so
far, and how a start is numbered (its restart count) and held back by a back-off."""

from __future__ import annotations

from kubecore._contract.observed import Record, View
from kubecore._contract.values import RuntimeState
from kubecore._model.v1 import Container, Pod
from kubecore._planner.actions import (
    ContainerToKill,
    ContainerToResize,
    ContainerToStart,
    KillReason,
    PodHistory,
    ProbeState,
    Waiting,
)
from kubecore._planner.backoff import format_delay, in_backoff
from kubecore._planner.pod_info import PodInfo
from kubecore._planner.resize import IN_PLACE, RESTART, resize_of

_RUNNING = RuntimeState.RUNNING
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
IMAGE_PULL_BACK_OFF = "ImagePullBackOff"


def probe_kill_reason(state: ProbeState) -> KillReason:
    return KillReason.STARTUP_FAILED if state.startup_failed else KillReason.LIVENESS_FAILED


def probe_grace(container: Container, state: ProbeState) -> float | None:
    """The failed probe's own grace period, if it sets one (else the pod's applies)."""
    probe = container.startup_probe if state.startup_failed else container.liveness_probe
    if probe is None or probe.termination_grace_period_seconds is None:
        return None
    return float(probe.termination_grace_period_seconds)


def interrupted_start(record: Record, interrupted: frozenset[str]) -> bool:
    """Did ``record`` never run because its start was cut off? Created and never started, or
    (``interrupted``: the starts an earlier agent process never saw end) ended without ever
    running: containerd fails a start whose caller was killed (exit 128) and never runs it."""
    if record.never_started:
        return True
    c = record.c
    return c.id in interrupted and c.started_at is None and not record.live


def ended(record: Record) -> str:
    """How ``record``'s instance ended, in the runtime's words ('' if it never did)."""
    c = record.c
    if c.exit_code is None:
        return ""
    said = f"exit {c.exit_code}" + (f" {c.reason}" if c.reason else "")
    return f"{said}: {c.message}" if c.message else said


def to_start(
    index: int,
    records: list[Record] | None,
    others: list[Record] | None = None,
    interrupted: frozenset[str] = frozenset(),
) -> ContainerToStart:
    """Start the container at ``index`` after its previous instances (newest first), with a
    restart count above theirs and above ``others`` of its name (instances ``View`` set aside).
    An instance whose start was cut off is replaced, not counted (``interrupted_start``)."""
    floor = max((r.restart_count for r in others), default=-1) if others else -1
    if not records:
        return ContainerToStart(index, floor + 1)
    newest = records[0]
    if interrupted_start(newest, interrupted):
        # takes its place: the count it had, above every other instance
        below = max((r.restart_count for r in records[1:]), default=-1)
        count = max(newest.restart_count, max(below, floor) + 1)
        return ContainerToStart(
            index, count, after_crash=True, replaces=newest.c.id, replaced_end=ended(newest)
        )
    return ContainerToStart(
        index,
        restart_count=max(max(r.restart_count for r in records), floor) + 1,
        after_crash=records[0].c.state is not _RUNNING,
    )


def set_aside(view: View, name: str) -> list[Record] | None:
    """The instances of ``name`` that ``View`` put among the strays (None: there are none)."""
    if not view.stray:
        return None
    return [r for r in view.stray if r.name == name] or None


class Draft:
    """The mutable scratchpad of one planning run."""

    __slots__ = (
        "history",
        "info",
        "kills",
        "now",
        "pod",
        "resizes",
        "sidecar_starts",
        "starts",
        "view",
        "waiting",
    )

    def __init__(
        self, pod: Pod, info: PodInfo, history: PodHistory, now: float, view: View
    ) -> None:
        self.pod = pod
        self.view = view
        self.info = info
        self.history = history
        self.now = now
        self.kills: dict[str, ContainerToKill] = {}
        self.starts: list[ContainerToStart] = []
        self.sidecar_starts: list[ContainerToStart] = []
        self.resizes: list[ContainerToResize] = []
        self.waiting: list[Waiting] = []

    def kill(
        self, record: Record, reason: KillReason, message: str = "", grace: float | None = None
    ) -> None:
        c = record.c
        if c.id not in self.kills:
            self.kills[c.id] = ContainerToKill(c.id, record.name, reason, message, grace)

    def blocked(self, container: Container, *, crash: bool) -> Waiting | None:
        """The backoff that forbids starting ``container`` now, as a Waiting reason."""
        history, name = self.history, container.name
        if crash and history.crash_backoff:
            entry = history.crash_backoff.get(name)
            if entry is not None and in_backoff(entry, self.now):
                return Waiting(
                    name,
                    CRASH_LOOP_BACK_OFF,
                    f"back-off {format_delay(entry.delay)} restarting failed "
                    f"container={name} pod={self.info.desc}",
                )
        if history.image_backoff:
            entry = history.image_backoff.get(name)
            if entry is not None and in_backoff(entry, self.now):
                return Waiting(
                    name, IMAGE_PULL_BACK_OFF, f'Back-off pulling image "{container.image}"'
                )
        return None

    def start(self, index: int, records: list[Record] | None, *, crash: bool) -> None:
        container = self.pod.spec.containers[index]
        waiting = self.blocked(container, crash=crash)
        if waiting is not None:
            self.waiting.append(waiting)
            return
        self.starts.append(
            to_start(
                index,
                records,
                set_aside(self.view, container.name),
                self.history.interrupted_starts,
            )
        )

    def resize(self, container: Container, record: Record) -> bool:
        """Resize a running container whose resources changed; True if it is killed for it
        (its restart is the caller's)."""
        how = resize_of(container, record.c, self.history)
        if how == IN_PLACE:
            self.resizes.append(ContainerToResize(record.c.id, container.name))
        elif how == RESTART:
            self.kill(record, KillReason.RESOURCES_CHANGED, "will be restarted")
            return True
        return False

    def restart_sidecar(self, index: int, records: list[Record] | None, *, crash: bool) -> None:
        container = self.pod.spec.init_containers[index]
        waiting = self.blocked(container, crash=crash)
        if waiting is not None:
            self.waiting.append(waiting)
            return
        self.sidecar_starts.append(
            to_start(
                index,
                records,
                set_aside(self.view, container.name),
                self.history.interrupted_starts,
            )
        )

    def sorted_kills(self) -> tuple[ContainerToKill, ...]:
        return tuple(sorted(self.kills.values(), key=lambda k: (k.name, k.container_id)))
