"""The agent: desired pods in, a converged node out.

``Kubelet.sync`` is one full, level-triggered pass in the caller's thread: one runtime snapshot,
the probes that are due, plan + execute every pod that needs it, deletion of pods no longer
desired (once every source has reported), housekeeping when due. ``start`` runs the same pass in
a background loop (relist every ``relist_interval``, wake at once on runtime events) with pods
synced by the pod workers.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs

from kubecore._actions import ObservedPod, PodActions, PodHistory
from kubecore._admission import Admission, Rejection
from kubecore._backoff import in_backoff
from kubecore._clock import Clock, SystemClock
from kubecore._credentials import Keyring
from kubecore._errors import ContainerNotFound, ContainerRuntimeError, NotFound
from kubecore._events import FanoutRecorder, LoggingRecorder, MemoryRecorder, pod_reference
from kubecore._executor import (
    Executor,
    PodRecord,
    SyncResult,
    TokenBucket,
    container_name_of,
    newest_sandbox,
    restart_count_of,
)
from kubecore._gc import (
    ContainerGCPolicy,
    ImageGC,
    ImageGCPolicy,
    plan_container_gc,
    run_container_gc,
)
from kubecore._health import DefaultHealthChecker
from kubecore._metrics import InstrumentedPuller, InstrumentedRuntime, Metrics
from kubecore._model import Pod, PodStatus
from kubecore._observed import container_age
from kubecore._planner import compute_pod_actions
from kubecore._podconfig import PodConfig
from kubecore._probes import ProbeJob, ProbeManager, has_probes
from kubecore._runtime import (
    NODE_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    ContainerRuntime,
    DNSConfig,
    Event,
    EventRecorder,
    EventType,
    ExecResult,
    HealthChecker,
    ProbeResult,
    Puller,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    SandboxState,
    Subscription,
)
from kubecore._status import compute_pod_status, pod_verdict, rfc3339
from kubecore._translate import ResolvConf, dns_config, parse_resolv_conf
from kubecore._updates import Operation, PodUpdate
from kubecore._volumes import VolumeManager
from kubecore._workers import PodWorkers

if TYPE_CHECKING:
    from kubecore._plugins import RuntimeBundle

logger = logging.getLogger(__name__)

_EMPTY = ObservedPod()
_NO_HISTORY = PodHistory()
_NO_PROBES: Mapping[str, Any] = _NO_HISTORY.probes
_DEATH_CONFIRM_WINDOW = 5.0
"""Seconds a reported death is re-checked: an engine may list a container as running for a
moment after its death event (Docker does)."""
_DEATH_RECHECK = 0.05


@attrs.frozen
class KubeletConfig:
    node_name: str = "kubecore-node"
    root_dir: str = "/var/lib/kubecore"
    resync_interval: float = 60.0
    relist_interval: float = 1.0
    housekeeping_interval: float = 2.0
    allow_privileged: bool = False
    cluster_dns: tuple[str, ...] = ()
    cluster_domain: str = "cluster.local"
    resolv_conf: str = "/etc/resolv.conf"
    sandbox_image: str = ""
    pull_qps: float = 5.0
    pull_burst: int = 10
    max_pods: int = 110
    workers: int = 8
    container_gc_interval: float = 60.0
    gc_max_dead_per_container: int = 1
    gc_min_age: float = 0.0
    image_gc_interval: float = 300.0
    image_gc_high: int = 85
    image_gc_low: int = 80
    image_min_age: float = 120.0
    max_events: int = 1000
    backoff_initial: float = 10.0
    """First CrashLoopBackOff / ImagePullBackOff delay in seconds; it doubles at each failure."""
    backoff_max: float = 300.0
    """The cap of those delays."""
    host_ip: str = ""


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
        return not (self.actions or self.errors or self.removed)


class _Work(NamedTuple):
    """One sync request for a pod worker (a named tuple: one is made per pod per pass)."""

    pod: Pod | None
    """None: the pod is no longer desired; kill and remove what it has."""
    observed: ObservedPod
    generation: int
    key: object = None
    """The snapshot's entry for the pod; unchanged next pass means nothing changed."""


@attrs.define(eq=False)
class _PodState:
    pod: Pod
    seq: int
    first_seen: float
    record: PodRecord = attrs.field(factory=PodRecord)
    synced_pod: Pod | None = None
    observed_key: object = None
    needs_generation: int = 0
    dirty: bool = True
    replan_at: float = math.inf
    status: PodStatus | None = None
    actions: PodActions | None = None
    start_reported: bool = False
    has_probes: bool = False
    probe_states: Mapping[str, object] = attrs.field(factory=dict)
    messages: dict[str, str] = attrs.field(factory=dict)
    """Termination messages by container id (read once: a dead container's file is final)."""


class _Entry:
    """One pod's part of a snapshot, and a cheap key that changes when anything that matters
    does (an object appears or goes, changes state, or a sandbox gets an IP)."""

    __slots__ = ("_observed", "containers", "key", "sandboxes")

    def __init__(self) -> None:
        self.sandboxes: list[RuntimeSandbox] = []
        self.containers: list[RuntimeContainer] = []
        self.key: list[object] = []
        self._observed: ObservedPod | None = None

    def observed(self) -> ObservedPod:
        # Made once: an entry outlives its pass when the next snapshot lists the same objects.
        observed = self._observed
        if observed is None:
            observed = self._observed = ObservedPod(tuple(self.sandboxes), tuple(self.containers))
        return observed


def _group(snapshot: RuntimeSnapshot) -> tuple[dict[str, _Entry], int, int]:
    """The snapshot by pod UID, with the number of ready sandboxes and running containers."""
    grouped: dict[str, _Entry] = {}
    get = grouped.get
    ready = running = 0
    READY = SandboxState.READY
    RUNNING = RuntimeState.RUNNING
    for s in snapshot.sandboxes:
        entry = get(s.uid)
        if entry is None:
            grouped[s.uid] = entry = _Entry()
        entry.sandboxes.append(s)
        state = s.state
        entry.key.append((s.id, state, s.ip))
        if state is READY:
            ready += 1
    for c in snapshot.containers:
        uid = c.labels.get(POD_UID_LABEL, "")
        entry = get(uid)
        if entry is None:
            grouped[uid] = entry = _Entry()
        entry.containers.append(c)
        cstate = c.state
        entry.key.append((c.id, cstate, c.exit_code))
        if cstate is RUNNING:
            running += 1
    return grouped, ready, running


@attrs.frozen
class _Grouped:
    """``_group`` of one snapshot, kept for the next pass: a runtime that lists the very same
    (immutable) tuples again changed nothing, and the grouping is reused as it is."""

    sandboxes: tuple[RuntimeSandbox, ...]
    containers: tuple[RuntimeContainer, ...]
    entries: dict[str, _Entry]
    ready: int
    running: int


def _group_again(snapshot: RuntimeSnapshot, last: _Grouped | None) -> _Grouped:
    if (
        last is not None
        and snapshot.sandboxes is last.sandboxes
        and snapshot.containers is last.containers
    ):
        return last
    grouped, ready, running = _group(snapshot)
    return _Grouped(snapshot.sandboxes, snapshot.containers, grouped, ready, running)


def _history(record: PodRecord, probes: Mapping[str, Any]) -> PodHistory:
    """What the planner and the status need to know of the past (shared when empty)."""
    if not (probes or record.crash_backoff or record.image_backoff or record.post_start_failed):
        return _NO_HISTORY
    return PodHistory(
        crash_backoff=dict(record.crash_backoff) if record.crash_backoff else {},
        image_backoff=dict(record.image_backoff) if record.image_backoff else {},
        probes=probes,
        post_start_failed=frozenset(record.post_start_failed),
    )


def _observed(entry: _Entry | None) -> ObservedPod:
    return _EMPTY if entry is None else entry.observed()


def _read_resolv_conf(path: str) -> ResolvConf:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse_resolv_conf(f.read())
    except OSError as exc:
        logger.info("no host resolv.conf at %s (%s); using no host DNS", path, exc)
        return parse_resolv_conf("")


class Kubelet:
    def __init__(
        self,
        runtime: ContainerRuntime,
        puller: Puller,
        *,
        config: KubeletConfig | None = None,
        health_checker: HealthChecker | None = None,
        recorder: EventRecorder | None = None,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
        sources: Iterable[str] = (),
        pull_secrets: Mapping[tuple[str, str], Keyring] | None = None,
    ) -> None:
        self.config = config or KubeletConfig()
        self.clock: Clock = clock or SystemClock()
        self.metrics = metrics or Metrics()
        self.raw_runtime = runtime
        self.runtime = InstrumentedRuntime(runtime, self.metrics, self.clock)
        self.puller = InstrumentedPuller(puller, self.metrics, self.clock)
        self.events = MemoryRecorder(self.config.max_events)
        recorders: list[EventRecorder] = [self.events, LoggingRecorder()]
        if recorder is not None:
            recorders.append(recorder)
        self.recorder = FanoutRecorder(recorders)
        self.health_checker: HealthChecker = health_checker or DefaultHealthChecker(self.runtime)
        self.pod_config = PodConfig(sources)
        self.volumes = VolumeManager(self.config.root_dir, self.config.node_name)
        self.admission = Admission(
            max_pods=self.config.max_pods, allow_privileged=self.config.allow_privileged
        )
        self.probes = ProbeManager(self.health_checker, self.recorder)
        self.image_lock = threading.Lock()
        self.executor = Executor(
            self.runtime,
            self.puller,
            self.recorder,
            self.clock,
            self.volumes,
            self.health_checker,
            sandbox_image=self.config.sandbox_image,
            pull_limiter=TokenBucket(self.config.pull_qps, self.config.pull_burst, self.clock),
            image_lock=self.image_lock,
            pull_secrets=pull_secrets,
            backoff_initial=self.config.backoff_initial,
            backoff_max=self.config.backoff_max,
            node_name=self.config.node_name,
        )
        self.gc_policy = ContainerGCPolicy(
            self.config.gc_max_dead_per_container, self.config.gc_min_age
        )
        self.image_gc = ImageGC(
            self.puller,
            ImageGCPolicy(
                self.config.image_gc_high, self.config.image_gc_low, self.config.image_min_age
            ),
            self.image_lock,
        )
        self._host_dns = _read_resolv_conf(self.config.resolv_conf)
        self.workers: PodWorkers[_Work] = PodWorkers(
            self._sync_pod,
            max_workers=self.config.workers,
            on_replaced=lambda _uid: self.metrics.work_evictions.inc(),
        )
        self._worker_duration = {
            op: self.metrics.pod_worker_duration.labels(op) for op in ("create", "sync", "kill")
        }
        self._container_gauges = {
            state: self.metrics.running_containers.labels(state.value) for state in RuntimeState
        }
        self._lock = threading.RLock()
        self._pass_lock = threading.Lock()
        self._states: dict[str, _PodState] = {}
        self._rejected: dict[str, tuple[Pod, PodStatus]] = {}
        self._terminating: dict[str, Pod] = {}
        self._runtime_name_cache = ""
        self._seq = 0
        self._first_seen: dict[str, int] = {}
        self._config_generation = -1
        self._generation = 0
        self._snapshot = RuntimeSnapshot()
        self._grouped: dict[str, _Entry] = {}
        self._last_grouped: _Grouped | None = None
        self._results: list[tuple[str, str, SyncResult | None, str]] = []
        self._results_lock = threading.Lock()
        start = self.clock.monotonic()
        self._last_resync = start
        self._last_housekeeping = -math.inf
        self._last_container_gc = start
        self._last_image_gc = start
        self._last_pass = start
        self._wake = threading.Event()
        self._own_cache: (
            tuple[tuple[RuntimeSandbox, ...], tuple[RuntimeContainer, ...], RuntimeSnapshot] | None
        ) = None
        self._unconfirmed_deaths: dict[str, float] = {}
        """Container id -> when its death was reported, until a snapshot shows it dead."""
        self._pass_cond = threading.Condition()
        self._passes = 0
        self._quiet = False
        self._stop = threading.Event()
        self._workers_closed = False
        """``workers.shutdown`` was called (by ``stop``) and not undone by ``start``."""
        self._thread: threading.Thread | None = None
        self._subscription: Subscription | None = None
        self._probe_pool: ThreadPoolExecutor | None = None

    @classmethod
    def from_bundle(cls, bundle: RuntimeBundle, **kwargs: Any) -> Kubelet:
        """A Kubelet on a loaded runtime plugin (``kubecore.load_runtime``), on the bundle's
        clock (passing a different ``clock`` is a ``ValueError``)."""
        if bundle.health_checker is not None:
            kwargs.setdefault("health_checker", bundle.health_checker)
        kwargs["clock"] = bundle.agent_clock(kwargs.get("clock"))
        if not bundle.adopts:
            logger.warning("%s", bundle.restart_warning())
        return cls(bundle.runtime, bundle.puller, **kwargs)

    # --- desired state ----------------------------------------------------------------------

    def update(self, update: PodUpdate) -> None:
        """Apply a source's update (thread-safe). The source counts as registered from now on."""
        if self.pod_config.apply(update):
            self._wake.set()

    def register_source(self, source: str) -> None:
        """Declare a source that must report before pods missing from the view are deleted."""
        self.pod_config.register_source(source)

    def set_pods(self, pods: Iterable[Pod], source: str = "api") -> None:
        self.update(PodUpdate(Operation.SET, tuple(pods), source))

    def add_pod(self, pod: Pod, source: str = "api") -> None:
        self.update(PodUpdate(Operation.ADD, (pod,), source))

    def update_pod(self, pod: Pod, source: str = "api") -> None:
        self.update(PodUpdate(Operation.UPDATE, (pod,), source))

    def remove_pod(self, pod: Pod, source: str = "api") -> None:
        self.update(PodUpdate(Operation.REMOVE, (pod,), source))

    def sources_ready(self) -> bool:
        return self.pod_config.sources_ready()

    def _refresh_desired(self) -> None:
        generation = self.pod_config.generation
        if generation == self._config_generation:
            return
        self._config_generation = generation
        pods = list(self.pod_config.pods())
        now = self.clock.now()
        with self._lock:
            for pod in pods:
                if pod.uid not in self._first_seen:
                    self._first_seen[pod.uid] = self._seq
                    self._seq += 1
            present = {p.uid for p in pods}
            for uid in [u for u in self._first_seen if u not in present]:
                del self._first_seen[uid]
            pods.sort(key=lambda p: self._first_seen[p.uid])
            admitted, rejected = self.admission.admit(pods)
            for pod, rejection in rejected:
                self._reject(pod, rejection, now)
            self._rejected = {
                uid: (next(p for p in pods if p.uid == uid), status)
                for uid, (_, status) in self._rejected.items()
                if uid in present
            }
            states: dict[str, _PodState] = {}
            for pod in admitted:
                st = self._states.get(pod.uid)
                if st is None:
                    st = _PodState(pod, self._first_seen[pod.uid], now)
                elif st.pod is not pod:
                    st.pod = pod
                    st.dirty = True
                st.has_probes = has_probes(pod)
                states[pod.uid] = st
            for uid, old in self._states.items():
                if uid not in states:
                    self.probes.forget(uid)
                    # Kept until its containers are gone: preStop hooks and grace periods.
                    self._terminating[uid] = old.pod
            for uid in states:
                self._terminating.pop(uid, None)
            self._states = states

    def _reject(self, pod: Pod, rejection: Rejection, now: float) -> None:
        status = PodStatus(
            phase="Failed",
            reason=rejection.reason,
            message=rejection.message,
            start_time=rfc3339(now),
        )
        self._rejected[pod.uid] = (pod, status)
        meta = pod.metadata
        logger.warning(
            "rejected pod %s/%s: %s", meta.namespace, meta.name, rejection.message,
            extra={"pod": pod.full_name},
        )  # fmt: skip
        self.recorder.record(
            Event(
                pod_reference(meta.namespace, meta.name, meta.uid),
                EventType.WARNING,
                rejection.reason,
                rejection.message,
                now,
            )
        )

    # --- the sync pass ----------------------------------------------------------------------

    def sync(self) -> SyncReport:
        """One full pass in the caller's thread."""
        with self._pass_lock:
            return self._pass(inline=True)

    def sync_until_converged(self, *, max_syncs: int = 50, step: float = 1.0) -> bool:
        """Sync until a pass does nothing and no pod is still starting (every pod has left
        phase Pending, or waits in a failure such as CrashLoopBackOff); between passes advance
        a ManualClock by ``step`` (or wait ``step`` seconds on a real clock). True if that
        happened within ``max_syncs``."""
        for _ in range(max_syncs):
            if self.sync().converged and all(_settled(pod) for pod in self.pods()):
                return True
            self.clock.sleep(step)
        return False

    def _pass(self, *, inline: bool) -> SyncReport:
        started = self.clock.monotonic()
        self._refresh_desired()
        with self._results_lock:
            self._results = []
        self._generation += 1
        generation = self._generation
        try:
            snapshot = self.runtime.snapshot()
        except Exception as exc:
            if isinstance(exc, ContainerRuntimeError):
                logger.warning("runtime snapshot failed: %s", exc)
            else:
                logger.exception("runtime snapshot failed unexpectedly")
            return SyncReport(pods=len(self._states), errors={"runtime": f"snapshot: {exc}"})
        engine_snapshot = snapshot
        snapshot = self._own_objects(snapshot)
        regrouped = self._last_grouped = _group_again(snapshot, self._last_grouped)
        grouped = regrouped.entries
        ready_sandboxes, running_containers = regrouped.ready, regrouped.running
        now = self.clock.now()
        mono = self.clock.monotonic()
        if self._unconfirmed_deaths:
            self._confirm_deaths(snapshot, mono)
        self._snapshot = snapshot
        self._grouped = grouped
        resync = mono - self._last_resync >= self.config.resync_interval
        if resync:
            self._last_resync = mono
        with self._lock:
            states = list(self._states.values())
        probed = self._run_probes(states, grouped, now, inline=inline)

        # With no loop and no worker busy, nothing else can sync a pod during this inline pass:
        # the pod workers' bookkeeping (locks, busy set, wake-ups) is skipped.
        direct = (
            inline
            and self._thread is None
            and not self._workers_closed
            and self.workers.busy_count == 0
        )
        synced = 0
        for st in states:
            uid = st.pod.uid
            entry = grouped.get(uid)
            if (
                not resync
                and not st.dirty
                and st.synced_pod is st.pod
                and st.observed_key == (entry.key if entry is not None else None)
                and now < st.replan_at
                and uid not in probed
            ):
                continue
            synced += 1
            work = _Work(
                st.pod,
                _observed(entry),
                generation,
                entry.key if entry is not None else None,
            )
            if direct:
                self._sync_direct(uid, work)
            else:
                self.workers.dispatch(uid, work, inline=inline)

        removed: list[str] = []
        if self.pod_config.sources_ready():
            with self._lock:
                desired = set(self._states)
            for uid, entry in grouped.items():
                if uid in desired or not uid:
                    continue
                removed.append(uid)
                self.workers.dispatch(uid, _Work(None, _observed(entry), generation), inline=inline)

        with self._lock:
            for uid in [u for u in self._terminating if u not in grouped]:
                del self._terminating[uid]
        try:
            collected = self._housekeeping(snapshot, engine_snapshot, now, mono)
        except Exception:
            logger.exception("housekeeping failed")
            collected = 0
        self._update_gauges(snapshot, ready_sandboxes, running_containers)

        actions: dict[str, str] = {}
        errors: dict[str, str] = {}
        with self._results_lock:
            results, self._results = self._results, []
        for name, summary, _result, error in results:
            if summary:
                actions[name] = summary
            if error:
                errors[name] = error
        duration = max(0.0, self.clock.monotonic() - started)
        self.metrics.sync_duration.observe(duration)
        self._last_pass = self.clock.monotonic()
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

    def _run_probes(
        self,
        states: list[_PodState],
        grouped: Mapping[str, _Entry],
        now: float,
        *,
        inline: bool,
    ) -> set[str]:
        jobs: list[tuple[_PodState, ProbeJob]] = []
        for st in states:
            if not st.has_probes:
                continue
            entry = grouped.get(st.pod.uid)
            if entry is None:
                self.probes.forget(st.pod.uid)
                continue
            sandboxes, containers = entry.sandboxes, entry.containers
            running = [c for c in containers if c.state is RuntimeState.RUNNING]
            ready = [s for s in sandboxes if s.state is SandboxState.READY]
            pod_ip = newest_sandbox(ObservedPod(tuple(ready))).ip if ready else ""  # type: ignore[union-attr]
            jobs.extend((st, job) for job in self.probes.due(st.pod, running, pod_ip, now))
        if not jobs:
            return set()
        results: list[ProbeResult]
        if inline or len(jobs) == 1:
            results = [self.probes.run(job) for _, job in jobs]
        else:
            if self._probe_pool is None:
                self._probe_pool = ThreadPoolExecutor(
                    max_workers=self.config.workers, thread_name_prefix="kubecore-probe"
                )
            results = list(self._probe_pool.map(self.probes.run, [job for _, job in jobs]))
        changed: set[str] = set()
        for (st, job), result in zip(jobs, results, strict=True):
            self.metrics.probe_results.labels(job.kind, result.outcome.value).inc()
            if self.probes.record(st.pod, job, result, now):
                changed.add(st.pod.uid)
        return changed

    def _sync_direct(self, uid: str, work: _Work) -> None:
        """``_sync_pod`` in this thread, failing as a pod worker would (logged, not raised)."""
        try:
            self._sync_pod(uid, work)
        except Exception:
            logger.exception("pod worker for %s failed", uid)

    def _sync_pod(self, uid: str, work: _Work) -> None:
        monotonic = self.clock.monotonic
        started = monotonic()
        if work.pod is None:
            self._remove_orphan(uid, work)
            self._worker_duration["kill"].observe(max(0.0, monotonic() - started))
            return
        st = self._states.get(uid)  # replaced whole, never changed in place: no lock needed
        if st is None:
            return
        if work.generation < st.needs_generation:
            st.dirty = True  # the snapshot predates our own last actions; plan on a newer one
            return
        pod = work.pod
        now = self.clock.now()
        record = st.record
        probes = self.probes.states(uid) if st.has_probes else _NO_PROBES
        history = _history(record, probes)
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
                result = self.executor.execute(pod, actions, work.observed, record, self._dns(pod))
                error = result.error
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
        # Status is recomputed only when something it depends on may have changed.
        previous = st.actions
        unchanged = (
            not acted
            and not error
            and st.status is not None
            and st.synced_pod is pod
            and actions is not None
            and previous is not None
            and (actions is previous or actions.waiting == previous.waiting)
            and (st.probe_states is probes or st.probe_states == probes)
            and st.observed_key == work.key
        )
        if acted:
            st.needs_generation = self._generation + 1
            if not error and self._thread is not None:
                self._wake.set()  # look at the result soon, not at the next relist
        st.synced_pod = pod
        st.observed_key = work.key
        st.probe_states = probes
        st.dirty = acted or bool(error)
        st.actions = actions
        replan_at = self._replan_at(st, actions, now) if actions and actions.waiting else math.inf
        if replan_at < st.replan_at and self._thread is not None:
            self._wake.set()  # the loop recomputes how long it may sleep
        st.replan_at = replan_at
        if error:
            self.metrics.sync_errors.inc()
        if not unchanged:
            try:
                self._update_status(st, work.observed, actions, now)
            except Exception:
                logger.exception(
                    "status of pod %s could not be computed",
                    pod.full_name,
                    extra={"pod": pod.full_name},
                )
        if acted or error:
            summary = actions.summary() if acted and actions is not None else ""
            name = f"{pod.metadata.namespace}/{pod.metadata.name}"
            with self._results_lock:
                self._results.append((name, summary, result, error))
        status = st.status
        op = "create" if status is None or status.phase == "Pending" else "sync"
        self._worker_duration[op].observe(max(0.0, monotonic() - started))

    @staticmethod
    def _replan_at(st: _PodState, actions: PodActions | None, now: float) -> float:
        when = math.inf
        if actions is None:
            return when
        for waiting in actions.waiting:
            for table in (st.record.crash_backoff, st.record.image_backoff):
                entry = table.get(waiting.name)
                if entry is not None and in_backoff(entry, now):
                    when = min(when, entry.until)
        return when

    def _runtime_name(self) -> str:
        if not self._runtime_name_cache:
            try:
                self._runtime_name_cache = self.runtime.version().runtime_name or "kubecore"
            except ContainerRuntimeError:
                return "kubecore"
        return self._runtime_name_cache

    def _dns(self, pod: Pod) -> DNSConfig | None:
        return dns_config(
            pod,
            cluster_dns=self.config.cluster_dns,
            cluster_domain=self.config.cluster_domain,
            host=self._host_dns,
        )

    def _termination_messages(self, st: _PodState, observed: ObservedPod) -> dict[str, str]:
        for c in observed.containers:
            if c.state is RuntimeState.EXITED and c.id not in st.messages:
                st.messages[c.id] = self.volumes.read_termination_message(
                    st.pod.uid, container_name_of(c), restart_count_of(c)
                )
        if len(st.messages) > len(observed.containers):
            ids = {c.id for c in observed.containers}
            st.messages = {k: v for k, v in st.messages.items() if k in ids}
        return {k: v for k, v in st.messages.items() if v}

    def _update_status(
        self, st: _PodState, observed: ObservedPod, actions: PodActions | None, now: float
    ) -> None:
        history = _history(st.record, self.probes.states(st.pod.uid))
        status = compute_pod_status(
            st.pod,
            observed,
            history,
            actions,
            now,
            previous=st.status,
            termination_messages=self._termination_messages(st, observed),
            runtime_name=self._runtime_name(),
            host_ip=self.config.host_ip,
        )
        st.status = status
        if (
            not st.start_reported
            and status.container_statuses
            and all(cs.state.running is not None for cs in status.container_statuses)
        ):
            st.start_reported = True
            self.metrics.pod_start_duration.observe(max(0.0, now - st.first_seen))

    def _remove_orphan(self, uid: str, work: _Work) -> None:
        with self._lock:
            if uid in self._states:
                return  # desired again since the pass saw it
        observed = work.observed
        label_source = observed.containers[0].labels if observed.containers else {}
        sandbox = observed.sandboxes[0] if observed.sandboxes else None
        namespace = label_source.get(POD_NAMESPACE_LABEL) or (sandbox.namespace if sandbox else "")
        pod_name = label_source.get(POD_NAME_LABEL) or (sandbox.name if sandbox else "")
        name = f"{namespace}/{pod_name}"
        error = ""
        with self._lock:
            spec = self._terminating.get(uid)
        try:
            self.executor.kill_pod(spec, observed)
            self.executor.remove_pod(observed)
            with self._lock:
                self._terminating.pop(uid, None)
        except ContainerRuntimeError as exc:
            error = f"removing pod no longer desired: {exc}"
            logger.warning("pod %s (%s): %s", name, uid, error, extra={"pod": name})
        except Exception as exc:
            error = f"unexpected error removing pod no longer desired: {exc!r}"
            logger.exception("removing pod %s (%s) failed", name, uid, extra={"pod": name})
        self.probes.forget(uid)
        if not error and self._thread is not None:
            self._wake.set()
        with self._results_lock:
            self._results.append(
                (name, "" if error else "kill and remove (no longer desired)", None, error)
            )

    def _own_objects(self, snapshot: RuntimeSnapshot) -> RuntimeSnapshot:
        """The snapshot without the objects another node (agent) made on a shared engine.
        Objects with no node label (made before kubecore labelled nodes) count as this node's.
        The filtered tuples are reused while the runtime lists the very same ones."""
        node = self.config.node_name
        last = self._own_cache
        if last is not None and last[0] is snapshot.sandboxes and last[1] is snapshot.containers:
            return attrs.evolve(last[2], taken_at=snapshot.taken_at)
        sandboxes = snapshot.sandboxes
        containers = snapshot.containers
        if any(s.labels.get(NODE_LABEL, node) != node for s in sandboxes) or any(
            c.labels.get(NODE_LABEL, node) != node for c in containers
        ):
            own = RuntimeSnapshot(
                tuple(s for s in sandboxes if s.labels.get(NODE_LABEL, node) == node),
                tuple(c for c in containers if c.labels.get(NODE_LABEL, node) == node),
                snapshot.taken_at,
            )
        else:
            own = snapshot
        self._own_cache = (sandboxes, containers, own)
        return own

    def _housekeeping(
        self, snapshot: RuntimeSnapshot, engine_snapshot: RuntimeSnapshot, now: float, mono: float
    ) -> int:
        """``snapshot`` holds this node's objects; image GC looks at ``engine_snapshot``, since
        an image another node's containers use is in use."""
        collected = 0
        cfg = self.config
        with self._lock:
            desired = set(self._states)
        ready = self.pod_config.sources_ready()
        if mono - self._last_housekeeping >= cfg.housekeeping_interval and ready:
            self._last_housekeeping = mono
            keep = (
                desired
                | {s.uid for s in snapshot.sandboxes}
                | {c.labels.get(POD_UID_LABEL, "") for c in snapshot.containers}
            )
            try:
                self.volumes.cleanup_orphans(keep)
            except OSError as exc:
                logger.warning("orphaned volume cleanup failed: %s", exc)
        if mono - self._last_container_gc >= cfg.container_gc_interval:
            self._last_container_gc = mono
            plan = plan_container_gc(
                snapshot, desired if ready else desired | set(self._grouped), self.gc_policy, now
            )
            collected += run_container_gc(self.runtime, plan)
        if mono - self._last_image_gc >= cfg.image_gc_interval:
            self._last_image_gc = mono
            try:
                collected += len(self.image_gc.collect(engine_snapshot, now))
            except ContainerRuntimeError as exc:
                logger.warning("image GC failed: %s", exc)
            except Exception:
                logger.exception("image GC failed unexpectedly")
        return collected

    def _update_gauges(self, snapshot: RuntimeSnapshot, ready: int, running: int) -> None:
        self.metrics.running_pods.set(ready)
        gauges = self._container_gauges
        gauges[RuntimeState.RUNNING].set(running)
        if running == len(snapshot.containers):
            for state, gauge in gauges.items():
                if state is not RuntimeState.RUNNING:
                    gauge.set(0)
            return
        counts: dict[RuntimeState, int] = dict.fromkeys(RuntimeState, 0)
        for c in snapshot.containers:
            counts[c.state] += 1
        for state, count in counts.items():
            gauges[state].set(count)

    # --- background loop --------------------------------------------------------------------

    def start(self) -> None:
        """Run the sync loop in a background thread (relist, resync, runtime events)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self.workers.reopen()
        self._workers_closed = False
        try:
            self._subscription = self.runtime.watch_events(self._on_runtime_event)
        except ContainerRuntimeError as exc:
            logger.warning("no runtime event stream (%s); relying on relists", exc)
            self._subscription = None
        self._thread = threading.Thread(target=self._loop, name="kubecore-sync-loop", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop and drain the workers. Containers keep running."""
        self._stop.set()
        self._wake.set()
        if self._subscription is not None:
            try:
                self._subscription.close()
            except Exception:
                logger.exception("closing the runtime event subscription failed")
            self._subscription = None
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        self._workers_closed = True
        self.workers.shutdown(timeout)
        if self._probe_pool is not None:
            self._probe_pool.shutdown(wait=False, cancel_futures=True)
            self._probe_pool = None
        self.volumes.release()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            quiet = False
            try:
                with self._pass_lock:
                    report = self._pass(inline=False)
                quiet = report.synced == 0 and not report.removed_dispatched
            except Exception:
                logger.exception("sync loop pass failed")
            with self._pass_cond:
                self._passes += 1
                self._quiet = quiet and self.workers.busy_count == 0
                self._pass_cond.notify_all()
            if self._stop.is_set():
                break
            if self.clock.virtual:
                # Virtual time moves only when a test advances it: wait for a wake-up in real time.
                self._wake.wait(self.config.relist_interval)
            else:
                self.clock.wait(self._wake, self._next_pass_in())

    def _next_pass_in(self) -> float:
        """Seconds until the next pass: the relist interval, or sooner when a back-off ends
        (a container waiting in CrashLoopBackOff restarts on time even with long relists) or
        a reported death is not yet visible in the snapshot."""
        with self._lock:
            if self._unconfirmed_deaths:
                return _DEATH_RECHECK
            replan_at = min((st.replan_at for st in self._states.values()), default=math.inf)
        return max(0.0, min(self.config.relist_interval, replan_at - self.clock.now()))

    def _on_runtime_event(self, event: RuntimeEvent) -> None:
        if event.type not in (RuntimeEventType.DIED, RuntimeEventType.OOM):
            return
        with self._lock:
            st = self._states.get(event.pod_uid)
            self._unconfirmed_deaths[event.container_id] = self.clock.monotonic()
        if st is not None:
            st.dirty = True
        self._wake.set()

    def _confirm_deaths(self, snapshot: RuntimeSnapshot, mono: float) -> None:
        running = {c.id for c in snapshot.containers if c.state is RuntimeState.RUNNING}
        with self._lock:
            for container_id, reported in list(self._unconfirmed_deaths.items()):
                if container_id not in running or mono - reported > _DEATH_CONFIRM_WINDOW:
                    del self._unconfirmed_deaths[container_id]

    def wake(self) -> None:
        """Ask the background loop for a pass now."""
        self._wake.set()

    def _passed(self, target: int) -> bool:
        return self._passes >= target

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """With the loop started: wait (real time, at most ``timeout``) for a pass that found
        nothing to do with no pod worker busy. True if that happened in time."""
        if not self.running:
            raise RuntimeError("the sync loop is not running (call start() first)")
        deadline = time.monotonic() + timeout
        with self._pass_cond:
            while True:
                target = self._passes + 1
                self._wake.set()
                left = deadline - time.monotonic()
                if left <= 0 or not self._pass_cond.wait_for(
                    functools.partial(self._passed, target), timeout=left
                ):
                    return False
                if self._quiet and self.workers.busy_count == 0:
                    return True
                self._pass_cond.release()
                try:
                    self.workers.wait_idle(max(0.0, deadline - time.monotonic()))
                finally:
                    self._pass_cond.acquire()

    # --- reading --------------------------------------------------------------------------------

    def pods(self) -> list[Pod]:
        """Desired pods (in first-seen order) with their status filled in."""
        self._refresh_desired()
        with self._lock:
            out: list[tuple[int, Pod]] = []
            for st in self._states.values():
                out.append((st.seq, attrs.evolve(st.pod, status=st.status or PodStatus())))
            for uid, (pod, status) in self._rejected.items():
                out.append((self._first_seen.get(uid, 0), attrs.evolve(pod, status=status)))
        out.sort(key=lambda item: item[0])
        return [pod for _, pod in out]

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        for pod in self.pods():
            if pod.metadata.namespace == namespace and pod.metadata.name == name:
                return pod
        return None

    def recent_events(self, limit: int | None = None) -> list[Event]:
        events = self.events.events()
        return events[-limit:] if limit else events

    def _find_container(
        self, namespace: str, pod_name: str, container: str, *, running: bool = False
    ) -> RuntimeContainer:
        pod = self.get_pod(namespace, pod_name)
        if pod is None:
            raise NotFound(f"pod {namespace}/{pod_name} is not on this node")
        snapshot = self.runtime.snapshot()
        candidates = [
            c
            for c in snapshot.containers
            if c.labels.get(POD_UID_LABEL) == pod.uid and container_name_of(c) == container
        ]
        if running:
            candidates = [c for c in candidates if c.state is RuntimeState.RUNNING]
        if not candidates:
            state = "running " if running else ""
            raise ContainerNotFound(
                f"pod {namespace}/{pod_name} has no {state}container named {container!r}"
            )
        return max(candidates, key=container_age)

    def container_logs(
        self,
        namespace: str,
        pod_name: str,
        container: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        """The newest container of that name's output (raises NotFound / ContainerNotFound)."""
        found = self._find_container(namespace, pod_name, container)
        return self.runtime.logs(found.id, tail=tail, follow=follow, timestamps=timestamps)

    def exec(
        self,
        namespace: str,
        pod_name: str,
        container: str,
        command: list[str],
        *,
        timeout: float = 10.0,
    ) -> ExecResult:
        found = self._find_container(namespace, pod_name, container, running=True)
        return self.runtime.exec_sync(found.id, list(command), timeout)

    def stats_summary(self) -> dict[str, Any]:
        """The kubelet's ``/stats/summary`` shape: the node and each pod with its containers."""
        now = self.clock.now()
        stats = {s.container_id: s for s in self.runtime.container_stats()}
        snapshot = self.runtime.snapshot()
        by_uid: dict[str, list[RuntimeContainer]] = {}
        for c in snapshot.containers:
            if c.state is RuntimeState.RUNNING:
                by_uid.setdefault(c.labels.get(POD_UID_LABEL, ""), []).append(c)
        pods_out: list[dict[str, Any]] = []
        node_cpu = node_ws = node_usage = 0
        for pod in self.pods():
            containers_out: list[dict[str, Any]] = []
            pod_cpu = pod_ws = pod_usage = 0
            for c in by_uid.get(pod.uid, []):
                s = stats.get(c.id)
                cpu = s.cpu_usage_nanos if s else None
                ws = s.memory_working_set_bytes if s else None
                usage = s.memory_usage_bytes if s else None
                ts = rfc3339(s.timestamp if s else now)
                pod_cpu += cpu or 0
                pod_ws += ws or 0
                pod_usage += usage or 0
                containers_out.append(
                    {
                        "name": container_name_of(c),
                        "startTime": rfc3339(c.started_at or c.created_at),
                        "cpu": {"time": ts, "usageCoreNanoSeconds": cpu},
                        "memory": {"time": ts, "workingSetBytes": ws, "usageBytes": usage},
                    }
                )
            node_cpu += pod_cpu
            node_ws += pod_ws
            node_usage += pod_usage
            status = pod.status or PodStatus()
            pods_out.append(
                {
                    "podRef": {
                        "name": pod.metadata.name,
                        "namespace": pod.metadata.namespace,
                        "uid": pod.uid,
                    },
                    "startTime": status.start_time,
                    "containers": containers_out,
                    "cpu": {"time": rfc3339(now), "usageCoreNanoSeconds": pod_cpu},
                    "memory": {
                        "time": rfc3339(now),
                        "workingSetBytes": pod_ws,
                        "usageBytes": pod_usage,
                    },
                }
            )
        return {
            "node": {
                "nodeName": self.config.node_name,
                "cpu": {"time": rfc3339(now), "usageCoreNanoSeconds": node_cpu},
                "memory": {
                    "time": rfc3339(now),
                    "workingSetBytes": node_ws,
                    "usageBytes": node_usage,
                },
            },
            "pods": pods_out,
        }

    def healthz(self) -> tuple[bool, str]:
        """(healthy, reason): the runtime answers, and the loop (when started) keeps passing."""
        try:
            self.runtime.version()
        except ContainerRuntimeError as exc:
            return False, f"container runtime is down: {exc}"
        except Exception as exc:
            return False, f"container runtime check failed: {exc!r}"
        if self._thread is not None:
            if not self._thread.is_alive():
                return False, "sync loop is not running"
            limit = max(10 * self.config.relist_interval, 2 * self.config.resync_interval)
            age = self.clock.monotonic() - self._last_pass
            if age > limit:
                return False, f"sync loop last passed {age:.0f}s ago"
        return True, "ok"

    def close(self) -> None:
        """Stop the loop (if started). Containers keep running."""
        self.stop()

    def __enter__(self) -> Kubelet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def root_dir(self) -> str:
        return os.path.abspath(self.config.root_dir)


def _settled(pod: Pod) -> bool:
    """Nothing more happens to this pod without a change from outside (or a back-off)."""
    if pod.status is None:
        return False
    return pod.status.phase != "Pending" or pod_verdict(pod)[0] == "failed"
