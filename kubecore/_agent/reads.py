"""What the agent answers its readers (its HTTP server, the API, the command, embedders): the
desired pods with their status, the recent events, a container's logs, a command run in a
container, the Summary API's stats and the health checks."""

from __future__ import annotations

import functools
import socket
from collections.abc import Callable, Iterator
from typing import Any

from kubecore._agent.desired import PodReport
from kubecore._agent.wiring import Rooms
from kubecore._contract.errors import (
    ContainerNotFound,
    ContainerRuntimeError,
    NotFound,
    SandboxNotFound,
    StreamingUnsupported,
)
from kubecore._contract.labels import POD_UID_LABEL, owned_by
from kubecore._contract.observed import container_age, newest_sandbox
from kubecore._contract.observed import container_name as container_name_of
from kubecore._contract.streaming import (
    PortForwarder,
    StreamingRuntime,
    StreamSession,
    TerminalSize,
)
from kubecore._contract.values import (
    Event,
    ExecResult,
    RuntimeContainer,
    RuntimeState,
    SandboxState,
)
from kubecore._model.v1 import Pod
from kubecore._observability.logs import LogOptions, limited, log_container_id


class Reads:
    """The agent's answers, read from its rooms; ``loop_problem`` says why the sync loop is
    unhealthy ('' when it is healthy)."""

    def __init__(self, rooms: Rooms, loop_problem: Callable[[], str]) -> None:
        self._rooms = rooms
        self._loop_problem = loop_problem

    def pods(self) -> list[Pod]:
        self._rooms.refresh_desired()
        return self._rooms.desired.listing()

    def pod_reports(self) -> list[PodReport]:
        self._rooms.refresh_desired()
        return self._rooms.desired.reports()

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        for pod in self.pods():
            if pod.metadata.namespace == namespace and pod.metadata.name == name:
                return pod
        return None

    def recent_events(
        self,
        limit: int | None,
        *,
        namespace: str | None,
        name: str | None,
        reason: str | None,
    ) -> list[Event]:
        events = self._rooms.events.events(namespace=namespace, name=name, reason=reason)
        return events[-limit:] if limit else events

    def find_container(
        self, namespace: str, pod_name: str, container: str, *, running: bool = False
    ) -> RuntimeContainer:
        """The newest container ``container`` of the pod (running, with ``running``) this
        agent made; NotFound / ContainerNotFound when there is none."""
        pod = self.get_pod(namespace, pod_name)
        if pod is None:
            raise NotFound(f"pod {namespace}/{pod_name} is not on this node")
        rooms = self._rooms
        snapshot = rooms.runtime.snapshot()
        candidates = [
            c
            for c in snapshot.containers
            if c.labels.get(POD_UID_LABEL) == pod.uid
            and container_name_of(c) == container
            and owned_by(c.labels, rooms.config.node_name)
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
        tail: int | None,
        follow: bool,
        timestamps: bool,
        previous: bool,
        since_seconds: int | None,
        since_time: float | None,
        limit_bytes: int | None,
    ) -> Iterator[bytes]:
        pod = self.get_pod(namespace, pod_name)
        if pod is None:
            raise NotFound(f"pod {namespace}/{pod_name} is not on this node")
        spec = pod.spec
        if container not in {
            c.name for c in (*spec.containers, *spec.init_containers, *spec.ephemeral_containers)
        }:
            raise ContainerNotFound(
                f"pod {namespace}/{pod_name} has no container named {container!r}"
            )
        options = LogOptions(since_seconds=since_seconds, since_time=since_time)
        container_id = log_container_id(pod, container, previous=previous)
        stream = self._rooms.runtime.logs(
            container_id,
            tail=tail,
            follow=follow,
            since=options.since(self._rooms.clock.now()),
            timestamps=timestamps,
        )
        return limited(stream, limit_bytes)

    def exec(
        self, namespace: str, pod_name: str, container: str, command: list[str], timeout: float
    ) -> ExecResult:
        found = self.find_container(namespace, pod_name, container, running=True)
        return self._rooms.runtime.exec_sync(found.id, list(command), timeout)

    def exec_stream(
        self,
        target: tuple[str, str, str],
        command: list[str],
        *,
        stdin: bool,
        tty: bool,
        size: TerminalSize | None,
    ) -> StreamSession:
        runtime = self._streams()
        found = self.find_container(*target, running=True)
        return runtime.exec_stream(found.id, list(command), stdin=stdin, tty=tty, size=size)

    def attach(self, target: tuple[str, str, str], *, stdin: bool, tty: bool) -> StreamSession:
        runtime = self._streams()
        found = self.find_container(*target, running=True)
        return runtime.attach(found.id, stdin=stdin, tty=tty)

    def _streams(self) -> StreamingRuntime:
        runtime = self._rooms.runtime
        if not isinstance(runtime, StreamingRuntime):
            try:
                name = f"the {runtime.version().runtime_name!r} runtime"
            except ContainerRuntimeError:
                name = "this node's runtime"
            raise StreamingUnsupported(
                f"{name} cannot stream: exec and "
                "attach need a runtime with the StreamingRuntime capability (use "
                "/run/{namespace}/{pod}/{container} for a command's output)"
            )
        return runtime

    def port_forwarder(
        self, namespace: str, pod_name: str
    ) -> Callable[[int, float], socket.socket]:
        """A connector to ports of the pod's ready sandbox: ``connect(port, timeout)``. Raises
        NotFound for a pod not on this node, SandboxNotFound for a pod without a ready sandbox,
        StreamingUnsupported for a runtime that cannot forward ports."""
        pod = self.get_pod(namespace, pod_name)
        if pod is None:
            raise NotFound(f"pod {namespace}/{pod_name} is not on this node")
        rooms = self._rooms
        runtime = rooms.runtime
        if not isinstance(runtime, PortForwarder):
            name = type(runtime).__name__
            raise StreamingUnsupported(
                f"the container runtime ({name}) cannot forward ports: it does not implement "
                "kubecore.runtime.PortForwarder"
            )
        sandbox = newest_sandbox(
            s
            for s in runtime.snapshot().sandboxes
            if s.labels.get(POD_UID_LABEL) == pod.uid
            and s.state is SandboxState.READY
            and owned_by(s.labels, rooms.config.node_name)
        )
        if sandbox is None:
            raise SandboxNotFound(
                f"pod {namespace}/{pod_name} has no running sandbox to forward ports to"
            )
        return functools.partial(runtime.port_forward, sandbox.id)

    def stats_summary(self) -> dict[str, Any]:
        return self._rooms.stats.summary(self.pods(), self._rooms.clock.now())

    def resource_summary(self) -> dict[str, Any]:
        """The Summary API's CPU and memory figures (``/metrics/resource``)."""
        return self._rooms.stats.summary(
            self.pods(), self._rooms.clock.now(), cpu_and_memory_only=True
        )

    def health_checks(self) -> list[tuple[str, str]]:
        checks = [("ping", "")]
        for name, problem in (
            ("syncloop", self._loop_problem()),
            ("runtime", self._runtime_problem()),
        ):
            checks.append((name, f"failed: {problem}" if problem else ""))
        pod_config = self._rooms.pod_config
        reasons = pod_config.not_ready_reasons()
        for source in pod_config.sources:
            reason = reasons.get(source)
            checks.append((f"source {source}", f"not ready: {reason}" if reason else ""))
        return checks

    def _runtime_problem(self) -> str:
        try:
            self._rooms.runtime.version()
        except ContainerRuntimeError as exc:
            return f"container runtime is down: {exc}"
        except Exception as exc:
            return f"container runtime check failed: {exc!r}"
        return ""

    def healthz(self) -> tuple[bool, str]:
        problem = self._runtime_problem() or self._loop_problem()
        return (False, problem) if problem else (True, "ok")
