"""Prometheus metrics of one agent, in its own registry (no global state)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from kubecore._clock import Clock, SystemClock
from kubecore._runtime import (
    ContainerConfig,
    ContainerRuntime,
    ContainerStats,
    ExecResult,
    Image,
    ImageFsUsage,
    Puller,
    PullProgress,
    RegistryAuth,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeVersion,
    SandboxConfig,
    Subscription,
)

R = TypeVar("R")

_FAST = (0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_SLOW = (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, registry: CollectorRegistry | None = None, prefix: str = "kubecore") -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        p = prefix
        self.sync_duration = Histogram(
            f"{p}_sync_duration_seconds",
            "Duration of one full sync pass",
            registry=r,
            buckets=_FAST,
        )
        self.pod_worker_duration = Histogram(
            f"{p}_pod_worker_duration_seconds",
            "Duration of one pod sync by a pod worker",
            ["operation"],
            registry=r,
            buckets=_FAST,
        )
        self.runtime_operations = Counter(
            f"{p}_runtime_operations_total", "Runtime calls", ["operation"], registry=r
        )
        self.runtime_errors = Counter(
            f"{p}_runtime_operations_errors_total",
            "Failed runtime calls",
            ["operation"],
            registry=r,
        )
        self.runtime_latency = Histogram(
            f"{p}_runtime_operations_duration_seconds",
            "Duration of runtime calls",
            ["operation"],
            registry=r,
            buckets=_FAST,
        )
        self.running_pods = Gauge(f"{p}_running_pods", "Pods with a ready sandbox", registry=r)
        self.running_containers = Gauge(
            f"{p}_running_containers",
            "Managed containers by state",
            ["container_state"],
            registry=r,
        )
        self.pod_start_duration = Histogram(
            f"{p}_pod_start_duration_seconds",
            "Time from first seeing a pod to all its containers running",
            registry=r,
            buckets=_SLOW,
        )
        self.image_pull_duration = Histogram(
            f"{p}_image_pull_duration_seconds", "Duration of image pulls", registry=r, buckets=_SLOW
        )
        self.probe_results = Counter(
            f"{p}_prober_probe_total",
            "Probe results",
            ["probe_type", "result"],
            registry=r,
        )
        self.work_evictions = Counter(
            f"{p}_pod_worker_updates_replaced_total",
            "Pending pod work replaced by newer work before it ran",
            registry=r,
        )
        self.sync_errors = Counter(
            f"{p}_pod_sync_errors_total", "Pod syncs that ended in an error", registry=r
        )

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)

    def value(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """One sample's value (for tests and quick checks)."""
        return self.registry.get_sample_value(name, labels or {})


class _OpMetrics:
    """The labelled children of one operation (``labels()`` is a locked dict lookup per call)."""

    __slots__ = ("calls", "errors", "latency")

    def __init__(self, metrics: Metrics, op: str) -> None:
        self.calls = metrics.runtime_operations.labels(op)
        self.latency = metrics.runtime_latency.labels(op)
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
                errors = children.errors = self._metrics.runtime_errors.labels(op)
            errors.inc()
            raise
        finally:
            children.latency.observe(max(0.0, monotonic() - start))


class InstrumentedRuntime(_Timed):
    """A ContainerRuntime that counts and times every call of the one it wraps."""

    def __init__(self, inner: ContainerRuntime, metrics: Metrics, clock: Clock | None = None):
        super().__init__(metrics, clock or SystemClock())
        self.inner = inner

    def version(self) -> RuntimeVersion:
        return self._call("version", self.inner.version)

    def run_sandbox(self, config: SandboxConfig) -> str:
        return self._call("run_sandbox", lambda: self.inner.run_sandbox(config))

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
        try:
            return self._call("pull_image", lambda: self.inner.pull(image, auth, progress))
        finally:
            self._metrics.image_pull_duration.observe(max(0.0, self._clock.monotonic() - start))

    def image_status(self, image: str) -> Image | None:
        return self._call("image_status", lambda: self.inner.image_status(image))

    def list_images(self) -> list[Image]:
        return self._call("list_images", self.inner.list_images)

    def remove_image(self, image: str) -> None:
        self._call("remove_image", lambda: self.inner.remove_image(image))

    def image_fs_usage(self) -> ImageFsUsage | None:
        return self._call("image_fs_usage", self.inner.image_fs_usage)
