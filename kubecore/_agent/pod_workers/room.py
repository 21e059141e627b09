"""The pod workers' room: what one worker does for one pod, and the state only it changes.

A desired pod is *syncing*: each sync plans it on an observed snapshot (``compute_pod_actions``
with its history and the prober's results), carries the plan out and publishes its status. A pod
no longer desired is *terminating* (its spec kept for preStop hooks and its grace period, which can
only shorten) until its containers and sandboxes are removed, then *terminated*. ``PodWorkers``
guarantees one sync per pod at a time, so a ``PodState`` needs no lock: the pass only reads it to
decide whether a pod needs a sync, and other threads post messages instead of writing to it.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, Protocol

import attrs

from kubecore._agent.termination import Termination, kill_within
from kubecore._contract.errors import ContainerRuntimeError
from kubecore._contract.labels import POD_NAME_LABEL, POD_NAMESPACE_LABEL
from kubecore._contract.observed import ObservedPod
from kubecore._contract.values import DNSConfig
from kubecore._kuberuntime.containers import resource_updater
from kubecore._kuberuntime.execute import Executor, SyncResult
from kubecore._kuberuntime.pod_record import PodRecord
from kubecore._model.v1 import Pod
from kubecore._observability.metrics import Metrics
from kubecore._planner.actions import PodActions, PodHistory
from kubecore._planner.backoff import in_backoff
from kubecore._planner.plan import compute_pod_actions
from kubecore._planner.terminal import deadline_at
from kubecore._prober.manager import ProbeManager
from kubecore._status.manager import PodStatusRecord, StatusManager
from kubecore._util.clock import Clock
from kubecore._util.timefmt import parse_time

logger = logging.getLogger(__name__)

NO_HISTORY = PodHistory()
_NO_PROBES: Mapping[str, Any] = NO_HISTORY.probes


class Work(NamedTuple):
    """One sync request for a pod worker (a named tuple: one is made per pod per pass)."""

    pod: Pod | None
    """None: the pod is no longer desired; kill and remove what it has."""
    observed: ObservedPod
    generation: int
    key: object = None
    """The snapshot's entry for the pod; unchanged next pass means nothing changed."""
    termination: Termination | None = None
    """For a pod no longer desired: its spec and grace (None: a pod the agent never knew)."""


class Repeat(NamedTuple):
    """The inputs of a sync that planned the no-op with nothing waiting, acted on nothing, failed
    in nothing and left the published status as it was, with the empty history. The planner is
    pure and reads ``now`` only for back-offs and deadlines, which that history has none of:
    the same pod, the same observed objects (identity) and the same (still empty) record plan
    the same no-op again, and the status depends on nothing that changed."""

    pod: Pod
    observed: ObservedPod
    record: PodRecord


@attrs.define(eq=False)
class PodState:
    """A desired pod as its worker knows it. ``pod`` and ``has_probes`` describe the newest
    desired version (set by the config side, a message slot the pass reads: a pod whose
    ``synced_pod`` is not its ``pod`` is synced); every other field is written only by the
    pod's worker."""

    pod: Pod
    seq: int
    first_seen: float
    has_probes: bool = False
    record: PodRecord = attrs.field(factory=PodRecord)
    synced_pod: Pod | None = None
    observed_key: object = None
    needs_generation: int = 0
    dirty: bool = True
    replan_at: float = math.inf
    actions: PodActions | None = None
    probe_states: Mapping[str, object] = attrs.field(factory=dict)
    repeat: Repeat | None = None
    """The last sync's inputs when planning them again can only give its no-op (see
    ``Repeat``); None otherwise."""
    published: PodStatusRecord = attrs.field(init=False)

    @published.default
    def _published(self) -> PodStatusRecord:
        return PodStatusRecord(self.first_seen)


class DesiredStates(Protocol):
    """What a worker reads of the desired pods (``kubecore._agent.desired.DesiredPods``, which
    builds
    the states and so depends on this room, not the other way round)."""

    @property
    def states(self) -> Mapping[str, PodState]:
        """Admitted pods by UID; replaced whole, never changed in place."""
        ...


def history_of(
    record: PodRecord,
    probes: Mapping[str, Any],
    active_since: float | None = None,
    *,
    resize_in_place: bool = False,
    interrupted: frozenset[str] = frozenset(),
) -> PodHistory:
    """What the planner and the status need to know of the past (shared when empty)."""
    if not (
        interrupted
        or probes
        or record.crash_backoff
        or record.image_backoff
        or record.post_start_failed
        or record.resized
        or active_since is not None
        or resize_in_place
    ):
        return NO_HISTORY
    return PodHistory(
        crash_backoff=dict(record.crash_backoff) if record.crash_backoff else {},
        image_backoff=dict(record.image_backoff) if record.image_backoff else {},
        probes=probes,
        post_start_failed=frozenset(record.post_start_failed),
        resized=dict(record.resized) if record.resized else {},
        resize_in_place=resize_in_place,
        active_since=active_since,
        interrupted_starts=interrupted,
    )


def _forget_gone(by_container: dict[str, str], observed: ObservedPod) -> None:
    """Drop the entries of containers no longer on the runtime."""
    present = {c.id for c in observed.containers}
    for container_id in [k for k in by_container if k not in present]:
        del by_container[container_id]


def has_resize_policy(pod: Pod) -> bool:
    spec = pod.spec
    return any(c.resize_policy for c in (*spec.init_containers, *spec.containers))


def active_since(st: PodState) -> float | None:
    """When the pod became active, for a pod with an ``activeDeadlineSeconds`` (else None): its
    published start time, else when the agent first took it."""
    if st.pod.spec.active_deadline_seconds is None:
        return None
    status = st.published.status
    started = parse_time(status.start_time) if status is not None else None
    return started if started is not None else st.first_seen


def replan_at(record: PodRecord, actions: PodActions | None, now: float) -> float:
    """When a pod waiting in a back-off must be planned again (inf: not waiting)."""
    when = math.inf
    if actions is None:
        return when
    for waiting in actions.waiting:
        for table in (record.crash_backoff, record.image_backoff):
            entry = table.get(waiting.name)
            if entry is not None and in_backoff(entry, now):
                when = min(when, entry.until)
    return when


class Outcome(NamedTuple):
    """A sync's line in the pass's report."""

    name: str
    summary: str
    error: str


class _Acted(NamedTuple):
    """What a sync's plan was and what carrying it out did."""

    actions: PodActions | None
    result: SyncResult | None
    error: str
    acted: bool


def _status_unchanged(
    st: PodState, pod: Pod, work: Work, probes: Mapping[str, Any], done: _Acted
) -> bool:
    """Nothing the pod's status depends on may have changed since it was published."""
    actions, previous = done.actions, st.actions
    return (
        not done.acted
        and not done.error
        and st.published.status is not None
        and st.synced_pod is pod
        and actions is not None
        and previous is not None
        and (actions is previous or actions.waiting == previous.waiting)
        and (st.probe_states is probes or st.probe_states == probes)
        and st.observed_key == work.key
    )


def _settled(st: PodState) -> bool:
    """After a sync: nothing to redo, nothing waiting, nothing probed."""
    actions = st.actions
    return (
        not st.dirty
        and not st.has_probes
        and actions is not None
        and not actions.waiting
        and st.replan_at == math.inf
    )


def _op(st: PodState, *, updated: bool) -> str:
    """The sync's ``pod_worker_duration_seconds`` operation."""
    if updated:
        return "update"
    status = st.published.status
    return "create" if status is None or status.phase == "Pending" else "sync"


def _outcome(pod: Pod, done: _Acted) -> Outcome:
    """The sync's line in the pass's report."""
    actions, result = done.actions, done.result
    summary = actions.summary() if done.acted and actions is not None else ""
    if result is not None and result.preempted:
        summary = f"stopped before {result.preempted} (no longer desired)"
    return Outcome(f"{pod.metadata.namespace}/{pod.metadata.name}", summary, done.error)


class PodSyncer:
    """The work of one pod worker; shared by all of them (its fields are read-only)."""

    def __init__(
        self,
        *,
        clock: Clock,
        executor: Executor,
        probes: ProbeManager,
        status: StatusManager,
        metrics: Metrics,
        dns: Callable[[Pod], DNSConfig | None],
        desired: DesiredStates,
        generation: Callable[[], int],
        report: Callable[[Outcome], None],
        wake: Callable[[], None],
        published: Callable[[Iterable[str]], None] = lambda _uids: None,
    ) -> None:
        self._clock = clock
        self._executor = executor
        self._resizes_in_place = resource_updater(executor.runtime) is not None
        self._probes = probes
        self._status = status
        self._metrics = metrics
        self._dns = dns
        self._desired = desired
        self._generation = generation
        self._report = report
        self._wake = wake
        self._published = published
        self._duration = {
            op: metrics.pod_worker_duration.labels(op)
            for op in ("create", "update", "sync", "kill")
        }

    def __call__(self, uid: str, work: Work) -> None:
        if work.pod is None:
            started = self._clock.monotonic()
            self.terminate(uid, work)
            self._duration["kill"].observe(max(0.0, self._clock.monotonic() - started))
        else:
            self.sync(uid, work)

    def sync(self, uid: str, work: Work) -> None:
        """Plan a desired pod on the observed snapshot, carry the plan out, publish its status."""
        monotonic = self._clock.monotonic
        started = monotonic()
        st = self._desired.states.get(uid)  # replaced whole, never changed in place
        if st is None:
            return
        if work.generation < st.needs_generation:
            st.dirty = True  # the snapshot predates our own last actions; plan on a newer one
            return
        pod = work.pod
        assert pod is not None
        repeat = st.repeat
        if (
            repeat is not None
            and repeat.pod is pod
            and repeat.observed is work.observed
            and self._repeats(st, repeat)
        ):
            st.observed_key = work.key
            self._duration[_op(st, updated=False)].observe(max(0.0, monotonic() - started))
            return
        now = self._clock.now()
        record = st.record
        if record.resized:
            _forget_gone(record.resized, work.observed)
        updated = st.synced_pod is not None and st.synced_pod is not pod
        if not record.worker_started:
            record.worker_started = True
            self._metrics.pod_worker_start_duration.observe(max(0.0, now - st.first_seen))
        was_started = st.published.start_reported
        probes = self._probes.states(uid) if st.has_probes else _NO_PROBES
        history = self.history(uid, st, probes)
        done = self._act(uid, st, pod, work, history, now)
        record = st.record  # the executor's, when it acted
        # Status is recomputed only when something it depends on may have changed.
        unchanged = _status_unchanged(st, pod, work, probes, done)
        self._remember(st, pod, work, probes, done, history, now)
        if done.error:
            self._metrics.sync_errors.inc()
        if not unchanged:
            self._publish(uid, st, pod, work, history, done.actions, now)
            self._published((uid,))
        if st.published.start_reported and not was_started:
            # The kubelet's SLI leaves image pulls out of a pod's start.
            started_in = max(0.0, now - st.first_seen - record.pull_seconds)
            self._metrics.pod_start_sli_duration.observe(started_in)
        if done.acted or done.error:
            self._report(_outcome(pod, done))
        st.repeat = (
            Repeat(pod, work.observed, record)
            if unchanged and history is NO_HISTORY and _settled(st)
            else None
        )
        self._duration[_op(st, updated=updated)].observe(max(0.0, monotonic() - started))

    def _repeats(self, st: PodState, repeat: Repeat) -> bool:
        """Whether a sync of ``repeat``'s pod on its observation plans and publishes what the
        last one did (the caller checked the pod and the observation): the history is still
        empty, nothing dirtied the pod, no back-off or deadline waits."""
        record = st.record
        return (
            record is repeat.record
            and not st.dirty
            and st.synced_pod is repeat.pod
            and st.replan_at == math.inf
            and not st.has_probes
            and not (
                record.crash_backoff
                or record.image_backoff
                or record.post_start_failed
                or record.resized
            )
            and not self._interrupted()
        )

    def history(
        self, uid: str, st: PodState, probes: Mapping[str, Any] | None = None
    ) -> PodHistory:
        """What the planner is given of the pod's past at its next sync (read only: a plan
        reads it too): its back-offs, probe results (``probes``, else the prober's now), when
        it became active, the starts an earlier agent left interrupted."""
        if probes is None:
            probes = self._probes.states(uid) if st.has_probes else _NO_PROBES
        in_place = self._resizes_in_place and has_resize_policy(st.pod)
        return history_of(
            st.record,
            probes,
            active_since(st),
            resize_in_place=in_place,
            interrupted=self._interrupted(),
        )

    def _interrupted(self) -> frozenset[str]:
        journal = self._executor.containers.journal
        return journal.interrupted if journal is not None else frozenset()

    def _act(
        self, uid: str, st: PodState, pod: Pod, work: Work, history: PodHistory, now: float
    ) -> _Acted:
        """Plan the pod and carry the plan out (an unexpected error is logged, not raised)."""
        result: SyncResult | None = None
        error = ""
        actions: PodActions | None = None
        acted = False
        try:
            actions = compute_pod_actions(pod, work.observed, history, now)
            acted = not actions.is_noop
            if acted or actions.waiting:
                if acted:
                    logger.info(
                        "pod %s/%s: %s",
                        pod.metadata.namespace,
                        pod.metadata.name,
                        actions.summary(),
                        extra={"pod": pod.full_name},
                    )
                result = self._executor.execute(
                    pod,
                    actions,
                    work.observed,
                    st.record,
                    self._dns(pod),
                    current=functools.partial(self._still_desired, uid, st),
                )
                st.record = result.record
                error = result.error
                if result.preempted:
                    logger.info(
                        "pod %s/%s: sync stopped before %s (%d started): no longer desired",
                        pod.metadata.namespace,
                        pod.metadata.name,
                        result.preempted,
                        len(result.started),
                        extra={"pod": pod.full_name},
                    )
                if result.failure is not None:
                    actions = attrs.evolve(actions, waiting=(*actions.waiting, result.failure))
        except Exception as exc:
            logger.exception(
                "sync of pod %s/%s failed",
                pod.metadata.namespace,
                pod.metadata.name,
                extra={"pod": pod.full_name},
            )
            error = f"unexpected error: {exc!r}"
        return _Acted(actions, result, error, acted)

    def _remember(
        self,
        st: PodState,
        pod: Pod,
        work: Work,
        probes: Mapping[str, Any],
        done: _Acted,
        history: PodHistory,
        now: float,
    ) -> None:
        """What the pass reads next time: whether the pod needs a sync, and when to replan it
        (the loop is woken when that is sooner, or when actions were taken)."""
        actions = done.actions
        if done.acted:
            st.needs_generation = self._generation() + 1
            if not done.error:
                self._wake()  # look at the result soon, not at the next relist
        st.synced_pod = pod
        st.observed_key = work.key
        st.probe_states = probes
        st.dirty = done.acted or bool(done.error)
        st.actions = actions
        when = replan_at(st.record, actions, now) if actions and actions.waiting else math.inf
        deadline = deadline_at(pod, history)
        if deadline is not None and now < deadline:
            when = min(when, deadline)
        if when < st.replan_at:
            self._wake()  # the loop recomputes how long it may sleep
        st.replan_at = when

    def _publish(
        self,
        uid: str,
        st: PodState,
        pod: Pod,
        work: Work,
        planned: PodHistory,
        actions: PodActions | None,
        now: float,
    ) -> None:
        """The pod's status computed again, with the newest probe results, and published (a
        failure is logged). ``planned`` is the history the sync planned with; it stands for
        the status too unless the sync or the probes changed it since."""
        try:
            history = self._history_now(uid, st, planned)
            self._status.update(st.published, pod, work.observed, history, actions, now)
        except Exception:
            logger.exception(
                "status of pod %s could not be computed",
                pod.full_name,
                extra={"pod": pod.full_name},
            )

    def _history_now(self, uid: str, st: PodState, planned: PodHistory) -> PodHistory:
        """The pod's history after its sync: ``planned`` itself when neither the executor's
        record, the probe results nor the interrupted starts differ from what it was made
        of, else made again."""
        probes = self._probes.states(uid)
        interrupted = self._interrupted()
        record = st.record
        if (
            (probes is planned.probes or probes == planned.probes)
            and interrupted == planned.interrupted_starts
            and record.crash_backoff == planned.crash_backoff
            and record.image_backoff == planned.image_backoff
            and record.post_start_failed == planned.post_start_failed
            and record.resized == planned.resized
        ):
            return planned
        return history_of(
            record,
            probes,
            planned.active_since,
            resize_in_place=planned.resize_in_place,
            interrupted=interrupted,
        )

    def _still_desired(self, uid: str, st: PodState) -> bool:
        """The work for ``st`` is still current: the pod has not left the desired pods (a delete,
        or an eviction, seen by a pass since the sync began)."""
        return self._desired.states.get(uid) is st

    def terminate(self, uid: str, work: Work) -> None:
        """Kill and remove a pod no longer desired, within its (possibly shortened) grace."""
        if uid in self._desired.states:
            return  # desired again since the pass saw it
        observed = work.observed
        termination = work.termination
        label_source = observed.containers[0].labels if observed.containers else {}
        sandbox = observed.sandboxes[0] if observed.sandboxes else None
        namespace = label_source.get(POD_NAMESPACE_LABEL) or (sandbox.namespace if sandbox else "")
        pod_name = label_source.get(POD_NAME_LABEL) or (sandbox.name if sandbox else "")
        name = f"{namespace}/{pod_name}"
        error = ""
        try:
            if termination is not None:
                termination.begin(self._clock.monotonic())
                kill_within(self._executor, self._clock, termination, observed)
            else:
                self._executor.kill_pod(None, observed)
            self._executor.remove_pod(observed)
            if termination is not None:
                termination.finish()
        except ContainerRuntimeError as exc:
            error = f"removing pod no longer desired: {exc}"
            logger.warning("pod %s (%s): %s", name, uid, error, extra={"pod": name})
        except Exception as exc:
            error = f"unexpected error removing pod no longer desired: {exc!r}"
            logger.exception("removing pod %s (%s) failed", name, uid, extra={"pod": name})
        self._probes.forget(uid)
        if not error:
            self._wake()
        self._report(Outcome(name, "" if error else "kill and remove (no longer desired)", error))
