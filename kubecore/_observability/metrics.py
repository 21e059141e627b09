"""Prometheus metrics of one agent, in its own registries (no global state).

Three registries, served as the kubelet serves them: ``registry`` on ``/metrics`` (the kubelet's
``kubelet_*`` names where kubecore measures the same thing, ``kubecore_*`` for what only kubecore
measures), ``probe_registry`` on ``/metrics/probes`` (``prober_*``) and ``resource_registry`` on
``/metrics/resource`` (node, pod and container CPU and memory, read from the stats summary at each
scrape). Names, types, labels and buckets follow the kubelet's (pkg/kubelet/metrics).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar, cast

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubecore._contract.capabilities import (
    NodeClaim,
    NodeClaims,
    NodeHolder,
    ResourceUpdater,
    capabilities,
)
from kubecore._contract.protocols import ContainerRuntime, Puller, Subscription
from kubecore._contract.values import (
    ContainerConfig,
    ContainerResources,
    ContainerStats,
    ExecResult,
    Image,
    ImageFsUsage,
    PullProgress,
    RegistryAuth,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeVersion,
    SandboxConfig,
)
from kubecore._util.clock import Clock, SystemClock
from kubecore._util.timefmt import parse_time

R = TypeVar("R")
logger = logging.getLogger(__name__)

DEF_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
"""The Prometheus client libraries' default buckets (Go's ``DefBuckets``)."""
POD_START_BUCKETS = (
    0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200,
    1800, 2700, 3600,
)  # fmt: skip
IMAGE_PULL_BUCKETS = (
    1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600,
)  # fmt: skip
RUNTIME_OPERATION_BUCKETS = tuple(0.005 * 2.5**i for i in range(14))
_FAST = (0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

_MIB = 1024 * 1024
_GIB = 1024 * _MIB
_IMAGE_SIZE_BUCKETS = (
    (0, "0-10MB"),
    (10 * _MIB, "10MB-100MB"),
    (100 * _MIB, "100MB-500MB"),
    (500 * _MIB, "500MB-1GB"),
    (1 * _GIB, "1GB-5GB"),
    (5 * _GIB, "5GB-10GB"),
    (10 * _GIB, "10GB-20GB"),
    (20 * _GIB, "20GB-30GB"),
    (30 * _GIB, "30GB-40GB"),
    (40 * _GIB, "40GB-60GB"),
    (60 * _GIB, "60GB-100GB"),
    (100 * _GIB, "GT100GB"),
)

RUNTIME_OPERATION_NAMES = {
    "run_sandbox": "run_podsandbox",
    "stop_sandbox": "stop_podsandbox",
    "remove_sandbox": "remove_podsandbox",
    "list_sandboxes": "list_podsandbox",
    "sandbox_status": "podsandbox_status",
    "container_stats": "list_container_stats",
    "image_fs_usage": "image_fs_info",
    "watch_events": "get_container_events",
    "update_container_resources": "update_container",
}
"""kubecore's runtime calls by the CRI operation name the kubelet labels them with (the others
are already the same, or have no CRI counterpart and keep their own name)."""

PROBE_TYPES = {"liveness": "Liveness", "readiness": "Readiness", "startup": "Startup"}
PROBE_RESULTS = {"success": "successful", "failure": "failed", "unknown": "unknown"}

_BARE_COUNTERS = ("kubelet_evictions",)
"""Counters the kubelet names without ``_total`` (the Python client would add it)."""


def image_size_label(size: int) -> str:
    """The kubelet's ``image_size_in_bytes`` bucket for an image of ``size`` bytes."""
    label = _IMAGE_SIZE_BUCKETS[0][1]
    for lower, name in _IMAGE_SIZE_BUCKETS:
        if size >= lower:
            label = name
    return label


def container_type(*, is_init: bool) -> str:
    """The kubelet's ``container_type`` label value."""
    return "init_container" if is_init else "container"


def _bare_counter_headers(text: bytes) -> bytes:
    for name in _BARE_COUNTERS:
        for kind in (b"HELP", b"TYPE"):
            text = text.replace(
                b"# %s %s_total " % (kind, name.encode()), b"# %s %s " % (kind, name.encode())
            )
    return text


class _WithoutCreated:
    """A registry's families without the ``_created`` series the Python client adds (the
    kubelet has none)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        for family in self._registry.collect():
            family.samples = [s for s in family.samples if not s.name.endswith("_created")]
            yield family


def _exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(_WithoutCreated(registry))


class _BareCounter:
    """A labelled counter exposed under its own name (no ``_total``), as the kubelet's
    ``kubelet_evictions``."""

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self._lock = threading.Lock()
        self._values: dict[tuple[str, ...], float] = {}

    def inc(self, *labelvalues: str, amount: float = 1.0) -> None:
        with self._lock:
            self._values[labelvalues] = self._values.get(labelvalues, 0.0) + amount

    def collect(self) -> Iterator[Metric]:
        family = Metric(self.name, self.documentation, "counter")
        with self._lock:
            values = list(self._values.items())
        for labelvalues, value in values:
            family.add_sample(
                self.name, dict(zip(self.labelnames, labelvalues, strict=True)), value
            )
        yield family


class Metrics:
    """The agent's Prometheus metrics (the kubelet's names): sync and runtime call latencies,
    pods and containers by state, probes; served at ``/metrics``."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.probe_registry = CollectorRegistry(auto_describe=True)
        self.resource_registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.node_name = Gauge(
            "kubelet_node_name", "The node's name. The count is always 1.", ["node"], registry=r
        )
        self.running_pods = Gauge(
            "kubelet_running_pods", "Number of pods that have a running pod sandbox", registry=r
        )
        self.running_containers = Gauge(
            "kubelet_running_containers",
            "Number of containers currently running",
            ["container_state"],
            registry=r,
        )
        self.desired_pods = Gauge(
            "kubelet_desired_pods",
            "The number of pods the kubelet is being instructed to run. static is true if the pod "
            "is not from the apiserver.",
            ["static"],
            registry=r,
        )
        self.active_pods = Gauge(
            "kubelet_active_pods",
            "The number of pods the kubelet considers active and which are being considered when "
            "admitting new pods. static is true if the pod is not from the apiserver.",
            ["static"],
            registry=r,
        )
        self.working_pods = Gauge(
            "kubelet_working_pods",
            "Number of pods the kubelet is actually running, broken down by lifecycle phase, "
            "whether the pod is desired, orphaned, or runtime only (also orphaned), and whether "
            "the pod is static.",
            ["lifecycle", "config", "static"],
            registry=r,
        )
        self.restarted_pods = Counter(
            "kubelet_restarted_pods_total",
            "Number of pods that have been restarted because they were deleted and recreated "
            "with the same UID while the kubelet was watching them",
            ["static"],
            registry=r,
        )
        self.pod_start_duration = Histogram(
            "kubelet_pod_start_duration_seconds",
            "Duration in seconds from kubelet seeing a pod for the first time to the pod starting "
            "to run",
            registry=r,
            buckets=POD_START_BUCKETS,
        )
        self.pod_start_sli_duration = Histogram(
            "kubelet_pod_start_sli_duration_seconds",
            "Duration in seconds to start a pod, excluding time to pull images, measured from "
            "the kubelet seeing the pod to when all its containers are reported as started",
            registry=r,
            buckets=POD_START_BUCKETS,
        )
        self.pod_worker_duration = Histogram(
            "kubelet_pod_worker_duration_seconds",
            "Duration in seconds to sync a single pod. Broken down by operation type: create, "
            "update, or sync",
            ["operation_type"],
            registry=r,
            buckets=DEF_BUCKETS,
        )
        self.pod_worker_start_duration = Histogram(
            "kubelet_pod_worker_start_duration_seconds",
            "Duration in seconds from kubelet seeing a pod to starting a worker.",
            registry=r,
            buckets=DEF_BUCKETS,
        )
        self.runtime_operations = Counter(
            "kubelet_runtime_operations_total",
            "Cumulative number of runtime operations by operation type.",
            ["operation_type"],
            registry=r,
        )
        self.runtime_errors = Counter(
            "kubelet_runtime_operations_errors_total",
            "Cumulative number of runtime operation errors by operation type.",
            ["operation_type"],
            registry=r,
        )
        self.runtime_latency = Histogram(
            "kubelet_runtime_operations_duration_seconds",
            "Duration in seconds of runtime operations. Broken down by operation type.",
            ["operation_type"],
            registry=r,
            buckets=RUNTIME_OPERATION_BUCKETS,
        )
        self.pleg_relist_duration = Histogram(
            "kubelet_pleg_relist_duration_seconds",
            "Duration in seconds for relisting pods in PLEG.",
            registry=r,
            buckets=DEF_BUCKETS,
        )
        self.pleg_relist_interval = Histogram(
            "kubelet_pleg_relist_interval_seconds",
            "Interval in seconds between relisting in PLEG.",
            registry=r,
            buckets=DEF_BUCKETS,
        )
        self.pleg_last_seen = Gauge(
            "kubelet_pleg_last_seen_seconds",
            "Timestamp in seconds when PLEG was last seen active.",
            registry=r,
        )
        self.started_pods = Counter(
            "kubelet_started_pods_total", "Cumulative number of pods started", registry=r
        )
        self.started_pods_errors = Counter(
            "kubelet_started_pods_errors_total",
            "Cumulative number of errors when starting pods",
            registry=r,
        )
        self.started_containers = Counter(
            "kubelet_started_containers_total",
            "Cumulative number of containers started",
            ["container_type"],
            registry=r,
        )
        self.started_containers_errors = Counter(
            "kubelet_started_containers_errors_total",
            "Cumulative number of errors when starting containers",
            ["container_type", "code"],
            registry=r,
        )
        self.evictions = _BareCounter(
            "kubelet_evictions",
            "Cumulative number of pod evictions by eviction signal",
            ("eviction_signal",),
        )
        r.register(self.evictions)
        self.image_pull_duration = Histogram(
            "kubelet_image_pull_duration_seconds",
            "Duration in seconds to pull an image.",
            ["image_size_in_bytes"],
            registry=r,
            buckets=IMAGE_PULL_BUCKETS,
        )
        # kubecore's own
        self.sync_duration = Histogram(
            "kubecore_sync_duration_seconds",
            "Duration of one full sync pass (relist, probes due, pods dispatched, housekeeping)",
            registry=r,
            buckets=_FAST,
        )
        self.work_evictions = Counter(
            "kubecore_pod_worker_updates_replaced_total",
            "Pending pod work replaced by newer work before it ran",
            registry=r,
        )
        self.sync_errors = Counter(
            "kubecore_pod_sync_errors_total", "Pod syncs that ended in an error", registry=r
        )

        p = self.probe_registry
        self.probe_results = Counter(
            "prober_probe_total",
            "Cumulative number of a liveness, readiness or startup probe for a container by "
            "result.",
            ["probe_type", "result", "container", "pod", "namespace", "pod_uid"],
            registry=p,
        )
        self.probe_duration = Histogram(
            "prober_probe_duration_seconds",
            "Duration in seconds for a probe response.",
            ["probe_type", "container", "pod", "namespace"],
            registry=p,
            buckets=DEF_BUCKETS,
        )
        self._resources = ResourceCollector()
        self.resource_registry.register(self._resources)
        self._probe_series_lock = threading.Lock()
        self._probe_series: dict[str, set[tuple[str, ...]]] = {}
        self._duration_series: dict[str, set[tuple[str, ...]]] = {}

    def set_node_name(self, node: str) -> None:
        self.node_name.clear()
        self.node_name.labels(node).set(1)

    def record_probe(
        self,
        *,
        kind: str,
        outcome: str,
        container: str,
        pod: str,
        namespace: str,
        pod_uid: str,
        duration: float | None,
    ) -> None:
        """Count one probe result; time it when it succeeded (as the kubelet does)."""
        probe_type = PROBE_TYPES.get(kind, kind)
        result = PROBE_RESULTS.get(outcome, outcome)
        counted = (probe_type, result, container, pod, namespace, pod_uid)
        timed = (probe_type, container, pod, namespace)
        self.probe_results.labels(*counted).inc()
        if duration is not None and result == "successful":
            self.probe_duration.labels(*timed).observe(max(0.0, duration))
        with self._probe_series_lock:
            self._probe_series.setdefault(pod_uid, set()).add(counted)
            if duration is not None and result == "successful":
                self._duration_series.setdefault(pod_uid, set()).add(timed)

    def forget_pod(self, pod_uid: str) -> None:
        """Drop a gone pod's probe series (a pod's labels would otherwise stay forever)."""
        with self._probe_series_lock:
            counted = self._probe_series.pop(pod_uid, set())
            timed = self._duration_series.pop(pod_uid, set())
        for labels in counted:
            self.probe_results.remove(*labels)
        for labels in timed:
            self.probe_duration.remove(*labels)

    def record_eviction(self, signal: str) -> None:
        """One pod evicted on ``signal`` (the kubelet's names: ``memory.available``,
        ``ephemeralpodfs.limit``, …)."""
        self.evictions.inc(signal)

    def observe_image_pull(self, seconds: float, size: int) -> None:
        self.image_pull_duration.labels(image_size_label(size)).observe(max(0.0, seconds))

    def attach_resource_source(self, summary: Callable[[], Mapping[str, Any]]) -> None:
        """Serve ``/metrics/resource`` from ``summary()`` (a ``/stats/summary`` document); the
        last agent attached is the one served when several share these metrics."""
        self._resources.summary = summary

    def render(self) -> bytes:
        """``/metrics`` in the Prometheus text format."""
        return _bare_counter_headers(_exposition(self.registry))

    def render_probes(self) -> bytes:
        """``/metrics/probes``."""
        return _exposition(self.probe_registry)

    def render_resource(self) -> bytes:
        """``/metrics/resource``."""
        return _exposition(self.resource_registry)

    def value(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """One sample's value, from any of the registries (for tests and quick checks)."""
        for registry in (self.registry, self.probe_registry, self.resource_registry):
            found = registry.get_sample_value(name, labels or {})
            if found is not None:
                return found
        return None


# --- /metrics/resource ------------------------------------------------------------------------


def _seconds(document: Mapping[str, Any] | None, field: str, scale: float = 1.0) -> float | None:
    if not document:
        return None
    value = document.get(field)
    return None if value is None else float(value) / scale


def _stamp(document: Mapping[str, Any] | None) -> float | None:
    return parse_time(str((document or {}).get("time") or ""))


class ResourceCollector(Collector):
    """The kubelet's resource metrics (``/metrics/resource``) from a stats summary, read at
    each scrape so that gone containers leave no series behind."""

    def __init__(self, summary: Callable[[], Mapping[str, Any]] | None = None) -> None:
        self.summary = summary

    def describe(self) -> Iterable[Metric]:
        # Registering must not read a summary (the agent may not be built yet).
        return list(_resource_families().values())

    def collect(self) -> Iterable[Metric]:
        scrape_error = 0.0
        families = _resource_families()
        try:
            summary = self.summary() if self.summary is not None else {}
        except Exception:
            logger.exception("the stats summary for /metrics/resource failed")
            scrape_error = 1.0
        else:
            _fill_resource_families(families, summary)
        families["scrape_error"].add_metric([], scrape_error)
        families["resource_scrape_error"].add_metric([], scrape_error)
        return list(families.values())


_CONTAINER_LABELS = ["container", "pod", "namespace"]
_POD_LABELS = ["pod", "namespace"]


def _resource_families() -> dict[str, Any]:
    return {
        "node_cpu": CounterMetricFamily(
            "node_cpu_usage_seconds_total",
            "Cumulative cpu time consumed by the node in core-seconds",
        ),
        "node_memory": GaugeMetricFamily(
            "node_memory_working_set_bytes", "Current working set of the node in bytes"
        ),
        "container_start": GaugeMetricFamily(
            "container_start_time_seconds",
            "Start time of the container since unix epoch in seconds",
            labels=_CONTAINER_LABELS,
        ),
        "container_cpu": CounterMetricFamily(
            "container_cpu_usage_seconds_total",
            "Cumulative cpu time consumed by the container in core-seconds",
            labels=_CONTAINER_LABELS,
        ),
        "container_memory": GaugeMetricFamily(
            "container_memory_working_set_bytes",
            "Current working set of the container in bytes",
            labels=_CONTAINER_LABELS,
        ),
        "pod_cpu": CounterMetricFamily(
            "pod_cpu_usage_seconds_total",
            "Cumulative cpu time consumed by the pod in core-seconds",
            labels=_POD_LABELS,
        ),
        "pod_memory": GaugeMetricFamily(
            "pod_memory_working_set_bytes",
            "Current working set of the pod in bytes",
            labels=_POD_LABELS,
        ),
        "scrape_error": GaugeMetricFamily(
            "scrape_error", "1 if there was an error while getting container metrics, 0 otherwise"
        ),
        "resource_scrape_error": GaugeMetricFamily(
            "resource_scrape_error",
            "1 if there was an error while getting container metrics, 0 otherwise",
        ),
    }


def _add(
    family: Any, labels: list[str], document: Mapping[str, Any] | None, field: str, scale: float
) -> None:
    value = _seconds(document, field, scale)
    if value is not None:
        family.add_metric(labels, value, timestamp=_stamp(document))


def _fill_resource_families(families: dict[str, Any], summary: Mapping[str, Any]) -> None:
    node = summary.get("node") or {}
    _add(families["node_cpu"], [], node.get("cpu"), "usageCoreNanoSeconds", 1e9)
    _add(families["node_memory"], [], node.get("memory"), "workingSetBytes", 1.0)
    for pod in summary.get("pods") or []:
        ref = pod.get("podRef") or {}
        pod_labels = [str(ref.get("name", "")), str(ref.get("namespace", ""))]
        for container in pod.get("containers") or []:
            labels = [str(container.get("name", "")), *pod_labels]
            started = parse_time(str(container.get("startTime") or ""))
            if started is not None and started > 0:
                families["container_start"].add_metric(labels, started)
            _add(
                families["container_cpu"], labels, container.get("cpu"), "usageCoreNanoSeconds", 1e9
            )
            _add(
                families["container_memory"],
                labels,
                container.get("memory"),
                "workingSetBytes",
                1.0,
            )
        _add(families["pod_cpu"], pod_labels, pod.get("cpu"), "usageCoreNanoSeconds", 1e9)
        _add(families["pod_memory"], pod_labels, pod.get("memory"), "workingSetBytes", 1.0)


class _OpMetrics:
    """The labelled children of one operation (``labels()`` is a locked dict lookup per call)."""

    __slots__ = ("calls", "errors", "latency", "name")

    def __init__(self, metrics: Metrics, op: str) -> None:
        self.name = RUNTIME_OPERATION_NAMES.get(op, op)
        self.calls = metrics.runtime_operations.labels(self.name)
        self.latency = metrics.runtime_latency.labels(self.name)
        # Made on the first failure: an error series appears only once an operation failed.
        self.errors: Counter | None = None


class _Timed:
    def __init__(self, metrics: Metrics, clock: Clock) -> None:
        self._metrics = metrics
        self._clock = clock
        self._ops: dict[str, _OpMetrics] = {}

    def _call(self, op: str, fn: Callable[[], R]) -> R:
        children = self._ops.get(op)
        if children is None:
            children = self._ops[op] = _OpMetrics(self._metrics, op)
        children.calls.inc()
        monotonic = self._clock.monotonic
        start = monotonic()
        try:
            return fn()
        except Exception:
            errors = children.errors
            if errors is None:
                errors = children.errors = self._metrics.runtime_errors.labels(children.name)
            errors.inc()
            raise
        finally:
            children.latency.observe(max(0.0, monotonic() - start))


class InstrumentedRuntime(_Timed):
    """A ContainerRuntime that counts and times every call of the one it wraps.

    Made by ``instrument_runtime``, which gives it the optional capabilities (``ResourceUpdater``,
    ``NodeClaims``) of the runtime it wraps and only those: callers find them with ``isinstance``
    on the wrapper, never by reaching under it."""

    def __init__(self, inner: ContainerRuntime, metrics: Metrics, clock: Clock | None = None):
        super().__init__(metrics, clock or SystemClock())
        self.inner = inner

    def version(self) -> RuntimeVersion:
        return self._call("version", self.inner.version)

    def run_sandbox(self, config: SandboxConfig) -> str:
        self._metrics.started_pods.inc()
        try:
            return self._call("run_sandbox", lambda: self.inner.run_sandbox(config))
        except Exception:
            self._metrics.started_pods_errors.inc()
            raise

    def stop_sandbox(self, sandbox_id: str) -> None:
        self._call("stop_sandbox", lambda: self.inner.stop_sandbox(sandbox_id))

    def remove_sandbox(self, sandbox_id: str) -> None:
        self._call("remove_sandbox", lambda: self.inner.remove_sandbox(sandbox_id))

    def list_sandboxes(self) -> list[RuntimeSandbox]:
        return self._call("list_sandboxes", self.inner.list_sandboxes)

    def sandbox_status(self, sandbox_id: str) -> RuntimeSandbox:
        return self._call("sandbox_status", lambda: self.inner.sandbox_status(sandbox_id))

    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str:
        return self._call(
            "create_container",
            lambda: self.inner.create_container(sandbox_id, config, sandbox_config),
        )

    def start_container(self, container_id: str) -> None:
        self._call("start_container", lambda: self.inner.start_container(container_id))

    def stop_container(self, container_id: str, timeout: float) -> None:
        self._call("stop_container", lambda: self.inner.stop_container(container_id, timeout))

    def remove_container(self, container_id: str) -> None:
        self._call("remove_container", lambda: self.inner.remove_container(container_id))

    def list_containers(self) -> list[RuntimeContainer]:
        return self._call("list_containers", self.inner.list_containers)

    def container_status(self, container_id: str) -> RuntimeContainer:
        return self._call("container_status", lambda: self.inner.container_status(container_id))

    def snapshot(self) -> RuntimeSnapshot:
        return self._call("snapshot", self.inner.snapshot)

    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult:
        return self._call("exec_sync", lambda: self.inner.exec_sync(container_id, command, timeout))

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        return self._call(
            "logs",
            lambda: self.inner.logs(
                container_id, tail=tail, follow=follow, since=since, timestamps=timestamps
            ),
        )

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> Subscription | None:
        return self._call("watch_events", lambda: self.inner.watch_events(handler))

    def container_stats(self) -> list[ContainerStats]:
        return self._call("container_stats", self.inner.container_stats)

    def close(self) -> None:
        self.inner.close()


class _TimedResourceUpdates(InstrumentedRuntime):
    """``ResourceUpdater``, for a wrapped runtime that is one."""

    def update_container_resources(self, container_id: str, resources: ContainerResources) -> None:
        updater = cast(ResourceUpdater, self.inner)
        self._call(
            "update_container_resources",
            lambda: updater.update_container_resources(container_id, resources),
        )


class _TimedNodeClaims(InstrumentedRuntime):
    """``NodeClaims``, for a wrapped runtime that is one."""

    def claim_node(
        self, node_name: str, holder: NodeHolder, ttl: float, *, replace: str = ""
    ) -> NodeClaim:
        claims = cast(NodeClaims, self.inner)
        return self._call(
            "claim_node", lambda: claims.claim_node(node_name, holder, ttl, replace=replace)
        )

    def release_node(self, node_name: str, holder: NodeHolder) -> None:
        claims = cast(NodeClaims, self.inner)
        self._call("release_node", lambda: claims.release_node(node_name, holder))


_CAPABILITY_WRAPPERS: dict[type, type[InstrumentedRuntime]] = {
    ResourceUpdater: _TimedResourceUpdates,
    NodeClaims: _TimedNodeClaims,
}
"""The wrapper part of each optional capability (``OPTIONAL_CAPABILITIES``)."""


def instrument_runtime(
    inner: ContainerRuntime, metrics: Metrics, clock: Clock | None = None
) -> InstrumentedRuntime:
    """``inner`` counted and timed, as an object with exactly its optional capabilities."""
    parts = tuple(_CAPABILITY_WRAPPERS[capability] for capability in capabilities(inner))
    return _wrapper_class(parts)(inner, metrics, clock)


@functools.cache
def _wrapper_class(parts: tuple[type[InstrumentedRuntime], ...]) -> type[InstrumentedRuntime]:
    """The wrapper class with these capability parts (one class per set, made once)."""
    if not parts:
        return InstrumentedRuntime
    if len(parts) == 1:
        return parts[0]
    return type("InstrumentedRuntime", parts, {"__doc__": InstrumentedRuntime.__doc__})


class InstrumentedPuller(_Timed):
    """A Puller that counts and times every call of the one it wraps."""

    def __init__(self, inner: Puller, metrics: Metrics, clock: Clock | None = None):
        super().__init__(metrics, clock or SystemClock())
        self.inner = inner

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        start = self._clock.monotonic()
        image_id = self._call("pull_image", lambda: self.inner.pull(image, auth, progress))
        took = self._clock.monotonic() - start
        try:
            pulled = self.inner.image_status(image)
        except Exception:
            pulled = None  # the pull worked; only its size label is unknown
        self._metrics.observe_image_pull(took, pulled.size if pulled is not None else 0)
        return image_id

    def image_status(self, image: str) -> Image | None:
        return self._call("image_status", lambda: self.inner.image_status(image))

    def list_images(self) -> list[Image]:
        return self._call("list_images", self.inner.list_images)

    def remove_image(self, image: str) -> None:
        self._call("remove_image", lambda: self.inner.remove_image(image))

    def image_fs_usage(self) -> ImageFsUsage | None:
        return self._call("image_fs_usage", self.inner.image_fs_usage)
