"""The kubelet-API tests' stand-ins: ``StubKubelet`` (an agent with scripted answers) and its
exec ``TOKEN``, ``get`` and ``assert_status`` for requests and v1 Status answers, and
``live_server`` (a real Kubelet on the fake runtime behind a ``KubeletServer``: the ``live``
fixture)."""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests
from prometheus_client import CollectorRegistry, Counter, generate_latest

from kubecore._contract.errors import ContainerNotFound
from kubecore._contract.values import ExecResult
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._model.v1 import (
    Container,
    ContainerState,
    ContainerStateRunning,
    ContainerStatus,
    ObjectMeta,
    Pod,
    PodSpec,
    PodStatus,
)

TOKEN = "s3cret-token"

END = object()
"""Put on ``StubKubelet.follow_queue``: the followed container stopped."""


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.syncs = Counter("kubecore_test_syncs", "syncs", registry=self.registry)
        self.syncs.inc(3)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def render_probes(self) -> bytes:
        return b"# probes\n"

    def render_resource(self) -> bytes:
        return b"# resource\n"


def running_pod(name: str, containers: tuple[str, ...] = ("main",)) -> Pod:
    return Pod(
        ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"),
        PodSpec(containers=tuple(Container(name=c, image="busybox:1.35") for c in containers)),
        PodStatus(
            phase="Running",
            container_statuses=tuple(
                ContainerStatus(
                    name=c,
                    image="busybox:1.35",
                    state=ContainerState(running=ContainerStateRunning("2024-01-01T00:00:00Z")),
                    ready=True,
                    started=True,
                )
                for c in containers
            ),
        ),
    )


class StubKubelet:
    """Stands in for the agent with scripted answers (a real Kubelet is used in test_live_*)."""

    def __init__(self) -> None:
        self._pods = [running_pod("web", ("httpd", "sidecar")), running_pod("db")]
        self.log_lines = [b"line one\n", b"line two\n", b"line three\n"]
        self.log_queries: list[dict[str, object]] = []
        self.follow_queue: queue.Queue[object] = queue.Queue()
        self.follow_closed = threading.Event()
        self.execs: list[tuple[str, str, str, list[str], float]] = []
        self.checks: list[tuple[str, str]] = [("ping", ""), ("syncloop", "")]
        self.metrics = _Metrics()

    def pods(self) -> list[Pod]:
        return list(self._pods)

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        for pod in self._pods:
            if (pod.metadata.namespace, pod.metadata.name) == (namespace, name):
                return pod
        return None

    @property
    def streams(self) -> StubKubelet:
        """The stub answers for its streams (``logs``, ``exec``) itself."""
        return self

    @property
    def views(self) -> StubKubelet:
        """The stub answers for its views (``stats_summary``, ``health_checks``) itself."""
        return self

    def logs(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        timestamps: bool = False,
        **query: object,
    ) -> Iterator[bytes]:
        self.log_queries.append(query)
        if container == "sidecar":
            raise ContainerNotFound("container sidecar has not started yet")
        lines = self.log_lines if tail is None else self.log_lines[len(self.log_lines) - tail :]
        if timestamps:
            lines = [b"2024-01-01T00:00:00Z " + line for line in lines]
        return self._follow(lines) if follow else iter(lines)

    def _follow(self, lines: list[bytes]) -> Iterator[bytes]:
        try:
            yield from lines
            for _ in range(1000):
                item = self.follow_queue.get(timeout=10)
                if item is END:
                    return
                assert isinstance(item, bytes)
                yield item
        finally:
            self.follow_closed.set()

    def exec(
        self, namespace: str, pod: str, container: str, command: list[str], *, timeout: float = 10
    ) -> ExecResult:
        self.execs.append((namespace, pod, container, command, timeout))
        return ExecResult(0, " ".join(command).encode() + b"\n", b"")

    def stats_summary(self) -> dict[str, Any]:
        return {"node": {"nodeName": "test-node"}, "pods": []}

    def health_checks(self) -> list[tuple[str, str]]:
        return list(self.checks)


def get(url: str, **kwargs: Any) -> requests.Response:
    return requests.get(url, timeout=10, **kwargs)


def assert_status(response: requests.Response, code: int, text: str = "") -> dict[str, Any]:
    assert response.status_code == code, response.text
    assert "Traceback" not in response.text
    body = response.json()
    assert body["kind"] == "Status" and body["code"] == code
    assert text in body["message"]
    return dict(body)


Live = tuple[Any, Any, KubeletServer]
"""What the ``live`` fixture gives: the Kubelet, its runtime, the server in front of it."""


@contextlib.contextmanager
def live_server(tmp_path: Path) -> Iterator[Live]:
    """A real Kubelet on the fake runtime, in virtual time, with the pod ``talker`` running,
    behind a ``KubeletServer`` (exec enabled with ``TOKEN``); stopped on exit."""
    from kubecore._agent.kubelet import Kubelet, KubeletConfig
    from kubecore._config.static import StaticSource
    from kubecore._plugins.registry import load_runtime
    from kubecore._util.clock import ManualClock

    clock = ManualClock()
    bundle = load_runtime("fake", clock=clock)
    kubelet = Kubelet.from_bundle(
        bundle,
        clock=clock,
        config=KubeletConfig(node_name="test-node", root_dir=str(tmp_path / "root")),
        sources=("api",),
    )
    talker = Pod(
        ObjectMeta(name="talker"),
        PodSpec(
            containers=(
                Container(
                    name="main",
                    image="busybox:1.35",
                    command=("sh", "-c", "echo hello; echo world; sleep 3600"),
                ),
            )
        ),
    )
    StaticSource([talker], sink=kubelet.update)
    assert kubelet.sync_until_converged(max_syncs=20)
    server = KubeletServer(
        kubelet, ServerConfig(port=0, enable_exec=True, exec_token=TOKEN, request_timeout=5.0)
    ).start()
    try:
        yield kubelet, bundle.runtime, server
    finally:
        server.stop()
        kubelet.stop()


def mid_body_clients(address: tuple[str, int], count: int) -> list[socket.socket]:
    """``count`` connections each in the middle of a request's body (the server said "100
    Continue" to its head): none of them is idle."""
    clients = []
    head = b"GET /pods HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n"
    for _ in range(count):
        sock = socket.create_connection(address, timeout=10)
        clients.append(sock)
        sock.sendall(head)
        assert sock.recv(4096).startswith(b"HTTP/1.1 100 Continue")
    return clients
