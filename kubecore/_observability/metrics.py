"""Prometheus metrics of one agent, in its own registries (no global state).

Three registries, served as the kubelet serves them: ``registry`` on ``/metrics`` (the kubelet's
``kubelet_*`` names where kubecore measures the same thing, ``kubecore_*`` for what only kubecore
measures), ``probe_registry`` on ``/metrics/probes`` (``prober_*``) and ``resource_registry`` on
``/metrics/resource`` (node, pod and container CPU and memory, read from the stats summary at each
scrape). Names, types, labels and buckets follow the kubelet's (pkg/kubelet/metrics).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

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

from kubecore._util.timefmt import parse_time

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


class _Family(NamedTuple):
    """One metric family: the ``Metrics`` attribute that holds it, its type, its name and help
    text (the kubelet's, where it has the family), its label names and a histogram's buckets."""

    attribute: str
    kind: type[Gauge] | type[Counter] | type[Histogram] | type[_BareCounter]
    name: str
    documentation: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] | None = None


_POD_FAMILIES = (
    _Family(
        "node_name",
        Gauge,
        "kubelet_node_name",
        "The node's name. The count is always 1.",
        ("node",),
    ),
    _Family(
        "running_pods",
        Gauge,
        "kubelet_running_pods",
        "Number of pods that have a running pod sandbox",
    ),
    _Family(
        "running_containers",
        Gauge,
        "kubelet_running_containers",
        "Number of containers currently running",
        ("container_state",),
    ),
    _Family(
        "desired_pods",
        Gauge,
        "kubelet_desired_pods",
        "The number of pods the kubelet is being instructed to run. static is true if the pod "
        "is not from the apiserver.",
        ("static",),
    ),
    _Family(
        "active_pods",
        Gauge,
        "kubelet_active_pods",
        "The number of pods the kubelet considers active and which are being considered when "
        "admitting new pods. static is true if the pod is not from the apiserver.",
        ("static",),
    ),
    _Family(
        "working_pods",
        Gauge,
        "kubelet_working_pods",
        "Number of pods the kubelet is actually running, broken down by lifecycle phase, "
        "whether the pod is desired, orphaned, or runtime only (also orphaned), and whether "
        "the pod is static.",
        ("lifecycle", "config", "static"),
    ),
    _Family(
        "restarted_pods",
        Counter,
        "kubelet_restarted_pods_total",
        "Number of pods that have been restarted because they were deleted and recreated "
        "with the same UID while the kubelet was watching them",
        ("static",),
    ),
)
"""The node, and the pods and containers it runs."""

_POD_WORKER_FAMILIES = (
    _Family(
        "pod_start_duration",
        Histogram,
        "kubelet_pod_start_duration_seconds",
        "Duration in seconds from kubelet seeing a pod for the first time to the pod starting "
        "to run",
        (),
        POD_START_BUCKETS,
    ),
    _Family(
        "pod_start_sli_duration",
        Histogram,
        "kubelet_pod_start_sli_duration_seconds",
        "Duration in seconds to start a pod, excluding time to pull images, measured from "
        "the kubelet seeing the pod to when all its containers are reported as started",
        (),
        POD_START_BUCKETS,
    ),
    _Family(
        "pod_worker_duration",
        Histogram,
        "kubelet_pod_worker_duration_seconds",
        "Duration in seconds to sync a single pod. Broken down by operation type: create, "
        "update, or sync",
        ("operation_type",),
        DEF_BUCKETS,
    ),
    _Family(
        "pod_worker_start_duration",
        Histogram,
        "kubelet_pod_worker_start_duration_seconds",
        "Duration in seconds from kubelet seeing a pod to starting a worker.",
        (),
        DEF_BUCKETS,
    ),
)
"""Pod starts and the pod workers' syncs."""

_RUNTIME_FAMILIES = (
    _Family(
        "runtime_operations",
        Counter,
        "kubelet_runtime_operations_total",
        "Cumulative number of runtime operations by operation type.",
        ("operation_type",),
    ),
    _Family(
        "runtime_errors",
        Counter,
        "kubelet_runtime_operations_errors_total",
        "Cumulative number of runtime operation errors by operation type.",
        ("operation_type",),
    ),
    _Family(
        "runtime_latency",
        Histogram,
        "kubelet_runtime_operations_duration_seconds",
        "Duration in seconds of runtime operations. Broken down by operation type.",
        ("operation_type",),
        RUNTIME_OPERATION_BUCKETS,
    ),
)
"""The runtime's operations (counted and timed by ``instrumented``)."""

_RELIST_FAMILIES = (
    _Family(
        "pleg_relist_duration",
        Histogram,
        "kubelet_pleg_relist_duration_seconds",
        "Duration in seconds for relisting pods in PLEG.",
        (),
        DEF_BUCKETS,
    ),
    _Family(
        "pleg_relist_interval",
        Histogram,
        "kubelet_pleg_relist_interval_seconds",
        "Interval in seconds between relisting in PLEG.",
        (),
        DEF_BUCKETS,
    ),
    _Family(
        "pleg_last_seen",
        Gauge,
        "kubelet_pleg_last_seen_seconds",
        "Timestamp in seconds when PLEG was last seen active.",
    ),
)
"""The relist (the kubelet's PLEG)."""

_START_FAMILIES = (
    _Family(
        "started_pods",
        Counter,
        "kubelet_started_pods_total",
        "Cumulative number of pods started",
    ),
    _Family(
        "started_pods_errors",
        Counter,
        "kubelet_started_pods_errors_total",
        "Cumulative number of errors when starting pods",
    ),
    _Family(
        "started_containers",
        Counter,
        "kubelet_started_containers_total",
        "Cumulative number of containers started",
        ("container_type",),
    ),
    _Family(
        "started_containers_errors",
        Counter,
        "kubelet_started_containers_errors_total",
        "Cumulative number of errors when starting containers",
        ("container_type", "code"),
    ),
)
"""Sandboxes and containers started, and the starts that failed."""

_EVICTION_FAMILIES = (
    _Family(
        "evictions",
        _BareCounter,
        "kubelet_evictions",
        "Cumulative number of pod evictions by eviction signal",
        ("eviction_signal",),
    ),
)
"""Pods evicted under node pressure."""

_IMAGE_FAMILIES = (
    _Family(
        "image_pull_duration",
        Histogram,
        "kubelet_image_pull_duration_seconds",
        "Duration in seconds to pull an image.",
        ("image_size_in_bytes",),
        IMAGE_PULL_BUCKETS,
    ),
)
"""Image pulls."""

_SYNC_FAMILIES = (
    _Family(
        "sync_duration",
        Histogram,
        "kubecore_sync_duration_seconds",
        "Duration of one full sync pass (relist, probes due, pods dispatched, housekeeping)",
        (),
        _FAST,
    ),
    _Family(
        "work_evictions",
        Counter,
        "kubecore_pod_worker_updates_replaced_total",
        "Pending pod work replaced by newer work before it ran",
    ),
    _Family(
        "sync_errors",
        Counter,
        "kubecore_pod_sync_errors_total",
        "Pod syncs that ended in an error",
    ),
)
"""kubecore's own: the sync loop."""

_PROBE_FAMILIES = (
    _Family(
        "probe_results",
        Counter,
        "prober_probe_total",
        "Cumulative number of a liveness, readiness or startup probe for a container by result.",
        ("probe_type", "result", "container", "pod", "namespace", "pod_uid"),
    ),
    _Family(
        "probe_duration",
        Histogram,
        "prober_probe_duration_seconds",
        "Duration in seconds for a probe response.",
        ("probe_type", "container", "pod", "namespace"),
        DEF_BUCKETS,
    ),
)
"""``/metrics/probes``."""

_MAIN_FAMILIES = (
    *_POD_FAMILIES,
    *_POD_WORKER_FAMILIES,
    *_RUNTIME_FAMILIES,
    *_RELIST_FAMILIES,
    *_START_FAMILIES,
    *_EVICTION_FAMILIES,
    *_IMAGE_FAMILIES,
    *_SYNC_FAMILIES,
)
"""The families of ``/metrics``, in the order they are exposed."""


def _register(family: _Family, registry: CollectorRegistry) -> Any:
    """The family's metric, made and registered."""
    kind = family.kind
    if issubclass(kind, _BareCounter):
        bare = _BareCounter(family.name, family.documentation, family.labels)
        registry.register(bare)
        return bare
    if issubclass(kind, Histogram):
        buckets = family.buckets if family.buckets is not None else Histogram.DEFAULT_BUCKETS
        return Histogram(
            family.name, family.documentation, family.labels, registry=registry, buckets=buckets
        )
    return kind(family.name, family.documentation, family.labels, registry=registry)


class Metrics:
    """The agent's metric families, one attribute each (declared in the tables above), in the
    three registries it serves."""

    content_type = CONTENT_TYPE_LATEST

    # One attribute a family, made from the tables above.
    node_name: Gauge
    running_pods: Gauge
    running_containers: Gauge
    desired_pods: Gauge
    active_pods: Gauge
    working_pods: Gauge
    restarted_pods: Counter
    pod_start_duration: Histogram
    pod_start_sli_duration: Histogram
    pod_worker_duration: Histogram
    pod_worker_start_duration: Histogram
    runtime_operations: Counter
    runtime_errors: Counter
    runtime_latency: Histogram
    pleg_relist_duration: Histogram
    pleg_relist_interval: Histogram
    pleg_last_seen: Gauge
    started_pods: Counter
    started_pods_errors: Counter
    started_containers: Counter
    started_containers_errors: Counter
    evictions: _BareCounter
    image_pull_duration: Histogram
    sync_duration: Histogram
    work_evictions: Counter
    sync_errors: Counter
    probe_results: Counter
    probe_duration: Histogram

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.probe_registry = CollectorRegistry(auto_describe=True)
        self.resource_registry = CollectorRegistry(auto_describe=True)
        for family in _MAIN_FAMILIES:
            setattr(self, family.attribute, _register(family, self.registry))
        for family in _PROBE_FAMILIES:
            setattr(self, family.attribute, _register(family, self.probe_registry))
        self._resources = ResourceCollector()
        self.resource_registry.register(self._resources)
        self._probe_series_lock = threading.Lock()
        self._probe_series: dict[str, set[tuple[str, ...]]] = {}
        self._duration_series: dict[str, set[tuple[str, ...]]] = {}

    def set_node_name(self, node: str) -> None:
        """Set ``kubelet_node_name`` to this node (the one series, value 1)."""
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
        """Record one image pull of ``seconds`` and ``size`` bytes
        (``kubelet_image_pull_duration_seconds``, by size bucket)."""
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
