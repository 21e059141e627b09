"""One sync pass, level-triggered: relist the runtime, refresh the desired pods, dispatch a sync to
each pod that needs one (and a removal to each pod no longer desired, once its source's word is
known), run the housekeeping that is due, count the pods, and report what was done.

A pass runs in the caller's thread (``Kubelet.sync``: pod syncs run inline) or in the background
loop (``kubecore._agent.sync_loop``: they go to the pod workers)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import attrs

from kubecore._agent.event_stream import EventStream
from kubecore._agent.outage import Outage
from kubecore._agent.pod_workers.room import PodState, Work
from kubecore._agent.signals import Signals
from kubecore._agent.snapshot import Grouped, observed_of
from kubecore._agent.termination import PodLifecycle, Termination, Terminations
from kubecore._agent.wiring import Rooms, static_label
from kubecore._contract.errors import ContainerRuntimeError
from kubecore._contract.observed import PodEntry
from kubecore._contract.values import RuntimeSnapshot, RuntimeState
from kubecore._manifest.identity import SOURCE_ANNOTATION
from kubecore._model.v1 import TERMINAL_PHASES

logger = logging.getLogger(__name__)


@attrs.frozen
class SyncReport:
    """What one sync pass did. ``converged`` when it did nothing at all."""

    pods: int = 0
    """Desired pods (admitted)."""
    synced: int = 0
    """Pods planned in this pass (the others were unchanged)."""
    actions: Mapping[str, str] = attrs.field(factory=dict)
    """Pod (``namespace/name``) -> one-line summary of what was done to it."""
    errors: Mapping[str, str] = attrs.field(factory=dict)
    """Pod (or ``runtime``) -> the error that stopped its sync; retried at the next sync."""
    removed: tuple[str, ...] = ()
    """UIDs of undesired pods whose containers were killed and removed."""
    removed_dispatched: int = 0
    """Undesired pods handed to the workers for removal (background passes)."""
    garbage_collected: int = 0
    duration: float = 0.0

    @property
    def converged(self) -> bool:
        """Whether the pass found nothing to do: no action taken, no error, no pod removed."""
        return not (self.actions or self.errors or self.removed)


@attrs.frozen
class _Relisted:
    """What a relist found: the engine's snapshot, this node's part of it, grouped by pod."""

    engine: RuntimeSnapshot
    snapshot: RuntimeSnapshot
    view: Grouped
    now: float
    mono: float


class SyncPass:
    """The pass, and what passes remember of each other (when the last resync and relist were,
    the runtime's pods last seen, the relists failing in a row)."""

    def __init__(self, rooms: Rooms, signals: Signals, stream: EventStream) -> None:
        self._rooms = rooms
        self._signals = signals
        self._stream = stream
        self.grouped: dict[str, PodEntry] = {}
        """The last relist's objects of this node, by pod UID."""
        self.last_pass = rooms.started
        """The monotonic time the last pass ended."""
        self.outage = Outage()
        """Relists failing in a row (the runtime not answering): the loop backs off."""
        self._last_resync = rooms.started
        self._last_relist: float | None = None
        self._objects_revision = rooms.objects.revision
        self._counted: tuple[object, object] = (None, None)
        """The desired states and the runtime's pods last counted in the pod gauges."""

    def run(self, *, inline: bool) -> SyncReport:
        """One pass; ``inline``: pod syncs run in this thread (else on the pod workers)."""
        rooms = self._rooms
        started = rooms.clock.monotonic()
        # Read before the desired pods: sources that had all reported by now are all in the
        # refreshed view, so a pod missing from it is really not wanted. (Read after, a source
        # reporting in between would make every pod of the view taken before it an orphan.)
        ready = rooms.pod_config.ready_sources()
        sources_ready = bool(ready) and ready.issuperset(rooms.pod_config.sources)
        rooms.refresh_desired()
        self._signals.take_outcomes()
        self._signals.generation += 1
        generation = self._signals.generation
        relisted = self._relist()
        if isinstance(relisted, str):
            return SyncReport(pods=len(rooms.desired.states), errors={"runtime": relisted})
        grouped = relisted.view.entries
        states = list(rooms.desired.states.values())  # replaced whole by a refresh
        synced = self._dispatch_desired(states, relisted, generation, inline=inline)
        desired = rooms.desired.states
        removed = self._dispatch_undesired(
            desired, grouped, generation, sources_ready, ready, inline
        )
        rooms.terminations.retain(grouped, desired)
        collected = self._housekeep(relisted, desired, sources_ready)
        rooms.gauges.update(relisted.snapshot, relisted.view.ready, relisted.view.running)
        self._count_pods()
        actions: dict[str, str] = {}
        errors: dict[str, str] = {}
        for name, summary, error in self._signals.take_outcomes():
            if summary:
                actions[name] = summary
            if error:
                errors[name] = error
        duration = max(0.0, rooms.clock.monotonic() - started)
        rooms.metrics.sync_duration.observe(duration)
        self.last_pass = rooms.clock.monotonic()
        return SyncReport(
            pods=len(states),
            synced=synced,
            actions=actions,
            errors=errors,
            removed=tuple(removed) if inline else (),
            removed_dispatched=len(removed),
            garbage_collected=collected,
            duration=duration,
        )

    def runs_containers_of(self, uid: str) -> bool:
        """Whether the last relist saw a running container of the pod ``uid``."""
        entry = self.grouped.get(uid)
        return entry is not None and any(c.state is RuntimeState.RUNNING for c in entry.containers)

    def _relist(self) -> _Relisted | str:
        """The runtime's snapshot, grouped by pod (or why it could not be taken)."""
        rooms = self._rooms
        metrics = rooms.metrics
        relist_started = rooms.clock.monotonic()
        if self._last_relist is not None:
            metrics.pleg_relist_interval.observe(max(0.0, relist_started - self._last_relist))
        self._last_relist = relist_started
        try:
            engine_snapshot = rooms.runtime.snapshot()
        except Exception as exc:
            self._relist_failed(exc)
            return f"snapshot: {exc}"
        snapshot = rooms.node_view.own_objects(engine_snapshot)
        view = rooms.node_view.group(snapshot)
        now = rooms.clock.now()
        mono = rooms.clock.monotonic()
        ended = self.outage.answer(mono)
        if ended is not None:
            logger.warning("the container runtime answered again %s", ended.describe())
        metrics.pleg_relist_duration.observe(max(0.0, mono - relist_started))
        metrics.pleg_last_seen.set(now)
        self._stream.confirm_deaths(snapshot, mono)
        self.grouped = view.entries
        return _Relisted(engine_snapshot, snapshot, view, now, mono)

    def _resync_due(self, mono: float) -> bool:
        """Every pod is planned again: at each resync interval, and when a ConfigMap or Secret
        changed (a container waiting for it starts now, not at the next resync)."""
        resync = mono - self._last_resync >= self._rooms.config.resync_interval
        if resync:
            self._last_resync = mono
        objects_revision = self._rooms.objects.revision
        if objects_revision != self._objects_revision:
            self._objects_revision = objects_revision
            resync = True
        return resync

    def _dispatch_desired(
        self, states: list[PodState], relisted: _Relisted, generation: int, *, inline: bool
    ) -> int:
        """A sync for each desired pod that needs one (it changed, its containers changed, a
        back-off ended, a message or probe result came, or a resync is due); how many."""
        rooms = self._rooms
        grouped, now = relisted.view.entries, relisted.now
        resync = self._resync_due(relisted.mono)
        posted = self._signals.inbox.take()
        probed = rooms.prober.run_due(
            ((st.pod, grouped.get(st.pod.uid)) for st in states if st.has_probes),
            now,
            inline=inline,
        )
        forced = posted | probed if probed else posted
        # With no loop and no worker busy, nothing else can sync a pod during this inline pass:
        # the pod workers' bookkeeping (locks, busy set, wake-ups) is skipped.
        direct = (
            inline
            and not self._signals.looping
            and not rooms.workers.closed
            and rooms.workers.busy_count == 0
        )
        synced = 0
        for st in states:
            pod = st.pod
            uid = pod.uid
            entry = grouped.get(uid)
            if (
                not resync
                and not st.dirty
                and st.synced_pod is pod
                and st.observed_key == (entry.key if entry is not None else None)
                and now < st.replan_at
                and uid not in forced
            ):
                continue
            synced += 1
            work = Work(
                pod, observed_of(entry), generation, entry.key if entry is not None else None
            )
            if direct:
                self._sync_direct(uid, work)
            else:
                rooms.workers.dispatch(uid, work, inline=inline)
        return synced

    def _dispatch_undesired(
        self,
        desired: Mapping[str, PodState],
        grouped: Mapping[str, PodEntry],
        generation: int,
        sources_ready: bool,
        ready: frozenset[str],
        inline: bool,
    ) -> list[str]:
        """A removal for each pod on the node no longer desired whose source's word is known;
        their UIDs."""
        rooms = self._rooms
        removed: list[str] = []
        for uid, entry in grouped.items():
            if uid in desired or not uid:
                continue
            termination = rooms.terminations.get(uid)
            if not removal_due(termination, sources_ready, ready):
                continue  # whose it is may be a source that cannot be read: keep it
            removed.append(uid)
            work = Work(None, observed_of(entry), generation, None, termination)
            rooms.workers.dispatch(uid, work, inline=inline)
        return removed

    def _housekeep(
        self, relisted: _Relisted, desired: Mapping[str, PodState], sources_ready: bool
    ) -> int:
        """The housekeeping that is due, then the volume chores (evicting a pod over its
        local storage); how many objects were garbage collected."""
        rooms = self._rooms
        try:
            collected = rooms.housekeeping.run(
                relisted.snapshot,
                relisted.engine,
                desired,
                relisted.view.entries,
                sources_ready=sources_ready,
                now=relisted.now,
                mono=relisted.mono,
            )
        except Exception:
            logger.exception("housekeeping failed")
            collected = 0
        try:
            evictions = rooms.housekeeping.volume_chores(
                [st.pod for st in desired.values()], relisted.snapshot, mono=relisted.mono
            )
        except Exception:
            logger.exception("volume housekeeping failed")
            evictions = []
        for pod, rejection, signal in evictions:
            rooms.desired.evict(pod, rejection, relisted.now)
            rooms.metrics.record_eviction(signal)
            self._signals.wake.set()
        return collected

    def _relist_failed(self, exc: Exception) -> None:
        """A relist failed: logged at a falling rate (the 1st, 2nd, 4th, ... in a row, and at
        least once a minute); the loop waits ``outage.delay`` before the next."""
        outage = self.outage
        clock = self._rooms.clock
        if not outage.fail(clock.monotonic()):
            logger.debug("runtime snapshot failed again (%d in a row): %s", outage.failures, exc)
            return
        retry = f"; next relist in {outage.delay:.1f}s" if self._signals.looping else ""
        message = (
            "runtime snapshot failed (%d in a row over %.1fs%s; fewer of these are logged): %s"
        )
        args = (outage.failures, clock.monotonic() - outage.started, retry, exc)
        if isinstance(exc, ContainerRuntimeError):
            logger.warning(message, *args)
        else:
            logger.error(message, *args, exc_info=exc)

    def _count_pods(self) -> None:
        """The desired, active and working pod gauges, when the desired pods or the runtime's
        pods changed (a pod turns terminal, or moves on its way out, only as its containers
        change)."""
        rooms = self._rooms
        states, grouped = rooms.desired.states, self.grouped
        if self._counted[0] is states and self._counted[1] is grouped:
            return
        self._counted = (states, grouped)
        desired = {"true": 0, "false": 0}
        for pod in rooms.pod_config.pods():
            desired[static_label(pod)] += 1
        active = {"true": 0, "false": 0}
        for st in states.values():
            status = st.published.status
            if status is None or status.phase not in TERMINAL_PHASES:
                active[static_label(st.pod)] += 1
        metrics = rooms.metrics
        for label in ("true", "false"):
            metrics.desired_pods.labels(label).set(desired[label])
            metrics.active_pods.labels(label).set(active[label])
        working = working_pod_counts(states, grouped, rooms.terminations)
        for labels, count in working.items():
            metrics.working_pods.labels(*labels).set(count)

    def _sync_direct(self, uid: str, work: Work) -> None:
        """A pod's sync in this thread, failing as a pod worker would (logged, not raised)."""
        try:
            self._rooms.syncer.sync(uid, work)
        except Exception:
            logger.exception("pod worker for %s failed", uid)


_WORKING_CONFIGS = (("desired", "true"), ("desired", "false"), ("orphan", "true"),
                    ("orphan", "false"), ("runtime_only", "unknown"))  # fmt: skip
_LIFECYCLE_LABELS = {
    PodLifecycle.SYNCING: "terminating",  # left the config, its worker has not begun yet
    PodLifecycle.TERMINATING: "terminating",
    PodLifecycle.TERMINATED: "terminated",
}


def working_pod_counts(
    desired: Mapping[str, PodState], on_node: Iterable[str], terminations: Terminations
) -> dict[tuple[str, str, str], int]:
    """The kubelet's ``working_pods`` (lifecycle, config, static) -> count, every combination
    present: desired pods sync (or are terminated once terminal), pods that left the config
    are orphans on their way out, and pods only the runtime shows are ``runtime_only``."""
    counts = {
        (lifecycle, config, static): 0
        for config, static in _WORKING_CONFIGS
        for lifecycle in ("sync", "terminating", "terminated")
    }
    for st in desired.values():
        status = st.published.status
        terminal = status is not None and status.phase in TERMINAL_PHASES
        counts["terminated" if terminal else "sync", "desired", static_label(st.pod)] += 1
    for uid in on_node:
        if uid in desired or not uid:
            continue
        termination = terminations.get(uid)
        if termination is None:
            counts["terminating", "runtime_only", "unknown"] += 1
        else:
            lifecycle = _LIFECYCLE_LABELS[termination.lifecycle]
            counts[lifecycle, "orphan", static_label(termination.pod)] += 1
    return counts


def removal_due(
    termination: Termination | None, sources_ready: bool, ready: frozenset[str]
) -> bool:
    """Whether a pod on the node that is no longer desired is removed now: every source has
    reported, or the pod left the state of a source that is ready (deleted over the API while
    a manifest directory cannot be read): that source's word is known, the pod goes."""
    if sources_ready:
        return True
    if termination is None:
        return False  # found on the runtime with no record of its source (after a restart)
    return termination.pod.metadata.annotations.get(SOURCE_ANNOTATION, "") in ready
