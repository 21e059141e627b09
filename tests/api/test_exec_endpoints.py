"""The kubelet's ``/exec`` and ``/attach`` and the API's ``pods/exec`` over WebSocket, with a
plain client, against a node on the in-memory runtime: the subprotocols kubectl does not use
(v4, base64, v1), the token rules, the clear refusals (no upgrade, a container that is not
running, a runtime that cannot stream), the bounded slots, and ``stop()`` ending live
sessions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore_fake import FakeRuntime
from tests.api.kubectl_support import TOKEN, Node, running_node, wait_for
from tests.unit.streaming.ws_support import TIMEOUT, Client, Rejected

EXEC_TOKEN = "exec-token"
AUTH = {"Authorization": f"Bearer {EXEC_TOKEN}"}


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as found:
        yield found


@pytest.fixture
def kubelet_server(node: Node) -> KubeletServer:
    config = ServerConfig(port=0, enable_exec=True, exec_token=EXEC_TOKEN, max_stream_sessions=2)
    server = KubeletServer(node.kubelet, config, api=node.api).start()
    node.servers.append(server)
    return server


def frames(messages: list[bytes | str]) -> list[tuple[int, bytes]]:
    return [(m[0], m[1:]) for m in messages if isinstance(m, bytes)]


def test_kubelet_exec_over_v4(kubelet_server: KubeletServer) -> None:
    client = Client.connect(
        kubelet_server.port,
        "/exec/default/talker/main?command=sh&command=-c&command=echo+hi%3B+exit+3"
        "&output=1&error=1",
        ["v4.channel.k8s.io"],
        AUTH,
    )
    assert client.subprotocol == "v4.channel.k8s.io"
    got = frames(client.all_messages())
    assert got[:2] == [(1, b""), (1, b"hi\n")]
    channel, status = got[-1]
    assert channel == 3
    assert json.loads(status)["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]


def test_kubelet_exec_with_stdin_over_v1(kubelet_server: KubeletServer) -> None:
    client = Client.connect(
        kubelet_server.port,
        "/exec/default/talker/main?command=sh&input=1&output=1",
        ["channel.k8s.io"],
        AUTH,
    )
    assert client.receive() == b"\x01"
    client.send(b"\x00echo from-v1\nexit 5\n")
    got = frames(client.all_messages())
    assert (1, b"from-v1\n") in got
    assert got[-1][0] == 3 and b"non-zero exit code" in got[-1][1]  # text before v4


def test_kubelet_attach_over_base64(node: Node, kubelet_server: KubeletServer) -> None:
    container = node.running("talker")
    assert container is not None
    client = Client.connect(
        kubelet_server.port,
        "/attach/default/talker/main?output=1",
        ["v4.base64.channel.k8s.io"],
        AUTH,
    )
    assert client.receive() == "1"
    node.runtime.write_log(container.id, "after")
    assert client.receive() == "1YWZ0ZXIK"  # "after\n"
    client.close()


@pytest.mark.parametrize(
    ("headers", "code"),
    [({}, 401), ({"Authorization": "Bearer wrong"}, 401)],
)
def test_kubelet_exec_needs_its_token(
    kubelet_server: KubeletServer, headers: dict[str, str], code: int
) -> None:
    with pytest.raises(Rejected) as refused:
        Client.connect(
            kubelet_server.port,
            "/exec/default/talker/main?command=true&output=1",
            ["v5.channel.k8s.io"],
            headers,
        )
    assert refused.value.status == code


def test_kubelet_exec_is_off_by_default(node: Node) -> None:
    answer = requests.get(node.http.url + "/exec/default/talker/main?command=true", timeout=10)
    assert answer.status_code == 403
    assert "exec is disabled" in answer.json()["message"]


def status_of(refused: pytest.ExceptionInfo[Rejected]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(refused.value.body)
    assert body["kind"] == "Status"
    return body


def test_no_upgrade_is_told_that_spdy_is_not_served(kubelet_server: KubeletServer) -> None:
    answer = requests.get(
        kubelet_server.url + "/exec/default/talker/main?command=true&output=1",
        headers={**AUTH, "Upgrade": "SPDY/3.1", "Connection": "Upgrade"},
        timeout=10,
    )
    assert answer.status_code == 400
    message = answer.json()["message"]
    assert "SPDY is not served" in message and "KUBECTL_REMOTE_COMMAND_WEBSOCKETS" in message


def test_clear_refusals_before_the_upgrade(node: Node, kubelet_server: KubeletServer) -> None:
    cases = [
        ("/exec/default/nope/main?command=true&output=1", 404, 'pods "nope" not found'),
        ("/exec/default/talker/other?command=true&output=1", 400, 'container not found ("other")'),
        ("/exec/default/talker/main?output=1", 400, "at least one command"),
        ("/exec/default/talker/main?command=true", 400, "at least 1 of stdin, stdout, stderr"),
    ]
    for target, code, text in cases:
        with pytest.raises(Rejected) as refused:
            Client.connect(kubelet_server.port, target, ["v5.channel.k8s.io"], AUTH)
        assert refused.value.status == code, target
        assert text in status_of(refused)["message"], target


def test_the_api_needs_the_token_even_on_loopback(node: Node) -> None:
    with pytest.raises(Rejected) as refused:
        Client.connect(
            node.http.port,
            "/api/v1/namespaces/default/pods/talker/exec?command=true&stdout=true",
            ["v5.channel.k8s.io"],
        )
    assert refused.value.status == 401
    assert "need a bearer token" in status_of(refused)["message"]
    client = Client.connect(
        node.http.port,
        "/api/v1/namespaces/default/pods/talker/exec?command=echo&command=api&stdout=true",
        ["v5.channel.k8s.io"],
        {"Authorization": f"Bearer {TOKEN}"},
    )
    assert (1, b"api\n") in frames(client.all_messages())


def test_sessions_are_bounded_and_stop_ends_them(node: Node, kubelet_server: KubeletServer) -> None:
    def open_shell() -> Client:
        client = Client.connect(
            kubelet_server.port,
            "/exec/default/talker/main?command=sh&input=1&output=1",
            ["v5.channel.k8s.io"],
            AUTH,
        )
        assert client.receive() == b"\x01"
        return client

    shells = [open_shell(), open_shell()]
    # The sessions hold workers, never the selector: other requests are still answered.
    assert requests.get(kubelet_server.url + "/healthz", timeout=TIMEOUT).status_code == 200
    with pytest.raises(Rejected) as refused:
        open_shell()
    assert refused.value.status == 429
    assert "at most 2 at once" in status_of(refused)["message"]
    shells[0].close()
    third = wait_for(lambda: _try(open_shell), timeout=TIMEOUT, what="a slot to free up")
    kubelet_server.stop()
    for client in (shells[1], third):
        assert client.all_messages() == []  # cut: no status, the connection ends
    node.servers.remove(kubelet_server)


def _try(open_shell: Any) -> Client | None:
    try:
        return open_shell()  # type: ignore[no-any-return]
    except Rejected:
        return None


class NoStreams(FakeRuntime):
    """The in-memory runtime without its streaming capability."""

    exec_stream = None  # type: ignore[assignment]
    attach = None  # type: ignore[assignment]


def test_a_runtime_that_cannot_stream_is_named(tmp_path: Path) -> None:
    runtime = NoStreams(images=["busybox:1.35"])
    kubelet = Kubelet(runtime, runtime, config=KubeletConfig(root_dir=str(tmp_path)))
    from kubecore._manifest import load_pods_from_string
    from tests.api.kubectl_support import STATIC_POD

    kubelet.set_pods(load_pods_from_string(STATIC_POD), source="file")
    assert kubelet.sync_until_converged()
    config = ServerConfig(port=0, enable_exec=True, exec_token=EXEC_TOKEN)
    with KubeletServer(kubelet, config) as server, pytest.raises(Rejected) as refused:
        Client.connect(
            server.port,
            "/exec/default/talker/main?command=true&output=1",
            ["v5.channel.k8s.io"],
            AUTH,
        )
    assert refused.value.status == 400
    assert "'fake' runtime cannot stream" in status_of(refused)["message"]


def test_a_broken_handshake_is_refused_before_any_command_runs(
    node: Node, kubelet_server: KubeletServer
) -> None:
    before = node.runtime.call_count("exec_stream")
    for extra in ({}, {"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}):
        answer = requests.get(
            kubelet_server.url + "/exec/default/talker/main?command=true&output=1",
            headers={
                **AUTH,
                "Upgrade": "websocket",
                "Connection": "Upgrade",
                "Sec-WebSocket-Protocol": "v5.channel.k8s.io",
                **extra,
            },
            timeout=10,
        )
        assert answer.status_code == 400
        assert "WebSocket handshake" in answer.json()["message"]
    assert node.runtime.call_count("exec_stream") == before
