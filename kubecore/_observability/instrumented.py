"""The runtime and image service counted and timed: wrappers that record every call in the
agent's ``kubelet_runtime_operations_*`` metrics, with exactly the optional capabilities of the
runtime they wrap."""

from __future__ import annotations

import functools
import socket
from collections.abc import Callable, Iterator
from typing import TypeVar, cast

from prometheus_client import Counter

from kubecore._contract.capabilities import (
    ContainerLogReopener,
    HostMemoryVolumes,
    InProcessMounts,
    NodeClaim,
    NodeClaims,
    NodeHolder,
    ResourceUpdater,
    capabilities,
)
from kubecore._contract.protocols import ContainerRuntime, Puller, Subscription
from kubecore._contract.streaming import (
    PortForwarder,
    StreamingRuntime,
    StreamSession,
    TerminalSize,
)
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
from kubecore._observability.metrics import Metrics
from kubecore._util.clock import Clock, SystemClock

R = TypeVar("R")

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


class _TimedStreams(InstrumentedRuntime):
    """``StreamingRuntime``, for a wrapped runtime that is one: the start of a session is
    timed, not the session."""

    def exec_stream(
        self,
        container_id: str,
        command: list[str],
        *,
        stdin: bool,
        tty: bool,
        size: TerminalSize | None = None,
    ) -> StreamSession:
        streams = cast(StreamingRuntime, self.inner)
        return self._call(
            "exec_stream",
            lambda: streams.exec_stream(container_id, command, stdin=stdin, tty=tty, size=size),
        )

    def attach(self, container_id: str, *, stdin: bool, tty: bool) -> StreamSession:
        streams = cast(StreamingRuntime, self.inner)
        return self._call("attach", lambda: streams.attach(container_id, stdin=stdin, tty=tty))


class _TimedPortForwards(InstrumentedRuntime):
    """``PortForwarder``, for a wrapped runtime that is one (the connection is timed)."""

    def port_forward(self, sandbox_id: str, port: int, timeout: float) -> socket.socket:
        forwarder = cast(PortForwarder, self.inner)
        return self._call("port_forward", lambda: forwarder.port_forward(sandbox_id, port, timeout))


class _TimedLogReopens(InstrumentedRuntime):
    """``ContainerLogReopener``, for a wrapped runtime that is one."""

    def reopen_container_log(self, container_id: str) -> None:
        reopener = cast(ContainerLogReopener, self.inner)
        self._call("reopen_container_log", lambda: reopener.reopen_container_log(container_id))


class _HostMemoryVolumes(InstrumentedRuntime):
    """``HostMemoryVolumes``, for a wrapped runtime that is one (nothing to time)."""

    def binds_host_memory_volumes(self) -> bool:
        return cast(HostMemoryVolumes, self.inner).binds_host_memory_volumes()


class _InProcessMounts(InstrumentedRuntime):
    """``InProcessMounts``, for a wrapped runtime that is one (nothing to time)."""

    def reads_mounts_in_process(self) -> bool:
        return cast(InProcessMounts, self.inner).reads_mounts_in_process()


_CAPABILITY_WRAPPERS: dict[type, type[InstrumentedRuntime]] = {
    ResourceUpdater: _TimedResourceUpdates,
    NodeClaims: _TimedNodeClaims,
    StreamingRuntime: _TimedStreams,
    PortForwarder: _TimedPortForwards,
    ContainerLogReopener: _TimedLogReopens,
    HostMemoryVolumes: _HostMemoryVolumes,
    InProcessMounts: _InProcessMounts,
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
