"""Checks of ``PortForwarder`` (what ``kubectl port-forward`` reaches): a connection to a server
listening in the sandbox, several at once, a port nothing listens on, an unknown sandbox.
Skipped for a runtime that does not forward ports, or whose workloads cannot serve TCP."""

from __future__ import annotations

import contextlib
import socket

import pytest

from kubecore._contract.errors import ContainerRuntimeError, NotFound
from kubecore._contract.streaming import PortForwarder
from kubecore._contract.values import RuntimeState
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import Harness

_CONNECT_TIMEOUT = 5.0
_MAX_ANSWER = 1024 * 1024


def _forwarder(harness: Harness) -> PortForwarder:
    runtime = harness.runtime
    if not isinstance(runtime, PortForwarder):
        harness.not_checked("port forwarding (PortForwarder)", "the runtime does not forward ports")
    if harness.workloads.serve_tcp is None:
        harness.unseen("the workloads cannot serve TCP (serve_tcp is None)")
    return runtime


def _http_get(sock: socket.socket, timeout: float) -> bytes:
    """GET / over ``sock`` and what the server answers until it closes."""
    with sock:
        sock.settimeout(timeout)
        sock.sendall(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
        answer = b""
        while len(answer) <= _MAX_ANSWER and (chunk := sock.recv(65536)):
            answer += chunk
        return answer


class PortForwardChecks(PluginFixtures):
    """Connections into a sandbox's network namespace."""

    def _serving(self, harness: Harness) -> tuple[PortForwarder, str]:
        forwarder = _forwarder(harness)
        w = harness.workloads
        assert w.serve_tcp is not None
        sandbox = harness.run_sandbox()
        server = harness.start(sandbox, w.serve_tcp(w.tcp_port), name="server")
        harness.wait_state(server, RuntimeState.RUNNING)
        return forwarder, sandbox[0]

    def _connect(
        self, harness: Harness, forwarder: PortForwarder, sandbox_id: str
    ) -> socket.socket:
        port = harness.workloads.tcp_port

        def connected() -> socket.socket | None:
            # The server may still be binding its port: a refusal is tried again.
            with contextlib.suppress(ContainerRuntimeError):
                return forwarder.port_forward(sandbox_id, port, _CONNECT_TIMEOUT)
            return None

        return harness.wait(connected, f"port {port} of sandbox {sandbox_id} to accept")

    def test_port_forward_reaches_a_server_in_the_sandbox(self, harness: Harness) -> None:
        forwarder, sandbox_id = self._serving(harness)
        answer = _http_get(self._connect(harness, forwarder, sandbox_id), harness.workloads.timeout)
        assert answer.startswith(b"HTTP/1."), answer[:200]

    def test_port_forward_connections_run_at_once(self, harness: Harness) -> None:
        forwarder, sandbox_id = self._serving(harness)
        first = self._connect(harness, forwarder, sandbox_id)
        second = self._connect(harness, forwarder, sandbox_id)
        timeout = harness.workloads.timeout
        assert _http_get(second, timeout).startswith(b"HTTP/1.")
        assert _http_get(first, timeout).startswith(b"HTTP/1.")

    def test_port_forward_to_a_closed_port_names_it(self, harness: Harness) -> None:
        forwarder = _forwarder(harness)
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        port = harness.workloads.tcp_port + 1
        with pytest.raises(ContainerRuntimeError, match=str(port)):
            forwarder.port_forward(sandbox[0], port, _CONNECT_TIMEOUT).close()

    def test_port_forward_to_an_unknown_sandbox(self, harness: Harness) -> None:
        forwarder = _forwarder(harness)
        with pytest.raises(NotFound):
            forwarder.port_forward(f"{harness.prefix}-no-such-sandbox", 80, _CONNECT_TIMEOUT)
