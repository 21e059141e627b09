"""Port-forward with the official ``kubernetes`` Python client (``kubernetes.stream.portforward``,
a WebSocket on ``v4.channel.k8s.io``), as its own end-to-end tests use it: several ports in one
session, one with nothing listening (its socket closes and its error is set), ten sessions one
after another, the session gone once the program closed its sockets, and an HTTP GET through
a forwarded socket. Against a node on the in-memory runtime whose pod serves ``ok`` over HTTP on
8080 and echoes on 9000."""

from __future__ import annotations

import http.client
import select
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kubecore._config.static import StaticSource
from kubecore._manifest import load_pods_from_string
from tests.api.kubectl_support import TOKEN, is_ready, running_node, wait_for
from tests.api.port_forward_support import WEB_POD

client = pytest.importorskip("kubernetes.client")
stream = pytest.importorskip("kubernetes.stream")

WAIT = 30.0


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with running_node(tmp_path_factory.mktemp("pf-kubernetes-client")) as found:
        StaticSource(load_pods_from_string(WEB_POD), name="file", sink=found.kubelet.update)
        wait_for(lambda: is_ready(found.kubelet, "web"), what="the pod web to be ready")
        config = client.Configuration(host=f"http://127.0.0.1:{found.http.port}")
        config.api_key = {"authorization": f"Bearer {TOKEN}"}
        with client.ApiClient(config) as api_client:
            yield client.CoreV1Api(api_client)


def _echo(sock: Any, sent: bytes) -> bytes:
    sock.sendall(sent)
    reply = b""
    deadline = time.monotonic() + WAIT
    while reply != sent:
        assert time.monotonic() < deadline, f"only {reply!r} of {sent!r} came back"
        readable, _, _ = select.select([sock], [], [], 1)
        if readable:
            data = sock.recv(1024)
            assert data, f"the socket closed after {reply!r}"
            reply += data
            assert sent.startswith(reply)
    return reply


def test_ports_in_one_session_one_refused_ten_times(api: Any) -> None:
    for round_ in range(10):
        pf = stream.portforward(
            api.connect_get_namespaced_pod_portforward, "web", "default", ports="9000,7777"
        )
        assert pf.connected
        echo = pf.socket(9000)
        echo.setblocking(True)
        _echo(echo, b"round %d through the node" % round_)
        refused = pf.socket(7777)
        refused.setblocking(True)
        assert refused.recv(1024) == b""  # nothing listens there: its socket closes
        assert "error forwarding port 7777" in (pf.error(7777) or "")
        refused.close()
        _echo(echo, b"and again on fileno %d" % echo.fileno())
        echo.close()
        deadline = time.monotonic() + WAIT
        while pf.connected:  # every socket closed: the client ends the session
            assert time.monotonic() < deadline, "the session outlived its sockets"
            time.sleep(0.05)
        assert pf.error(9000) is None


def test_an_http_get_through_a_forwarded_socket(api: Any) -> None:
    pf = stream.portforward(
        api.connect_get_namespaced_pod_portforward, "web", "default", ports="8080"
    )
    connection = http.client.HTTPConnection("web.default.kubernetes", 8080, timeout=WAIT)
    connection.sock = pf.socket(8080)  # type: ignore[assignment]
    connection.request("GET", "/")
    response = connection.getresponse()
    assert response.status == 200
    assert response.read() == b"ok\n"
    connection.close()
