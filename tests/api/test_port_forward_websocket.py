"""Port-forward over the ``channel.k8s.io`` WebSocket subprotocols (what the ``kubernetes``
Python client and kr8s speak), on both routes, against a node on the in-memory runtime whose
pod serves ``ok`` over HTTP on 8080 and echoes on 9000: the port announced first on each
channel, data both ways, two ports in one session, ``v5`` closes, the base64 dialect, a port
nothing listens on, what a request must carry."""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterator

import pytest

from kubecore._config.static import StaticSource
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._manifest import load_pods_from_string
from tests.api.kubectl_support import TOKEN, Node, is_ready, running_node, wait_for
from tests.api.port_forward_support import WEB_POD
from tests.unit.streaming.ws_support import Client, Rejected

EXEC_TOKEN = "exec-token"
API_PATH = "/api/v1/namespaces/default/pods/web/portforward"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Node, KubeletServer]]:
    tmp = tmp_path_factory.mktemp("port-forward-ws")
    with running_node(tmp) as found:
        StaticSource(load_pods_from_string(WEB_POD), name="file", sink=found.kubelet.update)
        wait_for(lambda: is_ready(found.kubelet, "web"), what="the pod web to be ready")
        config = ServerConfig(port=0, enable_exec=True, exec_token=EXEC_TOKEN)
        kubelet_server = KubeletServer(found.kubelet, config).start()
        try:
            yield found, kubelet_server
        finally:
            kubelet_server.stop()


def _api(node: tuple[Node, KubeletServer], query: str, protocols: list[str]) -> Client:
    found, _ = node
    return Client.connect(
        found.http.port,
        f"{API_PATH}?{query}",
        protocols,
        {"Authorization": f"Bearer {TOKEN}"},
    )


def _frame(message: bytes | str | None) -> tuple[int, bytes]:
    assert isinstance(message, bytes), message
    return message[0], message[1:]


def _receive_until(client: Client, channel: int, want: bytes) -> bytes:
    """Data of ``channel`` until it holds ``want`` (other channels' frames must not come)."""
    got = b""
    while want not in got:
        on, data = _frame(client.receive())
        assert on == channel, (on, data)
        got += data
    return got


def _announced(client: Client, *ports: int) -> None:
    expected = []
    for index, port in enumerate(ports):
        expected += [(2 * index, struct.pack("<H", port)), (2 * index + 1, struct.pack("<H", port))]
    assert [_frame(client.receive()) for _ in expected] == expected


@pytest.mark.parametrize("protocol", ["v4.channel.k8s.io", "v5.channel.k8s.io", "channel.k8s.io"])
def test_an_echo_through_the_api_route(node: tuple[Node, KubeletServer], protocol: str) -> None:
    client = _api(node, "ports=9000", [protocol])
    assert client.subprotocol == protocol
    _announced(client, 9000)
    client.send(b"\x00through the node")
    assert _receive_until(client, 0, b"through the node") == b"through the node"
    client.close()


def test_a_client_that_offers_no_subprotocol_gets_the_binary_channels(
    node: tuple[Node, KubeletServer],
) -> None:
    # kr8s' pod.portforward() offers none: answered without one, it reads the kubelet's
    # default framing (the port announced on each channel, then the data).
    client = _api(node, "ports=9000", [])
    assert client.subprotocol is None
    _announced(client, 9000)
    client.send(b"\x00from kr8s")
    assert _receive_until(client, 0, b"from kr8s") == b"from kr8s"
    client.close()


def test_each_client_gets_its_dialect(node: tuple[Node, KubeletServer]) -> None:
    # The kubernetes client offers v5 then v4 and reads any channel past its ports as an error:
    # it gets v4, as from a kubelet. kubectl offers SPDY over WebSocket and gets it.
    client = _api(node, "ports=9000", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
    assert client.subprotocol == "v4.channel.k8s.io"
    client.close()
    spdy = _api(node, "ports=9000", ["SPDY/3.1+portforward.k8s.io"])
    assert spdy.subprotocol == "SPDY/3.1+portforward.k8s.io"
    spdy.close()


def test_two_ports_in_one_session(node: tuple[Node, KubeletServer]) -> None:
    client = _api(node, "ports=8080,9000", ["v4.channel.k8s.io"])
    _announced(client, 8080, 9000)
    client.send(b"\x02echo me")
    assert _receive_until(client, 2, b"echo me") == b"echo me"
    client.send(b"\x00GET / HTTP/1.0\r\n\r\n")
    answer = _receive_until(client, 0, b"ok\n")
    assert answer.startswith(b"HTTP/1.") and answer.endswith(b"ok\n")
    client.close()


def test_v5_closes_a_port_both_ways(node: tuple[Node, KubeletServer]) -> None:
    client = _api(node, "ports=9000", ["v5.channel.k8s.io"])
    _announced(client, 9000)
    client.send(b"\x00last words")
    client.send(b"\xff\x00")  # the client is done writing to port 9000
    assert _receive_until(client, 0, b"last words") == b"last words"
    # The echo ends once its input has: the server closes the data channel, then the session.
    assert _frame(client.receive()) == (255, b"\x00")
    assert client.receive() is None


def test_the_base64_dialect_and_the_kubelet_route(node: tuple[Node, KubeletServer]) -> None:
    _, server = node
    client = Client.connect(
        server.port,
        "/portForward/default/web?port=9000",
        ["v4.base64.channel.k8s.io"],
        {"Authorization": f"Bearer {EXEC_TOKEN}"},
    )
    port = base64.b64encode(struct.pack("<H", 9000)).decode()
    assert [client.receive(), client.receive()] == [f"0{port}", f"1{port}"]
    client.send_text("0" + base64.b64encode(b"in base64").decode())
    got = ""
    while "in base64" not in base64.b64decode(got).decode():
        message = client.receive()
        assert isinstance(message, str) and message.startswith("0"), message
        got = base64.b64encode(base64.b64decode(got) + base64.b64decode(message[1:])).decode()
    client.close()


def test_a_port_nothing_listens_on_is_reported_on_its_error_channel(
    node: tuple[Node, KubeletServer],
) -> None:
    client = _api(node, "ports=7777", ["v4.channel.k8s.io"])
    _announced(client, 7777)
    channel, message = _frame(client.receive())
    assert channel == 1
    assert message.startswith(b"error forwarding port 7777 to pod default/web"), message
    assert client.receive() is None  # its only port is done: so is the session


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("", 'query parameter \\"ports\\" is required'),
        ("ports=", "cannot be empty"),
        ("ports=80,x", "unable to parse 'x' as a port"),
        ("ports=70000", "unable to parse '70000' as a port"),
    ],
)
def test_what_a_channel_request_must_carry(
    node: tuple[Node, KubeletServer], query: str, text: str
) -> None:
    with pytest.raises(Rejected) as rejected:
        _api(node, query, ["v4.channel.k8s.io"])
    assert rejected.value.status == 400
    assert text in rejected.value.body.decode()


def test_the_channel_route_needs_the_token(node: tuple[Node, KubeletServer]) -> None:
    found, _ = node
    with pytest.raises(Rejected) as rejected:
        Client.connect(found.http.port, f"{API_PATH}?ports=9000", ["v4.channel.k8s.io"])
    assert rejected.value.status == 401
