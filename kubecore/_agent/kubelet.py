"""The agent: desired pods in, a converged node out. ``Kubelet`` wires small rooms together.

``Kubelet.sync`` is one full, level-triggered pass in the caller's thread: the desired pods
refreshed from the sources (``_desired``), one runtime snapshot (``_snapshot``: this node's
objects by pod), the probes that are due (``_prober``), plan + execute every pod that needs it
(``_pod_workers``: one worker per pod owns its state), termination of pods no longer desired
(``_termination``, once every source has reported), housekeeping when due (``_housekeeping``).
``start`` runs the same pass in a background loop (relist every ``relist_interval``, wake at once
on runtime events) with pods synced by the pod workers and probes run off the sync path. Status
lives in ``_status_manager``, the ``/stats/summary`` document in ``_stats``.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from kubecore._agent.admission.node_fit import node_labels, parse_node_labels
from kubecore._agent.admission.security import Admission
from kubecore._agent.config_bounds import config_problems
from kubecore._agent.desired import DesiredPods, PodReport
from kubecore._agent.node_lease import NodeNameGuard
from kubecore._agent.outage import Outage
from kubecore._agent.pod_workers.queue import Inbox, PodWorkers
from kubecore._agent.pod_workers.room import Outcome, PodState, PodSyncer, Work
from kubecore._agent.snapshot import NodeGauges, NodeView, PodEntry, observed_of
from kubecore._agent.termination import PodLifecycle, Termination, Terminations
from kubecore._config.objects import ObjectStore
from kubecore._config.podconfig import PodConfig
from kubecore._config.updates import SOURCE_ANNOTATION, Operation, PodUpdate, is_static
from kubecore._contract.errors import (
    ContainerNotFound,
    ContainerRuntimeError,
    InvalidKubeletConfig,
    NotFound,
)
from kubecore._contract.observed import container_age
from kubecore._contract.observed import container_name as container_name_of
from kubecore._contract.runtime import (
    POD_UID_LABEL,
    ContainerRuntime,
    DNSConfig,
    Event,
    EventRecorder,
    ExecResult,
    HealthChecker,
    Puller,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeSnapshot,
    RuntimeState,
    Subscription,
    owned_by,
)
from kubecore._housekeeping.gc import ContainerGCPolicy, ImageGC, ImageGCPolicy
from kubecore._housekeeping.timers import Housekeeping
from kubecore._kuberuntime.credentials import Keyring
from kubecore._kuberuntime.env import NodeInfo, host_capacity
from kubecore._kuberuntime.execute import Executor
from kubecore._kuberuntime.kill import run_at_once, stop_within
from kubecore._kuberuntime.security import detect_host_security
from kubecore._kuberuntime.translate import ResolvConf, dns_config, parse_resolv_conf
from kubecore._model.v1 import Pod
from kubecore._observability.events import FanoutRecorder, LoggingRecorder, MemoryRecorder
from kubecore._observability.instrumented import InstrumentedPuller, instrument_runtime
from kubecore._observability.logs import LogOptions, limited, log_container_id
from kubecore._observability.metrics import Metrics
from kubecore._observability.stats import StatsProvider
from kubecore._prober.health import DefaultHealthChecker
from kubecore._prober.manager import ProbeManager
from kubecore._prober.runner import Prober
from kubecore._status.compute import pod_settled
from kubecore._status.manager import StatusManager
from kubecore._util.clock import Clock, SystemClock
from kubecore._util.ratelimit import TokenBucket
from kubecore._volumes.pod_dirs import VolumeManager

if TYPE_CHECKING:
    from kubecore._plugins.registry import RuntimeBundle

logger = logging.getLogger(__name__)

_DEATH_CONFIRM_WINDOW = 5.0
"""Seconds a reported death is re-checked: an engine may list a container as running for a
moment after its death event (Docker does)."""
_DEATH_RECHECK = 0.05
_SYNC_LOOP_MIN_THRESHOLD = 300.0
"""The kubelet's ``syncloop`` health check allows twice the resync interval, at least 5 min."""


@attrs.frozen
class KubeletConfig:
    node_name: str = "kubecore-node"
    root_dir: str = "/var/lib/kubecore"
    resync_interval: float = 60.0
    relist_interval: float = 1.0
    housekeeping_interval: float = 2.0
    allow_privileged: bool = False
    allowed_unsafe_sysctls: tuple[str, ...] = ()
    """Sysctls outside the safe set that pods may set (``name`` or ``prefix*``), if namespaced."""
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
    pvc_dir: str = ""
    """A persistentVolumeClaim volume mounts ``<pvc_dir>/<namespace>/<claimName>`` (which must
    exist); empty: such pods are refused at admission, there being no API server to bind
    claims."""
    node_labels: tuple[str, ...] = ()
    """``key=value`` labels of the node (each entry may hold several, comma separated), beside
    the well-known ``kubernetes.io/hostname``, ``/os`` and ``/arch`` it always has."""

    def __attrs_post_init__(self) -> None:
        problems = config_problems(attrs.fields(type(self)), self)
        if problems:
            raise InvalidKubeletConfig(problems)

    def labels(self) -> dict[str, str]:
        """The node's labels: the well-known ones, then ``node_labels`` (which may override)."""
        return node_labels(self.node_name, parse_node_labels(self.node_labels))


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


def _read_resolv_conf(path: str) -> ResolvConf:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse_resolv_conf(f.read())
    except OSError as exc:
        logger.info(
            "no host resolv.conf at %s (%s); using no host DNS",
            path,
            exc.strerror or type(exc).__name__,
        )
        return parse_resolv_conf("")


class Kubelet:
    """The agent, wiring its rooms: ``desired`` (sources admitted), ``node_view`` (what the
    runtime shows, by pod), ``workers`` (one sync per pod at a time; a pod's state is changed
    only by its worker, others post to ``inbox``), ``prober`` and ``probes`` (schedule and
    results), ``terminations`` (grace periods that only shorten), ``status_manager`` and
    ``housekeeping``."""

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
        self.config = cfg = config or KubeletConfig()
        self.clock: Clock = clock or SystemClock()
        self.metrics = metrics or Metrics()
        self.metrics.set_node_name(cfg.node_name)
        self.runtime = instrument_runtime(runtime, self.metrics, self.clock)
        self.puller = InstrumentedPuller(puller, self.metrics, self.clock)
        self.events = MemoryRecorder(cfg.max_events)
        recorders: list[EventRecorder] = [self.events, LoggingRecorder()]
        if recorder is not None:
            recorders.append(recorder)
        self.recorder = FanoutRecorder(recorders)
        self.health_checker: HealthChecker = health_checker or DefaultHealthChecker(self.runtime)
        self.pod_config = PodConfig(sources)
        self.objects = ObjectStore()
        """The ConfigMaps and Secrets from every source (``get_config_map``, ``get_secret``)."""
        self.volumes = VolumeManager(
            cfg.root_dir, cfg.node_name, objects=self.objects, pvc_dir=cfg.pvc_dir
        )
        self.volumes.acquire()  # RootDirInUse now, not at the first pod
        self.admission = Admission(
            max_pods=cfg.max_pods,
            allow_privileged=cfg.allow_privileged,
            claims_served=bool(cfg.pvc_dir),
            node_name=cfg.node_name,
            labels=cfg.labels(),
            host_security=detect_host_security(),
            allowed_unsafe_sysctls=cfg.allowed_unsafe_sysctls,
        )
        self.image_lock = threading.Lock()
        self.executor = Executor(
            self.runtime,
            self.puller,
            self.recorder,
            self.clock,
            self.volumes,
            self.health_checker,
            sandbox_image=cfg.sandbox_image,
            pull_limiter=TokenBucket(cfg.pull_qps, cfg.pull_burst, self.clock),
            image_lock=self.image_lock,
            pull_secrets=pull_secrets,
            backoff_initial=cfg.backoff_initial,
            backoff_max=cfg.backoff_max,
            node_name=cfg.node_name,
            cluster_domain=cfg.cluster_domain,
            objects=self.objects,
            node=NodeInfo(cfg.node_name, cfg.host_ip, host_capacity(cfg.root_dir)),
            metrics=self.metrics,
        )
        self.objects.subscribe(lambda: self._wake.set())
        self._objects_revision = self.objects.revision
        self.gc_policy = ContainerGCPolicy(cfg.gc_max_dead_per_container, cfg.gc_min_age)
        self.image_gc = ImageGC(
            self.puller,
            ImageGCPolicy(cfg.image_gc_high, cfg.image_gc_low, cfg.image_min_age),
            self.image_lock,
        )
        self._host_dns = _read_resolv_conf(cfg.resolv_conf)
        start = self.clock.monotonic()

        # The rooms.
        self.node_view = NodeView(cfg.node_name)
        self.node_guard = NodeNameGuard(
            self.runtime, cfg.node_name, self.clock, on_lost=lambda _lease: self._halt()
        )
        """The agent's lease on its node name on the engine, while started."""
        self.inbox = Inbox()
        self.probes = ProbeManager(self.health_checker, self.recorder)
        self.prober = Prober(
            self.probes,
            self.metrics,
            now=self.clock.now,
            max_workers=cfg.workers,
            on_change=self._post,
            monotonic=self.clock.monotonic,
            host_ip=cfg.host_ip,
        )
        self.status_manager = StatusManager(
            self.runtime, self.volumes, self.recorder, self.metrics, host_ip=cfg.host_ip
        )
        self.terminations = Terminations()
        self.housekeeping = Housekeeping(
            self.runtime,
            self.volumes,
            self.image_gc,
            self.gc_policy,
            housekeeping_interval=cfg.housekeeping_interval,
            container_gc_interval=cfg.container_gc_interval,
            image_gc_interval=cfg.image_gc_interval,
            start=start,
        )
        self._gauges = NodeGauges(self.metrics)
        self.stats = StatsProvider(
            self.runtime,
            node_name=cfg.node_name,
            root_dir=cfg.root_dir,
            pod_dir=self.volumes.pod_dir,
            image_fs=self.puller.image_fs_usage,
        )
        self.metrics.attach_resource_source(self._resource_summary)
        self.desired = DesiredPods(
            self.admission,
            self.status_manager,
            on_leave=self._leave,
            on_desired=self._desired_again,
            node_name=cfg.node_name,
        )
        self._syncer = PodSyncer(
            clock=self.clock,
            executor=self.executor,
            probes=self.probes,
            status=self.status_manager,
            metrics=self.metrics,
            dns=self._dns,
            desired=self.desired,
            generation=self._current_generation,
            report=self._report,
            wake=self._wake_loop,
        )
        self.workers: PodWorkers[Work] = PodWorkers(
            self._syncer,
            max_workers=cfg.workers,
            on_replaced=lambda _uid: self.metrics.work_evictions.inc(),
        )

        self._lock = threading.Lock()
        self._pass_lock = threading.Lock()
        self._generation = 0
        self._grouped: dict[str, PodEntry] = {}
        self._outcomes: list[Outcome] = []
        self._outcomes_lock = threading.Lock()
        self._last_resync = start
        self._last_pass = start
        self._last_relist: float | None = None
        self._counted: tuple[object, object] = (None, None)
        """The desired states and the runtime's pods last counted in the pod gauges."""
        self._wake = threading.Event()
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
        self._outage = Outage()
        """Relists failing in a row (the runtime not answering): the loop backs off."""
        self._pass_failures = Outage()
        """Background passes failing in a row on an unexpected error."""
        self._resume = threading.Event()
        """Ends a back-off wait early (``stop``)."""
        self._holding_until: float | None = None
        """While the loop backs off: the monotonic time of its next pass."""
        self._stream_outage = Outage(initial=1.0)
        self._stream_wanted = False
        """The event stream could not be opened, or ended: subscribe again when the runtime
        answers (a runtime whose ``watch_events`` returns None has none to want)."""
        self._subscribe_at = 0.0

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
        """Apply a source's update (thread-safe). The source counts as registered from now on
        (unless the update only adds or removes ConfigMaps and Secrets)."""
        objects_only = bool(update.objects) and not update.pods and update.op is not Operation.SET
        changed = False if objects_only else self.pod_config.apply(update)
        if self.objects.apply(update) or changed:
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

    def remove_pod(
        self, pod: Pod, source: str = "api", *, grace_period: float | None = None
    ) -> None:
        """Delete ``pod``. ``grace_period`` (seconds, as ``kubectl delete --grace-period``)
        overrides the spec's ``terminationGracePeriodSeconds`` when shorter; a grace period
        only ever shortens: a second delete of a pod already terminating brings its end closer
        (even during a preStop hook) and never pushes it back."""
        if grace_period is not None:
            if not grace_period >= 0:
                raise ValueError(f"grace_period must be 0 or more, got {grace_period}")
            shortened = self.terminations.request_grace(
                pod.uid, grace_period, self.clock.monotonic()
            )
            if shortened is not None:
                self._cut_short(pod.uid)
                self._wake.set()  # a kill waiting for a retry uses the new deadline now
        self.update(PodUpdate(Operation.REMOVE, (pod,), source))

    def sources_ready(self) -> bool:
        return self.pod_config.sources_ready()

    def _refresh_desired(self) -> None:
        self.desired.refresh(self.pod_config.generation, self.pod_config.pods, self.clock.now())

    def _leave(self, pod: Pod) -> None:
        self.prober.forget(pod.uid)
        self.terminations.leave(pod)

    def _desired_again(self, desired: Mapping[str, PodState]) -> None:
        """Pods desired again before their containers went start afresh (the kubelet counts
        them as restarted pods)."""
        if not self.terminations:
            return
        for uid, st in desired.items():
            if uid in self.terminations:
                self.metrics.restarted_pods.labels(_static_label(st.pod)).inc()
        self.terminations.cancel(desired)

    def _cut_short(self, uid: str) -> None:
        """A terminating pod's grace period was shortened while its worker may be blocked in a
        preStop hook: in the background loop, stop its running containers now with the time
        left (the worker reads the new deadline itself after the hook)."""
        termination = self.terminations.get(uid)
        entry = self._grouped.get(uid)
        if not self.running or termination is None or entry is None:
            return
        if termination.lifecycle is not PodLifecycle.TERMINATING:
            return
        running = [c.id for c in entry.containers if c.state is RuntimeState.RUNNING]
        left = termination.remaining(self.clock.monotonic())

        def stop_one(container_id: str) -> None:
            try:
                stop_within(self.runtime, container_id, left)
            except ContainerRuntimeError as exc:
                logger.warning("stopping %s early failed: %s", container_id, exc)

        def stop() -> None:
            run_at_once([functools.partial(stop_one, container_id) for container_id in running])

        threading.Thread(target=stop, name="kubecore-grace", daemon=True).start()

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
            if self.sync().converged and all(_started(pod) for pod in self.pods()):
                return True
            self.clock.sleep(step)
        return False

    def _current_generation(self) -> int:
        return self._generation

    def _report(self, outcome: Outcome) -> None:
        with self._outcomes_lock:
            self._outcomes.append(outcome)

    def _wake_loop(self) -> None:
        if self._thread is not None:
            self._wake.set()

    def _pass(self, *, inline: bool) -> SyncReport:
        started = self.clock.monotonic()
        # Read before the desired pods: sources that had all reported by now are all in the
        # refreshed view, so a pod missing from it is really not wanted. (Read after, a source
        # reporting in between would make every pod of the view taken before it an orphan.)
        ready = self.pod_config.ready_sources()
        sources_ready = bool(ready) and ready.issuperset(self.pod_config.sources)
        self._refresh_desired()
        with self._outcomes_lock:
            self._outcomes = []
        self._generation += 1
        generation = self._generation
        relist_started = self.clock.monotonic()
        if self._last_relist is not None:
            self.metrics.pleg_relist_interval.observe(max(0.0, relist_started - self._last_relist))
        self._last_relist = relist_started
        try:
            engine_snapshot = self.runtime.snapshot()
        except Exception as exc:
            self._relist_failed(exc)
            return SyncReport(pods=len(self.desired.states), errors={"runtime": f"snapshot: {exc}"})
        snapshot = self.node_view.own_objects(engine_snapshot)
        view = self.node_view.group(snapshot)
        grouped = view.entries
        now = self.clock.now()
        mono = self.clock.monotonic()
        ended = self._outage.answer(mono)
        if ended is not None:
            logger.warning("the container runtime answered again %s", ended.describe())
        self.metrics.pleg_relist_duration.observe(max(0.0, mono - relist_started))
        self.metrics.pleg_last_seen.set(now)
        if self._unconfirmed_deaths:
            self._confirm_deaths(snapshot, mono)
        self._grouped = grouped
        resync = mono - self._last_resync >= self.config.resync_interval
        if resync:
            self._last_resync = mono
        objects_revision = self.objects.revision
        if objects_revision != self._objects_revision:
            # A ConfigMap or Secret changed: every pod is planned again (a container waiting
            # for it starts now, not at the next resync).
            self._objects_revision = objects_revision
            resync = True
        desired = self.desired.states  # replaced whole by a refresh, never changed in place
        states = list(desired.values())
        posted = self.inbox.take()
        probed = self.prober.run_due(
            ((st.pod, grouped.get(st.pod.uid)) for st in states if st.has_probes),
            now,
            inline=inline,
        )
        forced = posted | probed if probed else posted

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
                self.workers.dispatch(uid, work, inline=inline)

        removed: list[str] = []
        desired = self.desired.states
        for uid, entry in grouped.items():
            if uid in desired or not uid:
                continue
            termination = self.terminations.get(uid)
            if not sources_ready and not _left_a_ready_source(termination, ready):
                continue  # whose it is may be a source that cannot be read: keep it
            removed.append(uid)
            work = Work(None, observed_of(entry), generation, None, termination)
            self.workers.dispatch(uid, work, inline=inline)
        self.terminations.retain(grouped, desired)
        try:
            collected = self.housekeeping.run(
                snapshot,
                engine_snapshot,
                desired,
                grouped,
                sources_ready=sources_ready,
                now=now,
                mono=mono,
            )
        except Exception:
            logger.exception("housekeeping failed")
            collected = 0
        try:
            evictions = self.housekeeping.volume_chores(
                [st.pod for st in desired.values()], snapshot, mono=mono
            )
        except Exception:
            logger.exception("volume housekeeping failed")
            evictions = []
        for pod, rejection, signal in evictions:
            self.desired.evict(pod, rejection, now)
            self.metrics.record_eviction(signal)
            self._wake.set()
        self._gauges.update(snapshot, view.ready, view.running)
        self._count_pods()

        actions: dict[str, str] = {}
        errors: dict[str, str] = {}
        with self._outcomes_lock:
            outcomes, self._outcomes = self._outcomes, []
        for name, summary, error in outcomes:
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

    def _relist_failed(self, exc: Exception) -> None:
        """A relist failed: logged at a falling rate (the 1st, 2nd, 4th, ... in a row, and at
        least once a minute); the loop waits ``_outage.delay`` before the next."""
        outage = self._outage
        if not outage.fail(self.clock.monotonic()):
            logger.debug("runtime snapshot failed again (%d in a row): %s", outage.failures, exc)
            return
        retry = f"; next relist in {outage.delay:.1f}s" if self._thread is not None else ""
        message = (
            "runtime snapshot failed (%d in a row over %.1fs%s; fewer of these are logged): %s"
        )
        args = (outage.failures, self.clock.monotonic() - outage.started, retry, exc)
        if isinstance(exc, ContainerRuntimeError):
            logger.warning(message, *args)
        else:
            logger.error(message, *args, exc_info=exc)

    def _count_pods(self) -> None:
        """The desired, active and working pod gauges, when the desired pods or the runtime's
        pods changed (a pod turns terminal, or moves on its way out, only as its containers
        change)."""
        states, grouped = self.desired.states, self._grouped
        if self._counted[0] is states and self._counted[1] is grouped:
            return
        self._counted = (states, grouped)
        desired = {"true": 0, "false": 0}
        for pod in self.pod_config.pods():
            desired[_static_label(pod)] += 1
        active = {"true": 0, "false": 0}
        for st in states.values():
            status = st.published.status
            if status is None or status.phase not in ("Succeeded", "Failed"):
                active[_static_label(st.pod)] += 1
        for label in ("true", "false"):
            self.metrics.desired_pods.labels(label).set(desired[label])
            self.metrics.active_pods.labels(label).set(active[label])
        working = working_pod_counts(states, grouped, self.terminations)
        for labels, count in working.items():
            self.metrics.working_pods.labels(*labels).set(count)

    def _sync_direct(self, uid: str, work: Work) -> None:
        """A pod's sync in this thread, failing as a pod worker would (logged, not raised)."""
        try:
            self._syncer.sync(uid, work)
        except Exception:
            logger.exception("pod worker for %s failed", uid)

    def _dns(self, pod: Pod) -> DNSConfig | None:
        return dns_config(
            pod,
            cluster_dns=self.config.cluster_dns,
            cluster_domain=self.config.cluster_domain,
            host=self._host_dns,
        )

    # --- background loop --------------------------------------------------------------------

    def start(self) -> None:
        """Run the sync loop in a background thread (relist, resync, runtime events). Raises
        ``NodeNameInUse`` when another live agent holds this node name on the engine."""
        if self._thread is not None and self._thread.is_alive():
            return
        self.node_guard.acquire()  # NodeNameInUse: another live agent has this node name
        self._stop.clear()
        self.workers.reopen()
        self._workers_closed = False
        self._subscribe()
        self._thread = threading.Thread(target=self._loop, name="kubecore-sync-loop", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop and drain the workers. Containers keep running."""
        self._stop.set()
        self._wake.set()
        self._resume.set()
        self._unsubscribe()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        self._unsubscribe()  # one the loop opened while stopping
        self._workers_closed = True
        self.workers.shutdown(timeout)
        self.prober.shutdown()
        self.volumes.release()
        self.node_guard.release()

    def _halt(self) -> None:
        """Stop syncing (another agent took this node name): the loop ends, containers stay."""
        self._stop.set()
        self._wake.set()
        self._resume.set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        named = False
        while not self._stop.is_set():
            self._wake.clear()
            quiet = False
            try:
                with self._pass_lock:
                    report = self._pass(inline=False)
                quiet = report.synced == 0 and not report.removed_dispatched
                ended = self._pass_failures.answer(self.clock.monotonic())
                if ended is not None:
                    logger.warning("the sync loop passes again %s", ended.describe())
                if not self._outage.failures:
                    if not named:
                        # Statuses name the runtime (one engine call, then cached): asked here,
                        # while the first syncs run, rather than on a pod worker's path.
                        self.status_manager.runtime_name()
                        named = True
                    self._keep_subscribed()
            except Exception:
                if self._pass_failures.fail(self.clock.monotonic()):
                    logger.exception(
                        "sync loop pass failed (%d in a row; fewer of these are logged)",
                        self._pass_failures.failures,
                    )
            with self._pass_cond:
                self._passes += 1
                self._quiet = quiet and self.workers.busy_count == 0
                self._pass_cond.notify_all()
            if self._stop.is_set():
                break
            delay = max(self._outage.delay, self._pass_failures.delay)
            if delay > 0:
                self._hold(delay)
            elif self.clock.virtual:
                # Virtual time moves only when a test advances it: wait for a wake-up in real time.
                self._wake.wait(self.config.relist_interval)
            else:
                self.clock.wait(self._wake, self._next_pass_in())

    def _hold(self, seconds: float) -> None:
        """No pass for ``seconds`` of the clock (a back-off after failed passes): wake-ups wait
        for its end, ``stop`` does not. On a virtual clock the wait ends when the clock is
        advanced that far."""
        self._resume.clear()
        if self._stop.is_set():
            return
        until = self.clock.monotonic() + seconds
        self._holding_until = until
        try:
            if self.clock.virtual:
                handle = self.clock.call_at(until, self._resume.set)
                try:
                    self._resume.wait()
                finally:
                    handle.cancel()
            else:
                self.clock.wait(self._resume, seconds)
        finally:
            self._holding_until = None

    def _subscribe(self) -> None:
        """Subscribe to the runtime's events; when that fails, relists alone see changes
        until ``_keep_subscribed`` succeeds."""
        mono = self.clock.monotonic()
        try:
            subscription = self.runtime.watch_events(self._on_runtime_event)
        except ContainerRuntimeError as exc:
            self._stream_lost(mono, f"no runtime event stream ({exc})")
            return
        ended = self._stream_outage.answer(mono)
        if ended is not None:
            logger.warning("subscribed to the runtime's events again %s", ended.describe())
        self._stream_wanted = False
        self._subscription = subscription
        if self._stop.is_set():
            self._unsubscribe()

    def _keep_subscribed(self) -> None:
        """After a pass the runtime answered: subscribe again if the event stream could not be
        opened or has ended (a subscription with an ``alive`` attribute that turned False),
        with a growing delay between tries."""
        subscription = self._subscription
        mono = self.clock.monotonic()
        if subscription is not None:
            if getattr(subscription, "alive", True):
                return
            self._unsubscribe()
            self._stream_lost(mono, "the runtime event stream ended")
            return
        if self._stream_wanted and mono >= self._subscribe_at:
            self._subscribe()

    def _stream_lost(self, mono: float, why: str) -> None:
        """No event stream now: try again after a delay growing with each failure in a row."""
        self._stream_wanted = True
        logged = self._stream_outage.fail(mono)
        self._subscribe_at = mono + self._stream_outage.delay
        if logged:
            logger.warning(
                "%s; relying on relists, subscribing again in %.1fs", why, self._stream_outage.delay
            )

    def _unsubscribe(self) -> None:
        subscription, self._subscription = self._subscription, None
        if subscription is None:
            return
        try:
            subscription.close()
        except Exception:
            logger.exception("closing the runtime event subscription failed")

    def _next_pass_in(self) -> float:
        """Seconds until the next pass: the relist interval, or sooner when a back-off ends
        (a container waiting in CrashLoopBackOff restarts on time even with long relists) or
        a reported death is not yet visible in the snapshot."""
        with self._lock:
            if self._unconfirmed_deaths:
                return _DEATH_RECHECK
            states = self.desired.states.values()
            replan_at = min((st.replan_at for st in states), default=math.inf)
        return max(0.0, min(self.config.relist_interval, replan_at - self.clock.now()))

    def _on_runtime_event(self, event: RuntimeEvent) -> None:
        if event.type not in (RuntimeEventType.DIED, RuntimeEventType.OOM):
            return
        with self._lock:
            self._unconfirmed_deaths[event.container_id] = self.clock.monotonic()
        self._post(event.pod_uid)

    def _post(self, uid: str) -> None:
        """A message for the pod's worker from another thread: sync it at the next pass."""
        self.inbox.post(uid)
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

    def wait_pass(self, timeout: float, *, ask: bool = True) -> bool:
        """With the loop started: wait (real time, at most ``timeout``) until a pass has ended
        and the pod syncs it dispatched are done; ``ask``: ask for that pass now (otherwise the
        loop's own next one: a relist, or a wake-up after a sync acted). True if that happened
        in time."""
        if not self.running:
            raise RuntimeError("the sync loop is not running (call start() first)")
        deadline = time.monotonic() + timeout
        with self._pass_cond:
            target = self._passes + 1
            if ask:
                self._wake.set()
            if not self._pass_cond.wait_for(
                functools.partial(self._passed, target), timeout=max(0.0, timeout)
            ):
                return False
        return self.workers.wait_idle(max(0.0, deadline - time.monotonic()))

    # --- reading --------------------------------------------------------------------------------

    def pods(self) -> list[Pod]:
        """Desired pods (in first-seen order) with their status filled in."""
        self._refresh_desired()
        return self.desired.listing()

    def pod_reports(self) -> list[PodReport]:
        """What ``pods`` lists, unrendered: each pod with its status object as published (the
        same objects until that pod changes, so a reader tells a change by identity, cheaply;
        ``report.as_pod()`` is the pod ``pods`` shows)."""
        self._refresh_desired()
        return self.desired.reports()

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
            if c.labels.get(POD_UID_LABEL) == pod.uid
            and container_name_of(c) == container
            and owned_by(c.labels, self.config.node_name)
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
        previous: bool = False,
        since_seconds: int | None = None,
        since_time: float | None = None,
        limit_bytes: int | None = None,
    ) -> Iterator[bytes]:
        """A container's output, as the kubelet answers a log query
        (``kubecore._observability.logs``): the
        current instance (or with ``previous`` the last terminated one), the last ``tail``
        lines, from ``since_seconds`` ago or ``since_time`` (seconds since the epoch) on, cut
        after ``limit_bytes``. Raises NotFound / ContainerNotFound for a pod or container that
        is not there, ``LogRequestError`` when the instance asked for has no log (yet)."""
        pod = self.get_pod(namespace, pod_name)
        if pod is None:
            raise NotFound(f"pod {namespace}/{pod_name} is not on this node")
        if container not in {c.name for c in pod.spec.containers + pod.spec.init_containers}:
            raise ContainerNotFound(
                f"pod {namespace}/{pod_name} has no container named {container!r}"
            )
        options = LogOptions(since_seconds=since_seconds, since_time=since_time)
        container_id = log_container_id(pod, container, previous=previous)
        stream = self.runtime.logs(
            container_id,
            tail=tail,
            follow=follow,
            since=options.since(self.clock.now()),
            timestamps=timestamps,
        )
        return limited(stream, limit_bytes)

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
        """The kubelet's ``/stats/summary`` (Summary API): the node and each pod with its
        containers and volumes."""
        return self.stats.summary(self.pods(), self.clock.now())

    def _resource_summary(self) -> dict[str, Any]:
        return self.stats.summary(self.pods(), self.clock.now(), cpu_and_memory_only=True)

    def health_checks(self) -> list[tuple[str, str]]:
        """The kubelet's ``/healthz`` checks as (name, why it fails; "" when it passes):
        ``ping``, ``syncloop`` (the loop, when started, passed within twice the resync
        interval, at least 5 min), ``runtime`` (the runtime answers) and one ``source <name>``
        per pod source (it has reported, and can be read now)."""
        checks = [("ping", "")]
        for name, problem in (
            ("syncloop", self._sync_loop_problem()),
            ("runtime", self._runtime_problem()),
        ):
            checks.append((name, f"failed: {problem}" if problem else ""))
        reasons = self.pod_config.not_ready_reasons()
        for source in self.pod_config.sources:
            reason = reasons.get(source)
            checks.append((f"source {source}", f"not ready: {reason}" if reason else ""))
        return checks

    def _sync_loop_problem(self) -> str:
        if self._thread is None:
            return ""
        if not self._thread.is_alive():
            return "the sync loop is not running"
        limit = max(2 * self.config.resync_interval, _SYNC_LOOP_MIN_THRESHOLD)
        age = self.clock.monotonic() - self._last_pass
        if age > limit:
            return f"the sync loop last passed {age:.0f}s ago (more than {limit:.0f}s)"
        return ""

    def _runtime_problem(self) -> str:
        try:
            self.runtime.version()
        except ContainerRuntimeError as exc:
            return f"container runtime is down: {exc}"
        except Exception as exc:
            return f"container runtime check failed: {exc!r}"
        return ""

    def healthz(self) -> tuple[bool, str]:
        """(healthy, reason): the runtime answers, and the loop (when started) keeps passing.
        (Pod sources are not part of it: see ``health_checks``.)"""
        problem = self._runtime_problem() or self._sync_loop_problem()
        return (False, problem) if problem else (True, "ok")

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
        terminal = status is not None and status.phase in ("Succeeded", "Failed")
        counts["terminated" if terminal else "sync", "desired", _static_label(st.pod)] += 1
    for uid in on_node:
        if uid in desired or not uid:
            continue
        termination = terminations.get(uid)
        if termination is None:
            counts["terminating", "runtime_only", "unknown"] += 1
        else:
            lifecycle = _LIFECYCLE_LABELS[termination.lifecycle]
            counts[lifecycle, "orphan", _static_label(termination.pod)] += 1
    return counts


def _left_a_ready_source(termination: Termination | None, ready: frozenset[str]) -> bool:
    """The pod left the state of a source that is ready (deleted over the API while a
    manifest directory cannot be read): that source's word is known, the pod goes."""
    if termination is None:
        return False  # found on the runtime with no record of its source (after a restart)
    return termination.pod.metadata.annotations.get(SOURCE_ANNOTATION, "") in ready


def _static_label(pod: Pod) -> str:
    return "true" if is_static(pod) else "false"


def _started(pod: Pod) -> bool:
    """No longer starting: the pod left phase Pending, or it settled there (``pod_settled``:
    it waits in a failure such as ``ImagePullBackOff``). A running pod whose readiness probe
    keeps failing has started, though it has not settled."""
    status = pod.status
    return status is not None and (status.phase != "Pending" or pod_settled(pod))
