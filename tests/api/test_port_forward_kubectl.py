"""``kubectl port-forward`` with the real kubectl (each version installed), over both of its
transports: the WebSocket tunnel (``SPDY/3.1+portforward.k8s.io``, tried first by kubectl
1.31 and later) and the legacy SPDY upgrade (``KUBECTL_PORT_FORWARD_WEBSOCKETS=false``),
against a node on the in-memory runtime."""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubecore._config.static import StaticSource
from kubecore._manifest import load_pods_from_string
from tests.api.kubectl_support import (
    Kubectl,
    Node,
    each_kubectl,
    is_ready,
    make_certs,
    running_node,
    wait_for,
)
from tests.api.port_forward_support import (
    WAIT,
    WEB_POD,
    echo,
    http_get,
    port_forward,
)

TRANSPORTS = [pytest.param(True, id="websocket"), pytest.param(False, id="spdy")]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Node, Kubectl]]:
    tmp = tmp_path_factory.mktemp("port-forward")
    with running_node(tmp) as found:
        StaticSource(load_pods_from_string(WEB_POD), name="file", sink=found.kubelet.update)
        wait_for(lambda: is_ready(found.kubelet, "web"), what="the pod web to be ready")
        yield found, found.writer(make_certs(tmp / "certs"))


def _dialer_used(errors: str, websockets: bool) -> None:
    assert ("tunneling_dialer" in errors) is websockets, errors


@pytest.mark.parametrize("websockets", TRANSPORTS)
@each_kubectl
def test_http_and_echo_through_two_ports(
    node: tuple[Node, Kubectl], kubectl_binary: str, websockets: bool
) -> None:
    _, kubectl = node
    payload = os.urandom(1024 * 1024)
    with port_forward(kubectl_binary, kubectl, "web", [8080, 9000], websockets=websockets) as fw:
        answer = http_get(fw.connect(8080))
        assert answer.startswith(b"HTTP/1.0 200 OK") and answer.endswith(b"\r\n\r\nok\n")
        assert echo(fw.connect(9000), payload) == payload
        assert fw.process.poll() is None
    _dialer_used(fw.errors(), websockets)


@pytest.mark.parametrize("websockets", TRANSPORTS)
@each_kubectl
def test_twenty_concurrent_connections(
    node: tuple[Node, Kubectl], kubectl_binary: str, websockets: bool
) -> None:
    _, kubectl = node
    with port_forward(kubectl_binary, kubectl, "web", [8080, 9000], websockets=websockets) as fw:

        def one(index: int) -> bool:
            if index % 2:
                return http_get(fw.connect(8080)).endswith(b"ok\n")
            payload = f"connection {index} ".encode() * 1000
            return echo(fw.connect(9000), payload) == payload

        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            assert all(pool.map(one, range(20), timeout=WAIT))
        assert fw.process.poll() is None


@pytest.mark.parametrize("websockets", TRANSPORTS)
@each_kubectl
def test_a_port_nothing_listens_on(
    node: tuple[Node, Kubectl], kubectl_binary: str, websockets: bool
) -> None:
    found, kubectl = node
    with port_forward(kubectl_binary, kubectl, "web", [8081, 8080], websockets=websockets) as fw:
        assert http_get(fw.connect(8081)) == b""  # closed at once, nothing forwarded
        # kubectl prints the node's message, then ends the session: client-go closes the
        # connection when the error stream carries one ("lost connection to pod"; 1.32 and
        # 1.37 alike), as against a cluster.
        wait_for(lambda: "error forwarding port 8081" in fw.errors(), WAIT, "the error")
        assert "to pod default/web: dial tcp 127.0.0.1:8081: connect: connection refused" in (
            fw.errors()
        )
        assert fw.wait_exit() != 0
        assert "lost connection to pod" in fw.errors()
    # The node is unharmed: the next session forwards.
    with port_forward(kubectl_binary, kubectl, "web", [8080], websockets=websockets) as again:
        assert http_get(again.connect(8080)).endswith(b"ok\n")
    assert found.kubelet.get_pod("default", "web") is not None


def test_a_pod_that_is_not_there(node: tuple[Node, Kubectl], tmp_path: Path) -> None:
    _, kubectl = node
    done = kubectl.run("port-forward", "pod/absent", ":8080", check=False)
    assert done.returncode != 0
    assert 'pods "absent" not found' in done.stderr
