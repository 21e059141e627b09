"""The agent's rooms built from a ``KubeletConfig`` and a runtime: what each room is given, and
the callbacks that join them (through ``Signals``, the loop being built after them).

``Rooms`` holds them: the instrumented runtime and puller, the event log and recorders, the
sources' view (``pod_config``, ``objects``), the desired pods, the executor and pod workers, the
prober, status, housekeeping and stats rooms. ``build_rooms`` makes them in the order the agent
always has (the root directory is taken, then the host is read, then the rooms are joined)."""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Iterable, Mapping

import attrs

from kubecore._agent.admission.admit import Admission
from kubecore._agent.config import KubeletConfig
from kubecore._agent.desired import DesiredPods
from kubecore._agent.node_lease import NodeNameGuard
from kubecore._agent.pod_workers.queue import PodWorkers
from kubecore._agent.pod_workers.room import PodState, PodSyncer, Work
from kubecore._agent.signals import Signals
from kubecore._agent.snapshot import NodeGauges, NodeView
from kubecore._agent.termination import Terminations
from kubecore._config.created import CREATION_TIMES_FILE, CreationTimes
from kubecore._config.objects import ObjectStore
from kubecore._config.podconfig import PodConfig
from kubecore._config.updates import is_static
from kubecore._contract.capabilities import HostMemoryVolumes, InProcessMounts
from kubecore._contract.protocols import ContainerRuntime, EventRecorder, HealthChecker, Puller
from kubecore._housekeeping.gc import ContainerGCPolicy, ImageGC, ImageGCPolicy
from kubecore._housekeeping.log_rotation import ContainerLogRotation, LogRotationPolicy
from kubecore._housekeeping.timers import Housekeeping
from kubecore._kuberuntime.credentials import Keyring
from kubecore._kuberuntime.dns import ResolvConf, dns_config, parse_resolv_conf
from kubecore._kuberuntime.env import NodeInfo, host_capacity
from kubecore._kuberuntime.execute import Executor
from kubecore._kuberuntime.security import detect_host_security
from kubecore._kuberuntime.start_journal import StartJournal
from kubecore._model.node_record import NodeRecordFile
from kubecore._model.quantity import memory_bytes
from kubecore._model.v1 import Pod
from kubecore._observability.event_log import EventLog
from kubecore._observability.events import FanoutRecorder, LoggingRecorder, MemoryRecorder
from kubecore._observability.instrumented import InstrumentedPuller, instrument_runtime
from kubecore._observability.metrics import Metrics
from kubecore._observability.stats import StatsProvider
from kubecore._prober.health import DefaultHealthChecker
from kubecore._prober.manager import ProbeManager
from kubecore._prober.runner import Prober
from kubecore._status.manager import StatusManager
from kubecore._util.clock import Clock, SystemClock
from kubecore._util.host import node_ip
from kubecore._util.ratelimit import TokenBucket
from kubecore._volumes.pod_dirs import VolumeManager

logger = logging.getLogger(__name__)


@attrs.frozen(eq=False)
class Rooms:
    """The agent's rooms, joined (``build_rooms``)."""

    config: KubeletConfig
    clock: Clock
    metrics: Metrics
    runtime: ContainerRuntime
    """The plugin's runtime, instrumented (operation metrics)."""
    puller: InstrumentedPuller
    events: MemoryRecorder
    """The newest events, each occurrence as recorded, kept in memory for the agent's readers."""
    event_log: EventLog
    """The newest events aggregated as the kubelet's recorder aggregates them (the API's)."""
    recorder: FanoutRecorder
    """Every event goes to each of its recorders (the memory, the log, the embedder's)."""
    pod_config: PodConfig
    """The sources' pods, merged."""
    objects: ObjectStore
    """The ConfigMaps and Secrets from every source."""
    volumes: VolumeManager
    admission: Admission
    executor: Executor
    node_view: NodeView
    node_guard: NodeNameGuard
    """The agent's lease on its node name on the engine, while started."""
    probes: ProbeManager
    prober: Prober
    status_manager: StatusManager
    terminations: Terminations
    housekeeping: Housekeeping
    gauges: NodeGauges
    stats: StatsProvider
    desired: DesiredPods
    syncer: PodSyncer
    """The work of one pod worker."""
    workers: PodWorkers[Work]
    started: float
    """The clock's monotonic time when the rooms were built."""

    def refresh_desired(self) -> None:
        """The desired pods brought up to the sources' view (cheap when it has not changed)."""
        self.desired.refresh(self.pod_config.generation, self.pod_config.pods, self.clock.now())


@attrs.frozen
class _Plugged:
    """The plugin's parts, instrumented, and where events go."""

    runtime: ContainerRuntime
    puller: InstrumentedPuller
    events: MemoryRecorder
    event_log: EventLog
    recorder: FanoutRecorder
    health_checker: HealthChecker


def build_rooms(
    runtime: ContainerRuntime,
    puller: Puller,
    config: KubeletConfig,
    signals: Signals,
    *,
    health_checker: HealthChecker | None = None,
    recorder: EventRecorder | None = None,
    clock: Clock | None = None,
    metrics: Metrics | None = None,
    sources: Iterable[str] = (),
    pull_secrets: Mapping[tuple[str, str], Keyring] | None = None,
) -> Rooms:
    """The agent's rooms on ``runtime`` and ``puller``, joined to the loop by ``signals``.
    Raises ``RootDirInUse`` when another agent holds ``config.root_dir``."""
    cfg = config
    clock = clock or SystemClock()
    metrics = metrics or Metrics()
    metrics.set_node_name(cfg.node_name)
    plugged = _plug(runtime, puller, cfg, clock, metrics, health_checker, recorder)
    created = CreationTimes(os.path.join(cfg.root_dir, CREATION_TIMES_FILE), clock.now)
    pod_config = PodConfig(sources, node_name=cfg.node_name, created=created)
    objects = ObjectStore()
    volumes = VolumeManager(
        cfg.root_dir,
        cfg.node_name,
        objects=objects,
        pvc_dir=cfg.pvc_dir,
        host_tmpfs=isinstance(runtime, HostMemoryVolumes) and runtime.binds_host_memory_volumes(),
        bind_sub_paths=not (
            isinstance(runtime, InProcessMounts) and runtime.reads_mounts_in_process()
        ),
    )
    volumes.acquire()  # RootDirInUse now, not at the first pod
    admission = admission_of(cfg)
    image_lock = threading.Lock()  # a pull or an image collection, never both at once
    executor = _executor(cfg, plugged, clock, volumes, image_lock, objects, metrics, pull_secrets)
    objects.subscribe(signals.wake.set)
    host_dns = _read_resolv_conf(cfg.resolv_conf)
    start = clock.monotonic()
    upkeep = _upkeep(cfg, plugged, metrics, volumes, image_lock, start)
    syncing = _syncing(
        cfg, clock, metrics, plugged, admission, volumes, executor, host_dns, signals
    )
    return Rooms(
        config=cfg,
        clock=clock,
        metrics=metrics,
        runtime=plugged.runtime,
        puller=plugged.puller,
        events=plugged.events,
        event_log=plugged.event_log,
        recorder=plugged.recorder,
        pod_config=pod_config,
        objects=objects,
        volumes=volumes,
        admission=admission,
        executor=executor,
        node_view=NodeView(cfg.node_name),
        node_guard=syncing.node_guard,
        probes=syncing.probes,
        prober=syncing.prober,
        status_manager=syncing.status_manager,
        terminations=syncing.terminations,
        housekeeping=upkeep.housekeeping,
        gauges=upkeep.gauges,
        stats=upkeep.stats,
        desired=syncing.desired,
        syncer=syncing.syncer,
        workers=syncing.workers,
        started=start,
    )


@attrs.frozen
class _Upkeep:
    """The rooms that keep the node tidy and measured."""

    housekeeping: Housekeeping
    gauges: NodeGauges
    stats: StatsProvider


def _upkeep(
    cfg: KubeletConfig,
    plugged: _Plugged,
    metrics: Metrics,
    volumes: VolumeManager,
    image_lock: threading.Lock,
    start: float,
) -> _Upkeep:
    gc_policy = ContainerGCPolicy(cfg.gc_max_dead_per_container, cfg.gc_min_age)
    image_gc = ImageGC(
        plugged.puller,
        ImageGCPolicy(cfg.image_gc_high, cfg.image_gc_low, cfg.image_min_age),
        image_lock,
    )
    housekeeping = Housekeeping(
        plugged.runtime,
        volumes,
        image_gc,
        gc_policy,
        housekeeping_interval=cfg.housekeeping_interval,
        container_gc_interval=cfg.container_gc_interval,
        image_gc_interval=cfg.image_gc_interval,
        start=start,
        log_rotation=ContainerLogRotation(
            plugged.runtime,
            LogRotationPolicy(
                memory_bytes(cfg.container_log_max_size), cfg.container_log_max_files
            ),
        ),
    )
    stats = StatsProvider(
        plugged.runtime,
        node_name=cfg.node_name,
        root_dir=cfg.root_dir,
        pod_dir=volumes.pod_dir,
        image_fs=plugged.puller.image_fs_usage,
    )
    return _Upkeep(housekeeping, NodeGauges(metrics), stats)


@attrs.frozen
class _Syncing:
    """The rooms that sync pods: the desired pods, their workers, probes and statuses."""

    node_guard: NodeNameGuard
    probes: ProbeManager
    prober: Prober
    status_manager: StatusManager
    terminations: Terminations
    desired: DesiredPods
    syncer: PodSyncer
    workers: PodWorkers[Work]


def _syncing(
    cfg: KubeletConfig,
    clock: Clock,
    metrics: Metrics,
    plugged: _Plugged,
    admission: Admission,
    volumes: VolumeManager,
    executor: Executor,
    host_dns: ResolvConf,
    signals: Signals,
) -> _Syncing:
    node_guard = NodeNameGuard(
        plugged.runtime, cfg.node_name, clock, on_lost=lambda _lease: signals.halt()
    )
    probes = ProbeManager(plugged.health_checker, plugged.recorder)
    host_ip = node_ip(cfg.host_ip)
    prober = Prober(
        probes,
        metrics,
        now=clock.now,
        max_workers=cfg.workers,
        on_change=signals.post,
        monotonic=clock.monotonic,
        host_ip=host_ip,
    )
    status_manager = StatusManager(
        plugged.runtime, volumes, plugged.recorder, metrics, host_ip=host_ip
    )
    terminations = Terminations()
    desired = DesiredPods(
        admission,
        status_manager,
        on_leave=functools.partial(_leave, prober, terminations),
        on_desired=functools.partial(_desired_again, terminations, metrics),
        on_changed=signals.desired_changed,
        node_name=cfg.node_name,
    )
    syncer = PodSyncer(
        clock=clock,
        executor=executor,
        probes=probes,
        status=status_manager,
        metrics=metrics,
        dns=functools.partial(
            dns_config,
            cluster_dns=cfg.cluster_dns,
            cluster_domain=cfg.cluster_domain,
            host=host_dns,
        ),
        desired=desired,
        generation=signals.current_generation,
        report=signals.report,
        wake=signals.wake_loop,
        published=signals.pods_changed,
    )
    workers: PodWorkers[Work] = PodWorkers(
        syncer, max_workers=cfg.workers, on_replaced=lambda _uid: metrics.work_evictions.inc()
    )
    return _Syncing(
        node_guard, probes, prober, status_manager, terminations, desired, syncer, workers
    )


def _plug(
    runtime: ContainerRuntime,
    puller: Puller,
    cfg: KubeletConfig,
    clock: Clock,
    metrics: Metrics,
    health_checker: HealthChecker | None,
    recorder: EventRecorder | None,
) -> _Plugged:
    instrumented = instrument_runtime(runtime, metrics, clock)
    events = MemoryRecorder(cfg.max_events)
    event_log = EventLog(cfg.max_events)
    recorders: list[EventRecorder] = [events, event_log, LoggingRecorder()]
    if recorder is not None:
        recorders.append(recorder)
    return _Plugged(
        runtime=instrumented,
        puller=InstrumentedPuller(puller, metrics, clock),
        events=events,
        event_log=event_log,
        recorder=FanoutRecorder(recorders),
        health_checker=health_checker or DefaultHealthChecker(instrumented),
    )


def admission_of(cfg: KubeletConfig) -> Admission:
    """The admission rules ``cfg`` sets for the node (reads the host and the node record)."""
    return Admission(
        max_pods=cfg.max_pods,
        allow_privileged=cfg.allow_privileged,
        claims_served=bool(cfg.pvc_dir),
        node_name=cfg.node_name,
        labels=cfg.labels(),
        host_security=detect_host_security(),
        allowed_unsafe_sysctls=cfg.allowed_unsafe_sysctls,
        cordon=NodeRecordFile(cfg.root_dir).cordon,
        pod_security=cfg.pod_security_policy(),
    )


def _executor(
    cfg: KubeletConfig,
    plugged: _Plugged,
    clock: Clock,
    volumes: VolumeManager,
    image_lock: threading.Lock,
    objects: ObjectStore,
    metrics: Metrics,
    pull_secrets: Mapping[tuple[str, str], Keyring] | None,
) -> Executor:
    return Executor(
        plugged.runtime,
        plugged.puller,
        plugged.recorder,
        clock,
        volumes,
        plugged.health_checker,
        sandbox_image=cfg.sandbox_image,
        pull_limiter=TokenBucket(cfg.pull_qps, cfg.pull_burst, clock),
        image_lock=image_lock,
        pull_secrets=pull_secrets,
        backoff_initial=cfg.backoff_initial,
        backoff_max=cfg.backoff_max,
        node_name=cfg.node_name,
        cluster_domain=cfg.cluster_domain,
        objects=objects,
        start_journal=StartJournal(cfg.root_dir),
        node=NodeInfo(cfg.node_name, node_ip(cfg.host_ip), host_capacity(cfg.root_dir)),
        metrics=metrics,
    )


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


def _leave(prober: Prober, terminations: Terminations, pod: Pod) -> None:
    """A pod left the desired pods: its probes stop, its termination begins."""
    prober.forget(pod.uid)
    terminations.leave(pod)


def _desired_again(
    terminations: Terminations, metrics: Metrics, desired: Mapping[str, PodState]
) -> None:
    """Pods desired again before their containers went start afresh (the kubelet counts
    them as restarted pods)."""
    if not terminations:
        return
    for uid, st in desired.items():
        if uid in terminations:
            metrics.restarted_pods.labels(static_label(st.pod)).inc()
    terminations.cancel(desired)


def static_label(pod: Pod) -> str:
    """The ``static`` label of the pod metrics: ``"true"`` for a static pod."""
    return "true" if is_static(pod) else "false"
