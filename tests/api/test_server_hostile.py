"""Hostile HTTP clients on loopback: slow bodies before authentication, request smuggling,
inputs that used to end in a 500 (a very long path, deeply nested bodies, HTTP/0.9), each
answered with a 4xx v1 Status and never at the cost of the workers that answer everyone else."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._http.serving import Refused, head_end, read_head
from tests.api.kubectl_support import TOKEN as API_TOKEN
from tests.api.kubectl_support import Node, running_node
from tests.api.support import TOKEN, StubKubelet

WORKERS = 5


@pytest.fixture
def server(tmp_path: Path) -> Iterator[KubeletServer]:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "kubelet.log").write_text("started\n")
    config = ServerConfig(
        port=0,
        workers=WORKERS,
        max_follow_streams=2,
        request_timeout=2.0,
        enable_exec=True,
        exec_token=TOKEN,
        log_dir=str(logs),
    )
    with KubeletServer(StubKubelet(), config) as running:
        yield running


def exchange(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    """Send ``data`` on one connection and read until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(data)
        chunks = []
        for _ in range(1000):
            try:
                chunk = conn.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def status_of(answer: bytes) -> dict[str, Any]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 4"), answer[:200]
    status = json.loads(body)
    assert status["kind"] == "Status" and status["apiVersion"] == "v1"
    assert status["status"] == "Failure"
    assert head.split(b" ", 2)[1] == str(status["code"]).encode()
    return dict(status)


# --- slow bodies hold no worker ----------------------------------------------------------------


class SlowLoris:
    """``count`` connections that each send a head and then one byte of the body at a time, for at
    most ``seconds`` (or until stopped)."""

    def __init__(self, port: int, head: bytes, count: int, seconds: float = 15.0) -> None:
        self.sockets = [
            socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)
        ]
        for sock in self.sockets:
            sock.sendall(head)
        self.stop = threading.Event()
        self.answers: list[bytes] = [b""] * count
        self._seconds = seconds
        self._thread = threading.Thread(target=self._drip, daemon=True)
        self._thread.start()

    def _drip(self) -> None:
        deadline = time.monotonic() + self._seconds
        for _ in range(200):
            if self.stop.wait(0.1) or time.monotonic() > deadline:
                return
            for sock in self.sockets:
                with contextlib.suppress(OSError):
                    sock.send(b"x")

    def close(self) -> None:
        self.stop.set()
        self._thread.join(10)
        for sock in self.sockets:
            sock.close()


@pytest.mark.parametrize(
    "head",
    [
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n",
        b"GET /pods HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 60000\r\n\r\n",
        b"POST /run/default/web/httpd?cmd=ls HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Length: 100000\r\n\r\n",
        # Authenticated: the body is collected without a worker, within the request timeout.
        b"POST /run/default/web/httpd?cmd=ls HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + TOKEN.encode()
        + b"\r\nContent-Length: 100000\r\n\r\n",
    ],
    ids=["get-large", "get-small", "post-anonymous", "post-authenticated"],
)
def test_slow_bodies_on_every_worker_leave_healthz_answering(
    server: KubeletServer, head: bytes
) -> None:
    attack = SlowLoris(server.port, head, WORKERS * 2)
    try:
        for _ in range(3):  # each well within the attack's 15 s
            response = requests.get(server.url + "/healthz", timeout=5)
            assert response.status_code == 200 and response.text == "ok\n"
    finally:
        attack.close()


def test_a_slow_authenticated_body_is_given_up_after_the_request_timeout(
    server: KubeletServer,
) -> None:
    head = (
        b"POST /run/default/web/httpd?cmd=ls HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + TOKEN.encode()
        + b"\r\nContent-Length: 100000\r\n\r\n"
    )
    attack = SlowLoris(server.port, head, 1)
    try:
        sock = attack.sockets[0]
        sock.settimeout(10)  # far beyond the server's 2 s
        started = time.monotonic()
        answer = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
        assert time.monotonic() - started < 8.0
        assert status_of(answer)["code"] == 408
    finally:
        attack.close()


def test_a_body_on_a_request_that_takes_none_is_refused_unread(server: KubeletServer) -> None:
    answer = exchange(
        server.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n"
    )
    status = status_of(answer)
    assert status["code"] == 413 and "GET" in status["message"]


def test_an_anonymous_body_is_answered_without_being_read(server: KubeletServer) -> None:
    # No byte of the body is sent: the answer comes, and the connection closes, without it.
    answer = exchange(
        server.port,
        b"POST /run/default/web/httpd?cmd=ls HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Length: 100000\r\n\r\n",
    )
    assert status_of(answer)["code"] == 401


def test_a_small_body_on_a_get_is_dropped_and_the_connection_kept(server: KubeletServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello"
        conn.sendall(request + b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        received = b""
        while received.count(b"ok\n") < 2:
            chunk = conn.recv(4096)
            assert chunk, received
            received += chunk
    assert received.count(b"HTTP/1.1 200 OK") == 2


# --- request smuggling --------------------------------------------------------------------------

HIDDEN = b"GET /containerLogs/default/web/httpd HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        (b"Content-Length: 0\r\nContent-Length: %d\r\n" % len(HIDDEN), "Content-Length"),
        (b"Content-Length: %d\r\nContent-Length: 0\r\n" % len(HIDDEN), "Content-Length"),
        (b"Content-Length: 0\r\nContent-Length: 0\r\n", "Content-Length"),
        (b"Content-Length: 0, %d\r\n" % len(HIDDEN), "Content-Length"),
        (b"Content-Length: 0\r\nTransfer-Encoding: chunked\r\n", "Transfer-Encoding"),
        (b"Transfer-Encoding: chunked\r\nContent-Length: 0\r\n", "Transfer-Encoding"),
        (b"Transfer-Encoding: gzip\r\n", "Transfer-Encoding"),
        (b"Transfer-Encoding: chunked, identity\r\n", "Transfer-Encoding"),
        (b"Content-Length : 0\r\n", "header"),
        (b"X-Folded: a\r\n Content-Length: 0\r\n", "header"),
        (b"Content-Length: +0\r\n", "Content-Length"),
        (b"Content-Length: -1\r\n", "Content-Length"),
        (b"Content-Length: zero\r\n", "Content-Length"),
    ],
)
def test_ambiguous_framing_is_refused_and_the_connection_closed(
    server: KubeletServer, headers: bytes, message: str
) -> None:
    for method in (b"GET /healthz", b"POST /run/default/web/httpd?cmd=ls"):
        answer = exchange(
            server.port,
            method
            + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
            + TOKEN.encode()
            + b"\r\n"
            + headers
            + b"\r\n"
            + HIDDEN,
        )
        assert answer.count(b"HTTP/1.1 ") == 1, answer  # the hidden request is never served
        assert b"line one" not in answer
        status = status_of(answer)
        assert status["code"] == 400 and message in status["message"]


def test_a_chunked_body_is_refused_with_length_required(server: KubeletServer) -> None:
    answer = exchange(
        server.port,
        b"POST /run/default/web/httpd?cmd=ls HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Transfer-Encoding: chunked"
        b"\r\n\r\n" + b"%x\r\n" % len(HIDDEN) + HIDDEN + b"\r\n0\r\n\r\n" + HIDDEN,
    )
    assert answer.count(b"HTTP/1.1 ") == 1
    assert status_of(answer)["code"] == 411


# --- what used to be a 500 ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["a" * 10_000, "a/" * 5000, ("b" * 255 + "/") * 30])
def test_an_overlong_log_path_is_a_4xx(server: KubeletServer, path: str) -> None:
    response = requests.get(server.url + "/logs/" + path, timeout=10)
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["kind"] == "Status"


@pytest.mark.parametrize(
    "request_line", [b"GET /healthz\r\n\r\n", b"GET /healthz\r\n", b"GET\r\n\r\n"]
)
def test_http_0_9_gets_an_http_1_1_status(server: KubeletServer, request_line: bytes) -> None:
    answer = exchange(server.port, request_line)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert "HTTP" in status_of(answer)["message"] or "request line" in status_of(answer)["message"]


# --- deeply nested bodies on the Kubernetes API -------------------------------------------------

PODS = "/api/v1/namespaces/default/pods"
AUTH = {"Authorization": f"Bearer {API_TOKEN}"}


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as found:
        yield found


def _nested_json(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _nested_yaml(depth: int) -> str:
    return "- " * depth + "x\n"


@pytest.mark.parametrize("depth", [150, 900, 5000, 100_000])
@pytest.mark.parametrize(
    ("method", "path", "content_type", "text"),
    [
        ("POST", PODS, "application/json", _nested_json),
        ("POST", PODS, "application/yaml", _nested_yaml),
        ("PUT", PODS + "/web", "application/json", _nested_json),
        ("PATCH", PODS + "/web", "application/merge-patch+json", _nested_json),
        ("PATCH", PODS + "/web", "application/strategic-merge-patch+json", _nested_json),
        ("PATCH", PODS + "/web", "application/apply-patch+yaml", _nested_yaml),
        ("POST", "/api/v1/namespaces/default/configmaps", "application/json", _nested_json),
    ],
)
def test_a_deeply_nested_body_is_a_400_naming_the_limit(
    node: Node, method: str, path: str, content_type: str, text: Any, depth: int
) -> None:
    body = text(depth)
    response = requests.request(
        method,
        node.http.url + path,
        data=body.encode(),
        headers={**AUTH, "Content-Type": content_type},
        timeout=30,
    )
    assert response.status_code == 400, response.text
    status = response.json()
    assert status["kind"] == "Status" and status["reason"] == "BadRequest"
    assert "nested more than 100 levels" in status["message"]


def test_a_deep_patch_on_an_existing_pod_is_refused_and_the_pod_kept(node: Node) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "deep"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    assert requests.post(node.http.url + PODS, json=pod, headers=AUTH, timeout=10).ok
    patch = '{"metadata":' + _nested_json(900) + "}"
    response = requests.patch(
        node.http.url + PODS + "/deep",
        data=patch,
        headers={**AUTH, "Content-Type": "application/strategic-merge-patch+json"},
        timeout=30,
    )
    assert response.status_code == 400 and "nested" in response.json()["message"]
    assert requests.get(node.http.url + PODS + "/deep", headers=AUTH, timeout=10).status_code == 200


@pytest.mark.parametrize("path", [PODS, "/api/v1/namespaces/default/configmaps"])
@pytest.mark.parametrize("metadata", [[], ["name"], "web", 7, True])
def test_metadata_that_is_not_a_mapping_is_a_400(node: Node, path: str, metadata: object) -> None:
    kind = "Pod" if path == PODS else "ConfigMap"
    body = {"apiVersion": "v1", "kind": kind, "metadata": metadata}
    response = requests.post(node.http.url + path, json=body, headers=AUTH, timeout=10)
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith("metadata: expected a mapping")


# --- what well-behaved clients rely on ----------------------------------------------------------

EXEC_BODY = b'{"command": ["echo", "hi"]}'
EXEC_HEAD = (
    b"POST /run/default/web/httpd HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: %d\r\n" % len(EXEC_BODY)
)


def _read_until(conn: socket.socket, marker: bytes, count: int = 1) -> bytes:
    received = b""
    while received.count(marker) < count:
        chunk = conn.recv(4096)
        assert chunk, received
        received += chunk
    return received


def test_expect_100_continue_is_answered_once_before_the_body(server: KubeletServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(EXEC_HEAD + b"Expect: 100-continue\r\n\r\n")
        assert _read_until(conn, b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
        conn.sendall(EXEC_BODY)
        answer = _read_until(conn, b"}")
    assert answer.startswith(b"HTTP/1.1 200 ") and b"100 Continue" not in answer
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["stdout"] == "echo hi\n"


def test_a_request_pipelined_after_a_body_is_answered_next(server: KubeletServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(
            EXEC_HEAD + b"\r\n" + EXEC_BODY + b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        )
        answers = _read_until(conn, b"HTTP/1.1 200 OK", 2)
        answers += _read_until(conn, b"ok\n") if not answers.endswith(b"ok\n") else b""
    first, second = answers.split(b"HTTP/1.1 200 OK")[1:]
    assert b'"exitCode": 0' in first and second.endswith(b"ok\n")


def test_yaml_aliases_that_expand_beyond_the_body_are_a_400_at_once(node: Node) -> None:
    levels = "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)
    )
    body = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + levels  # 10**10 values once expanded
    response = requests.post(
        node.http.url + PODS,
        data=body.encode(),
        headers={**AUTH, "Content-Type": "application/yaml"},
        timeout=10,
    )
    assert response.status_code == 400 and "aliases expand" in response.json()["message"]


def test_a_yaml_body_is_read_as_kubectl_reads_yaml(node: Node) -> None:
    body = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: dated\n  annotations:\n"
        "    since: 2024-01-01\nspec:\n  containers:\n  - name: c\n    image: busybox\n"
    )
    response = requests.post(
        node.http.url + PODS,
        data=body.encode(),
        headers={**AUTH, "Content-Type": "application/yaml"},
        timeout=10,
    )
    assert response.status_code == 201, response.text
    assert response.json()["metadata"]["annotations"]["since"] == "2024-01-01"


# --- the head checker, on any bytes -------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        b"GET / HTTP/1.1",
        b"POST /run/a/b/c HTTP/1.1",
        b"GET /",
        b"Content-Length: 5",
        b"Content-Length: 0",
        b"content-length:7",
        b"Content-Length : 5",
        b"Content-Length: 5, 5",
        b"Content-Length: +5",
        b"Transfer-Encoding: chunked",
        b"transfer-encoding: gzip",
        b" folded",
        b"\tfolded",
        b"Host: x",
        b"X: a\rb",
        b"X:",
        b":",
        b"\x00",
        b"\r",
        b"",
    ]
)
_HEADS = st.lists(_PIECES, max_size=8).flatmap(
    lambda pieces: st.lists(
        st.sampled_from([b"\r\n", b"\n"]), min_size=len(pieces) + 1, max_size=len(pieces) + 1
    ).map(lambda ends: b"".join(p + e for p, e in zip(pieces, ends, strict=False)) + ends[-1])
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_HEADS, st.binary(max_size=200)))
def test_a_head_is_refused_or_framed_as_the_handler_reads_it(data: bytes) -> None:
    end = head_end(data)
    if end is None:
        return
    try:
        head = read_head(data[:end])
    except Refused as refused:
        assert 400 <= refused.code < 500 and refused.message
        return
    assert head.size == end and head.length >= 0
    # What http.server's handler will parse from the same bytes agrees on the framing.
    stream = io.BytesIO(data[:end])
    stream.readline()
    headers = http.client.parse_headers(stream)
    assert headers.get_all("Transfer-Encoding") is None
    lengths = headers.get_all("Content-Length") or []
    assert [int(v) for v in lengths] == ([head.length] if lengths else [])
    assert stream.tell() == end  # the handler's head ends where the selector's does


def test_garbage_heads_leave_the_server_answering(server: KubeletServer) -> None:
    for garbage in (b"\x00\xff\r\n\r\n", b"GET / HTTP/1.1\r\n\x00: x\r\n\r\n", b"\r\n" * 100):
        exchange(server.port, garbage, timeout=5)
    assert requests.get(server.url + "/healthz", timeout=10).text == "ok\n"
