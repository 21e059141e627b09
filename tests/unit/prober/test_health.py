from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kubecore._contract.errors import ContainerNotFound, RuntimeTimeout
from kubecore._contract.values import ExecResult, ProbeOutcome, ProbeTarget
from kubecore._model.v1 import ExecAction, HTTPGetAction, HTTPHeader, Probe, TCPSocketAction
from kubecore._prober.health import DefaultHealthChecker, resolve_port


class ExecStub:
    """Only exec_sync is used by the checker."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str], float]] = []
        self.result: ExecResult | Exception = ExecResult(0, b"ok\n")

    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult:
        self.calls.append((container_id, command, timeout))
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


class Handler(http.server.BaseHTTPRequestHandler):
    seen_headers: list[dict[str, str]] = []
    block: threading.Event | None = None

    def do_GET(self) -> None:
        Handler.seen_headers.append(dict(self.headers.items()))
        if self.path == "/slow" and Handler.block is not None:
            Handler.block.wait(5)
        codes = {"/ok": 200, "/redirect": 302, "/missing": 404, "/error": 500, "/slow": 200}
        code = codes.get(self.path, 200)
        try:
            self.send_response(code)
            if code == 302:
                self.send_header("Location", "/ok")
            self.end_headers()
            self.wfile.write(b"body")
        except OSError:
            pass  # the prober gave up (timeout test)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    Handler.seen_headers = []
    Handler.block = threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        Handler.block.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def http_probe(port: int | str, path: str, **kw: Any) -> Probe:
    return Probe(http_get=HTTPGetAction(port=port, path=path, **kw), timeout_seconds=1)


def target(**named: int) -> ProbeTarget:
    return ProbeTarget("c1", "127.0.0.1", named)


@pytest.mark.parametrize(
    ("path", "outcome"),
    [
        ("/ok", ProbeOutcome.SUCCESS),
        ("/redirect", ProbeOutcome.SUCCESS),
        ("/missing", ProbeOutcome.FAILURE),
        ("/error", ProbeOutcome.FAILURE),
    ],
)
def test_http_status_codes(server: int, path: str, outcome: ProbeOutcome) -> None:
    result = DefaultHealthChecker(ExecStub()).check(http_probe(server, path), target())  # type: ignore[arg-type]
    assert result.outcome is outcome


def test_http_named_port_host_from_pod_ip_and_headers(server: int) -> None:
    probe = http_probe("web", "/ok", http_headers=(HTTPHeader("X-Probe", "yes"),))
    result = DefaultHealthChecker(ExecStub()).check(probe, target(web=server))  # type: ignore[arg-type]
    assert result.outcome is ProbeOutcome.SUCCESS
    assert Handler.seen_headers[-1]["X-Probe"] == "yes"
    assert Handler.seen_headers[-1]["User-Agent"].startswith("kube-probe/")


def test_http_timeout_is_a_failure(server: int) -> None:
    result = DefaultHealthChecker(ExecStub()).check(http_probe(server, "/slow"), target())  # type: ignore[arg-type]
    assert result.outcome is ProbeOutcome.FAILURE
    assert "timeout" in result.message


def test_http_connection_refused_is_a_failure() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        result = DefaultHealthChecker(ExecStub()).check(http_probe(port, "/"), target())  # type: ignore[arg-type]
    assert result.outcome is ProbeOutcome.FAILURE


def test_unknown_named_port_is_unknown() -> None:
    result = DefaultHealthChecker(ExecStub()).check(http_probe("nope", "/"), target())  # type: ignore[arg-type]
    assert result.outcome is ProbeOutcome.UNKNOWN
    assert "nope" in result.message


def test_no_host_and_no_pod_ip_is_unknown() -> None:
    probe = Probe(tcp_socket=TCPSocketAction(port=80))
    result = DefaultHealthChecker(ExecStub()).check(probe, ProbeTarget("c1", ""))  # type: ignore[arg-type]
    assert result.outcome is ProbeOutcome.UNKNOWN


def test_tcp_open_and_closed_ports() -> None:
    checker = DefaultHealthChecker(ExecStub())  # type: ignore[arg-type]
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        ok = checker.check(Probe(tcp_socket=TCPSocketAction(port=port)), target())
        assert ok.outcome is ProbeOutcome.SUCCESS
        named = checker.check(
            Probe(tcp_socket=TCPSocketAction(port="svc", host="127.0.0.1")), target(svc=port)
        )
        assert named.outcome is ProbeOutcome.SUCCESS
    closed = checker.check(Probe(tcp_socket=TCPSocketAction(port=port)), target())
    assert closed.outcome is ProbeOutcome.FAILURE


def test_exec_probe_outcomes() -> None:
    runtime = ExecStub()
    checker = DefaultHealthChecker(runtime)  # type: ignore[arg-type]
    probe = Probe(exec=ExecAction(("cat", "/tmp/healthy")), timeout_seconds=3)
    assert checker.check(probe, target()).outcome is ProbeOutcome.SUCCESS
    assert runtime.calls == [("c1", ["cat", "/tmp/healthy"], 3.0)]
    runtime.result = ExecResult(1, b"", b"no such file")
    failed = checker.check(probe, target())
    assert failed.outcome is ProbeOutcome.FAILURE
    assert "no such file" in failed.message
    runtime.result = RuntimeTimeout("slow")
    assert checker.check(probe, target()).outcome is ProbeOutcome.FAILURE
    runtime.result = ContainerNotFound("gone")
    assert checker.check(probe, target()).outcome is ProbeOutcome.UNKNOWN


def test_resolve_port() -> None:
    assert resolve_port(80, None) == 80
    assert resolve_port("8080", None) == 8080
    assert resolve_port("http", {"http": 81}) == 81
    with pytest.raises(ValueError):
        resolve_port("http", {})
    with pytest.raises(ValueError):
        resolve_port(70000, None)
