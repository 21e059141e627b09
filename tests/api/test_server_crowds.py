"""No anonymous client blocks the agent's port or its streams (issue 27): idle connections are
bounded per client and the oldest idle ones closed to make room, health checks keep a reserve,
a refusal on the TLS port is never clear text, an ``accept`` out of descriptors neither spins
nor floods the log, anonymous watches cannot take the token holders' watches and log follows,
a watch lives on a descriptor above 1023, an unknown method is a 405 and a TLS client gone
mid-answer is no ERROR. Real sockets on loopback (127.0.0.1 and 127.0.0.2), bounded counts."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import select
import socket
import ssl
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from kubecore._http.budget import Budget
from kubecore._http.seats import client_of, is_health_check, seat_for
from kubecore._http.server import KubeletServer, ServerConfig
from tests.api.kubectl_support import TOKEN as API_TOKEN
from tests.api.kubectl_support import Node, make_certs, running_node, wait_for
from tests.api.support import StubKubelet, mid_body_clients

API_AUTH = {"Authorization": f"Bearer {API_TOKEN}"}
PODS = "/api/v1/namespaces/default/pods"


def ask(
    port: int, path: str, source: str = "127.0.0.1", method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """One request from ``source`` (a loopback address): status, headers, body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        conn.request(method, path)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def closed_by_server(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` the server has closed (by ``poll``: their descriptors may be
    above 1023)."""
    poller = select.poll()
    for sock in sockets:
        poller.register(sock.fileno(), select.POLLIN)
    ready = {fd for fd, _ in poller.poll(0)}
    closed = 0
    for sock in sockets:
        if sock.fileno() in ready:
            try:
                closed += sock.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                closed += 1
    return closed


@pytest.mark.parametrize(
    ("limits", "share"),
    [
        ({"max_connections": 64, "max_connections_per_client": 16, "health_connections": 4}, 16),
        ({}, 256),  # the defaults: 1024 in all, 256 per client
    ],
    ids=["lowered", "default"],
)
def test_1100_idle_connections_from_one_address_leave_everyone_served(
    limits: dict[str, int], share: int
) -> None:
    config = ServerConfig(port=0, request_timeout=60.0, **limits)
    with KubeletServer(StubKubelet(), config) as server:
        idle = [
            socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(1100)
        ]
        try:
            # the same address still gets its health check and its requests ...
            status, _, body = ask(server.port, "/healthz")
            assert (status, body) == (200, b"ok\n")
            assert ask(server.port, "/pods")[0] == 200
            # ... another address is not held back by the first one's share
            assert ask(server.port, "/healthz", source="127.0.0.2")[0] == 200
            assert ask(server.port, "/pods", source="127.0.0.2")[0] == 200
            # the room was made by closing the first client's oldest idle connections
            wait_for(
                lambda: closed_by_server(idle) >= len(idle) - share,
                what="the idle connections past the share to be closed",
            )
            assert closed_by_server(idle[-share // 2 :]) == 0  # the newest are kept
        finally:
            for sock in idle:
                sock.close()


def test_the_health_reserve_answers_health_checks_only() -> None:
    config = ServerConfig(port=0, max_connections=20, health_connections=4)
    with KubeletServer(StubKubelet(), config) as server:
        busy = mid_body_clients(("127.0.0.1", server.port), 16)  # not idle: none can be closed
        try:
            # rounds, so that connections closing as others arrive are met too
            for _ in range(10):
                status, _, body = ask(server.port, "/pods", source="127.0.0.2")
                assert status == 503 and b"only the health checks" in body
                for path in ("/healthz", "/healthz/ping"):
                    assert ask(server.port, path, source="127.0.0.2")[0] == 200
        finally:
            for sock in busy:
                sock.close()


def test_a_refusal_on_the_tls_port_is_not_clear_text(tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    config = ServerConfig(
        port=0,
        max_connections=16,
        tls_cert_file=str(certs.cert),
        tls_private_key_file=str(certs.key),
    )
    context = ssl.create_default_context(cafile=str(certs.ca))
    # health checks, so that the reserve takes them too: then every connection is in use
    head = (
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 9\r\n"
        b"Expect: 100-continue\r\n\r\n"
    )
    with KubeletServer(StubKubelet(), config) as server:
        busy: list[socket.socket] = []
        try:
            for _ in range(16):
                raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
                tls = context.wrap_socket(raw, server_hostname="127.0.0.1")
                busy.append(tls)
                tls.sendall(head)
                assert tls.recv(4096).startswith(b"HTTP/1.1 100 Continue")
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as extra:
                try:
                    answer = extra.recv(4096)
                except ConnectionResetError:
                    answer = b""
            assert answer == b""  # closed, and nothing said in clear text
        finally:
            for sock in busy:
                sock.close()


_STARVED_AGENT = """
import os, resource, sys, logging
from kubecore._http.budget import Budget
from kubecore._http.seats import client_of, is_health_check, seat_for
from kubecore._http.server import KubeletServer, ServerConfig
from tests.api.support import StubKubelet

logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(message)s")
server = KubeletServer(StubKubelet(), ServerConfig(port=0)).start()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
held = []
while True:
    try:
        held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        break
print(server.port, flush=True)
sys.stdin.readline()
for fd in held:
    os.close(fd)
sys.stdin.readline()
server.stop()
"""


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_accept_out_of_descriptors_neither_spins_nor_floods_the_log() -> None:
    """The agent's descriptors all taken (by files, so no idle connection can be closed):
    the listener stays readable and every ``accept`` fails with EMFILE."""
    agent = subprocess.Popen(
        [sys.executable, "-c", _STARVED_AGENT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert agent.stdin is not None and agent.stdout is not None and agent.stderr is not None
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.extend(agent.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        port = int(agent.stdout.readline())
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            wait_for(
                lambda: any("Too many open files" in line for line in errors),
                what="the agent to warn that it is out of descriptors",
            )
            before = _cpu_seconds(agent.pid)
            threading.Event().wait(2.0)  # a spinning selector would burn these 2 s whole
            spent = _cpu_seconds(agent.pid) - before
            print(f"the starved agent spent {spent:.2f} CPU seconds in 2 s")
            assert spent < 0.3, f"{spent:.2f} CPU seconds in 2 s"
            agent.stdin.write("\n")  # the descriptors are given back: the client is served
            agent.stdin.flush()
            answer = b""
            while chunk := client.recv(4096):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"ok\n")
        agent.stdin.write("\n")
        agent.stdin.flush()
        assert agent.wait(20) == 0
        reader.join(10)
    finally:
        with contextlib.suppress(OSError):
            agent.kill()
        agent.wait(10)
    warnings = [line for line in errors if "Too many open files" in line]
    assert len(warnings) == 1, errors[:5]
    assert (
        warnings[0].startswith("WARNING ") and "(1 time(s) since the last warning)" in (warnings[0])
    )


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    # Reads open to anyone (--anonymous-reads): the case where anonymous watches can crowd.
    with running_node(tmp_path, anonymous_reads=True) as found:
        yield found


def _stream(url: str, headers: dict[str, str] | None = None) -> requests.Response:
    return requests.get(url, stream=True, timeout=10, headers=headers)


def test_anonymous_watches_leave_token_holders_their_watches_and_log_follows(node: Node) -> None:
    url = node.http.url
    opened: list[requests.Response] = []
    try:
        anonymous = [_stream(url + PODS + "?watch=true") for _ in range(10)]
        opened += anonymous
        follow = _stream(url + PODS + "/talker/log?follow=true&limitBytes=5", API_AUTH)
        opened.append(follow)
        assert follow.status_code == 200
        assert next(follow.iter_lines())  # the container's output
        watch = _stream(url + PODS + "?watch=true", API_AUTH)
        opened.append(watch)
        assert watch.status_code == 200
        assert json.loads(next(watch.iter_lines()))["type"] == "ADDED"
        # the anonymous ones had their share (half of the watches by default), and no more
        codes = [response.status_code for response in anonymous]
        assert codes.count(200) == 4 and codes.count(429) == 6
        refused = next(r for r in anonymous if r.status_code == 429).json()
        assert "without a token" in refused["message"]
    finally:
        for response in opened:
            response.close()


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "9"]}]},
    }


def test_a_watch_is_served_on_a_descriptor_above_1023(node: Node) -> None:
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        assert min(held) < 1024 < max(held)  # what is opened now gets a descriptor above both
        url = node.http.url + PODS
        version = requests.get(url, timeout=10).json()["metadata"]["resourceVersion"]
        with _stream(url + f"?watch=true&resourceVersion={version}") as watch:
            assert watch.status_code == 200
            lines = watch.iter_lines()
            created = requests.post(url, json=_pod("high-fd"), headers=API_AUTH, timeout=10)
            assert created.status_code == 201, created.text
            event = json.loads(next(line for line in lines if line))
            assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "high-fd"
    finally:
        for fd in held:
            os.close(fd)


@pytest.mark.parametrize("method", ["TRACE", "QUERY", "BREW"])
def test_an_unknown_method_is_405_with_allow(method: str) -> None:
    with KubeletServer(StubKubelet(), ServerConfig(port=0)) as server:
        status, headers, body = ask(server.port, "/healthz", method=method)
        assert status == 405 and headers["Allow"] == "GET, HEAD"
        assert json.loads(body)["reason"] == "MethodNotAllowed"
        status, headers, _ = ask(server.port, "/nowhere", method=method)
        assert status == 405 and "GET" in headers["Allow"].split(", ")


def test_an_unknown_method_on_the_api_is_405_with_allow(node: Node) -> None:
    status, headers, _ = ask(node.http.port, PODS, method="TRACE")
    assert status == 405 and "GET" in headers["Allow"].split(", ")


def test_a_tls_client_gone_mid_answer_is_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    certs = make_certs(tmp_path / "certs")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "big.log").write_bytes(b"x" * (32 * 1024 * 1024))
    config = ServerConfig(
        port=0,
        log_dir=str(logs),
        tls_cert_file=str(certs.cert),
        tls_private_key_file=str(certs.key),
    )
    context = ssl.create_default_context(cafile=str(certs.ca))
    caplog.set_level(logging.DEBUG, logger="kubecore._http")
    with KubeletServer(StubKubelet(), config) as server:
        for _ in range(3):
            raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(b"GET /logs/big.log HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert tls.recv(4096).startswith(b"HTTP/1.1 200")
                # gone at once, unread answer and all: the kernel resets the connection
                tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        wait_for(
            lambda: sum("went away" in r.getMessage() for r in caplog.records) >= 3,
            what="the server to see each client gone",
        )
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


# --- the pure rules behind the above ------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "client"),
    [
        (("10.0.0.7", 4000), "10.0.0.7"),
        (("::ffff:10.0.0.7", 4000, 0, 0), "10.0.0.7"),
        (("2001:db8:1:2:aaaa::1", 4000, 0, 0), "2001:db8:1:2::/64"),
        (("2001:db8:1:2:bbbb::9", 4000, 0, 0), "2001:db8:1:2::/64"),
        (("::1", 4000, 0, 0), "::1"),
        (("127.0.0.2", 4000), "127.0.0.2"),
        (("fe80::1%eth0", 4000, 0, 2), "fe80::1"),
    ],
)
def test_a_client_is_an_ipv4_address_or_an_ipv6_64(address: tuple[Any, ...], client: str) -> None:
    assert client_of(address) == client


def test_the_seat_of_a_new_connection() -> None:
    def seat(here: int, everyone: int) -> str:
        return seat_for(here, everyone, per_client=4, most=10, reserve=2)

    assert [seat(0, 0), seat(3, 7), seat(4, 4), seat(0, 8), seat(0, 9), seat(0, 10)] == [
        "any",
        "any",
        "health",
        "health",
        "health",
        "none",
    ]
    assert is_health_check("/healthz") and is_health_check("/livez?verbose")
    assert is_health_check("/healthz/ping") and not is_health_check("/healthzz")
    assert not is_health_check("/pods") and not is_health_check("/")


def test_a_budget_keeps_its_share_for_token_holders() -> None:
    budget = Budget(limit=3, anonymous_limit=1)
    assert budget.take(anonymous=True) == ""
    assert "without a token" in budget.take(anonymous=True)
    assert budget.take(anonymous=False) == "" and budget.take(anonymous=False) == ""
    assert budget.take(anonymous=False) == "at most 3 at once"
    budget.give_back(anonymous=True)
    assert budget.take(anonymous=False) == ""
    assert (budget.held, budget.anonymous) == (3, 0)
