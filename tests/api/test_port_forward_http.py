"""Port-forward sessions over HTTP without kubectl: who may open one (the API's token, the
kubelet's exec token), what an upgrade must carry, the v1 Status for a pod that cannot be
forwarded to, and a session driven by a SPDY client on both routes."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path

import pytest

from kubecore._apimachinery.rules import HTTPError
from kubecore._config.static import StaticSource
from kubecore._contract.errors import SandboxNotFound, StreamingUnsupported
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._manifest import load_pods_from_string
from kubecore._streaming.portforward_http import SocketTransport, connector
from kubecore._streaming.spdy_connection import SpdyConnection
from tests.api.kubectl_support import TOKEN, Node, is_ready, running_node, wait_for
from tests.api.port_forward_support import SPDY_UPGRADE, WEB_POD, upgrade

EXEC_TOKEN = "exec-token"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Node, KubeletServer]]:
    tmp = tmp_path_factory.mktemp("port-forward-http")
    with running_node(tmp) as found:
        StaticSource(load_pods_from_string(WEB_POD), name="file", sink=found.kubelet.update)
        wait_for(lambda: is_ready(found.kubelet, "web"), what="the pod web to be ready")
        config = ServerConfig(port=0, enable_exec=True, exec_token=EXEC_TOKEN)
        kubelet_server = KubeletServer(found.kubelet, config).start()
        try:
            yield found, kubelet_server
        finally:
            kubelet_server.stop()


def _address(server: KubeletServer) -> tuple[str, int]:
    return server.address, server.port


def _status(answer: bytes, code: int) -> dict[str, object]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {code} ".encode()), answer
    status: dict[str, object] = json.loads(body)
    assert status["kind"] == "Status" and status["code"] == code
    return status


def _echo_session(sock: socket.socket) -> bytes:
    client = SpdyConnection(SocketTransport(sock), client=True, flow_control=False)
    reader = threading.Thread(target=client.serve, daemon=True)
    reader.start()
    headers = (("streamtype", "error"), ("port", "9000"), ("requestid", "0"))
    error = client.open_stream(headers)
    error.close()
    data = client.open_stream((("streamtype", "data"), *headers[1:]))
    data.write(b"through the node")
    data.close()
    answer = b""
    while chunk := data.read():
        answer += chunk
    client.close()
    reader.join(10)
    sock.close()
    return answer


def test_the_api_route_needs_the_token_even_on_loopback(node: tuple[Node, KubeletServer]) -> None:
    found, _ = node
    path = "/api/v1/namespaces/default/pods/web/portforward"
    sock, answer = upgrade(_address(found.http), path, SPDY_UPGRADE)
    sock.close()
    assert "bearer token" in str(_status(answer, 401)["message"])
    sock, answer = upgrade(
        _address(found.http), path, {**SPDY_UPGRADE, "Authorization": f"Bearer {TOKEN}"}
    )
    assert answer.startswith(b"HTTP/1.1 101 Switching Protocols\r\n"), answer
    assert b"\r\nUpgrade: SPDY/3.1\r\n" in answer
    assert b"\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\n" in answer
    assert _echo_session(sock) == b"through the node"


def test_the_kubelet_route_needs_its_exec_token(node: tuple[Node, KubeletServer]) -> None:
    _, server = node
    path = "/portForward/default/web"
    sock, answer = upgrade(_address(server), path, SPDY_UPGRADE)
    sock.close()
    _status(answer, 401)
    good = {**SPDY_UPGRADE, "Authorization": f"Bearer {EXEC_TOKEN}"}
    sock, answer = upgrade(_address(server), path, good)
    assert answer.startswith(b"HTTP/1.1 101 "), answer
    assert _echo_session(sock) == b"through the node"


@pytest.mark.parametrize(
    ("headers", "code", "text"),
    [
        ({"Connection": "Upgrade", "Upgrade": "SPDY/3.1"}, 400, "X-Stream-Protocol-Version is"),
        ({**SPDY_UPGRADE, "X-Stream-Protocol-Version": "v9.example"}, 403, "unable to negotiate"),
        ({"Connection": "keep-alive"}, 400, "needs an upgrade"),
        ({**SPDY_UPGRADE, "Connection": "keep-alive"}, 400, "missing upgrade headers"),
    ],
)
def test_what_an_upgrade_must_carry(
    node: tuple[Node, KubeletServer], headers: dict[str, str], code: int, text: str
) -> None:
    _, server = node
    headers = {**headers, "Authorization": f"Bearer {EXEC_TOKEN}"}
    sock, answer = upgrade(_address(server), "/portForward/default/web", headers)
    sock.close()
    assert text in str(_status(answer, code)["message"])
    if code == 403:
        assert b"X-Accepted-Stream-Protocol-Versions: portforward.k8s.io" in answer


def test_a_pod_not_on_the_node_is_404(node: tuple[Node, KubeletServer]) -> None:
    found, server = node
    headers = {**SPDY_UPGRADE, "Authorization": f"Bearer {EXEC_TOKEN}"}
    sock, answer = upgrade(_address(server), "/portForward/default/absent", headers)
    sock.close()
    assert "default/absent is not on this node" in str(_status(answer, 404)["message"])
    api = {**SPDY_UPGRADE, "Authorization": f"Bearer {TOKEN}"}
    sock, answer = upgrade(
        _address(found.http), "/api/v1/namespaces/default/pods/absent/portforward", api
    )
    sock.close()
    assert _status(answer, 404)["reason"] == "NotFound"


def test_port_forwarding_is_off_without_exec(tmp_path: Path) -> None:
    with running_node(tmp_path) as found:
        sock, answer = upgrade(_address(found.http), "/portForward/default/talker", SPDY_UPGRADE)
        sock.close()
        assert "disabled" in str(_status(answer, 403)["message"])


class _NoForwarding:
    def port_forwarder(self, namespace: str, pod_name: str) -> object:
        raise StreamingUnsupported("the container runtime (X) cannot forward ports")


class _NoSandbox:
    def port_forwarder(self, namespace: str, pod_name: str) -> object:
        raise SandboxNotFound(f"pod {namespace}/{pod_name} has no running sandbox")


def test_the_status_for_a_runtime_or_pod_that_cannot_forward() -> None:
    with pytest.raises(HTTPError) as raised:
        connector(_NoForwarding(), "default", "web")  # type: ignore[arg-type]
    assert raised.value.code == HTTPStatus.NOT_IMPLEMENTED
    assert raised.value.reason == "NotImplemented"
    with pytest.raises(HTTPError) as raised:
        connector(_NoSandbox(), "default", "web")  # type: ignore[arg-type]
    assert raised.value.code == HTTPStatus.NOT_FOUND
    assert "no running sandbox" in raised.value.message


def test_stopping_the_server_ends_its_sessions(node: tuple[Node, KubeletServer]) -> None:
    found, _ = node
    config = ServerConfig(port=0, enable_exec=True, exec_token=EXEC_TOKEN)
    server = KubeletServer(found.kubelet, config).start()
    headers = {**SPDY_UPGRADE, "Authorization": f"Bearer {EXEC_TOKEN}"}
    sock, answer = upgrade(_address(server), "/portForward/default/web", headers)
    assert answer.startswith(b"HTTP/1.1 101 "), answer
    client = SpdyConnection(SocketTransport(sock), client=True, flow_control=False)
    reader = threading.Thread(target=client.serve, daemon=True)
    reader.start()
    server.stop()
    assert client.closed.wait(10), "the session outlived its server"
    reader.join(10)
    sock.close()
