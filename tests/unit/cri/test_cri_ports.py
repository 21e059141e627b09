"""The ``cri`` runtime's port-forward client without a runtime: the listeners read from a network
namespace's socket tables, and one forwarded connection against a SPDY server made of kubecore's
own ``SpdyConnection`` (in the server's role, as the kubelet's ``portforward`` answers)."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._streaming.spdy import header
from kubecore._streaming.spdy_connection import SpdyConnection, SpdyStream
from kubecore_cri._ports import (
    Forward,
    in_namespace,
    listening_ports,
    read_listening_ports,
    sandbox_process,
)
from tests.unit.cri.stream_support import SocketTransport, wait_until

TCP_HEAD = (
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode\n"
)
TCP = TCP_HEAD + (
    "   0: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "7275954 1 000000003bfd842e 100 0 0 10 0\n"
    "   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "7275285 1 00000000f3b319e6 100 0 0 10 0\n"
    "   2: 0200D60A:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "7275286 1 00000000f3b319e6 100 0 0 10 0\n"
    "   3: 0100007F:1F92 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 "
    "7275287 1 00000000f3b319e6 100 0 0 10 0\n"
)
"""127.0.0.1:8081 and *:8080 listening, 10.214.0.2:80 (the pod's address only) listening, and
an established connection from 127.0.0.1:8082."""


def test_the_listeners_the_loopback_reaches() -> None:
    assert listening_ports([TCP]) == {8080, 8081}


def _hex(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """An address as ``/proc/net/tcp*`` writes it: 32-bit words in little-endian order."""
    raw = address.packed
    return b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)).hex().upper()


ADDRESSES = st.sampled_from(
    [
        ipaddress.ip_address(text)
        for text in (
            "0.0.0.0",
            "127.0.0.1",
            "127.0.0.53",
            "10.214.0.2",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "fe80::1",
            "2001:db8::1",
        )
    ]
)
STATES = st.sampled_from(["0A", "01", "06"])
SOCKETS = st.lists(st.tuples(ADDRESSES, st.integers(1, 65535), STATES), max_size=20)


@given(SOCKETS)
@example([(ipaddress.ip_address("::ffff:127.0.0.1"), 80, "0A")])
@example([(ipaddress.ip_address("10.214.0.2"), 80, "0A")])
def test_the_listeners_of_any_table(sockets: list[tuple[object, int, str]]) -> None:
    tables = {4: TCP_HEAD, 6: TCP_HEAD}
    expected = set()
    for n, (address, port, state) in enumerate(sockets):
        assert isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address)
        tables[address.version] += f"{n:4}: {_hex(address)}:{port:04X} 00000000:0000 {state} x\n"
        mapped = getattr(address, "ipv4_mapped", None) or address
        if state == "0A" and (mapped.is_loopback or mapped.is_unspecified):
            expected.add(port)
    assert listening_ports(tables.values()) == expected


def test_a_table_line_that_is_not_a_socket_is_skipped() -> None:
    assert listening_ports([TCP_HEAD + "garbage\n   9: ZZ:1F90 0 0A\n"]) == set()


def test_the_tables_of_a_process_that_is_not_there_are_not_known() -> None:
    assert read_listening_ports(2**22 + 12345) is None


def test_the_tables_of_this_process_are_read() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        found = read_listening_ports(os.getpid())
        assert found is not None and server.getsockname()[1] in found


# --- a forwarded connection against a SPDY server -----------------------------------------------


class FakeForwarder:
    """The server end: accepts the request's two streams, then runs ``script`` with them."""

    def __init__(self, sock: socket.socket, script: Callable[[SpdyStream, SpdyStream], None]):
        self.streams: dict[str, SpdyStream] = {}
        self._script = script
        self.connection = SpdyConnection(
            SocketTransport(sock), client=False, accept=self._accept, flow_control=False
        )
        self.served = threading.Thread(target=self.connection.serve, daemon=True)
        self.served.start()

    def _accept(self, stream: SpdyStream) -> None:
        self.streams[header(stream.headers, "streamtype") or ""] = stream
        stream.reply()
        if len(self.streams) == 2:
            args = (self.streams["error"], self.streams["data"])
            threading.Thread(target=self._script, args=args, daemon=True).start()


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    yield ours, theirs
    for sock in (ours, theirs):
        sock.close()


def forward(
    pair: tuple[socket.socket, socket.socket], script: Callable[[SpdyStream, SpdyStream], None]
) -> tuple[socket.socket, Forward, list[Forward]]:
    ended: list[Forward] = []
    FakeForwarder(pair[1], script)
    made = Forward(pair[0], b"", 8080, "port 8080 in sandbox s", ended.append)
    near = made.start()
    near.settimeout(10)
    return near, made, ended


def read_all(sock: socket.socket) -> bytes:
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


def test_bytes_go_both_ways_and_the_ends_follow(pair: tuple[socket.socket, socket.socket]) -> None:
    def echo(error: SpdyStream, data: SpdyStream) -> None:
        while chunk := data.read():
            data.write(chunk.upper())
        data.close()  # the port's end of input, after the client's

    near, _, ended = forward(pair, echo)
    near.sendall(b"hello " * 50_000)
    near.shutdown(socket.SHUT_WR)
    assert read_all(near) == b"HELLO " * 50_000
    near.close()
    wait_until(lambda: ended, "the forward to end")
    wait_until(lambda: pair[0].fileno() == -1, "its connection to be closed")


def test_the_caller_closing_its_end_frees_the_connection(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    release = threading.Event()

    def talks_forever(error: SpdyStream, data: SpdyStream) -> None:
        data.write(b"banner\n")
        release.wait(10)

    near, _, ended = forward(pair, talks_forever)
    assert near.recv(100) == b"banner\n"
    near.close()
    wait_until(lambda: ended, "the forward to end")
    wait_until(lambda: pair[0].fileno() == -1, "its connection to be closed")
    release.set()


def test_the_servers_refusal_closes_the_callers_end(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    def refuses(error: SpdyStream, data: SpdyStream) -> None:
        error.write(b"error forwarding port 8080 to pod s: connection refused")
        error.close()
        data.close()

    near, _, ended = forward(pair, refuses)
    assert read_all(near) == b""
    wait_until(lambda: ended, "the forward to end")
    near.close()


def test_close_ends_a_forward_at_once(pair: tuple[socket.socket, socket.socket]) -> None:
    release = threading.Event()
    near, made, ended = forward(pair, lambda error, data: bool(release.wait(10)))
    assert ended == []
    made.close()
    made.close()  # idempotent
    assert ended == [made] and read_all(near) == b""
    wait_until(lambda: pair[0].fileno() == -1, "its connection to be closed")
    release.set()


def test_the_requests_streams_name_the_port(pair: tuple[socket.socket, socket.socket]) -> None:
    seen: list[tuple[str | None, ...]] = []

    def note(error: SpdyStream, data: SpdyStream) -> None:
        seen.extend(
            tuple(header(s.headers, name) for name in ("streamtype", "port", "requestid"))
            for s in (error, data)
        )

    near, _, ended = forward(pair, note)
    wait_until(lambda: seen, "the request")
    assert seen == [("error", "8080", "0"), ("data", "8080", "0")]
    near.close()
    wait_until(lambda: ended, "the forward to end")


def test_the_sandbox_process_in_containerds_verbose_status() -> None:
    spec = {"linux": {"namespaces": [{"type": "pid"}, {"type": "network", "path": "/run/n/1"}]}}
    assert sandbox_process(json.dumps({"pid": 42, "runtimeSpec": spec})) == (42, "/run/n/1")
    assert sandbox_process(json.dumps({"pid": 42})) == (42, "")
    for bad in ("", "not json", "[]", '{"pid": "x"}'):
        assert sandbox_process(bad)[0] == 0


def test_a_process_is_in_its_own_namespace_only() -> None:
    assert in_namespace(os.getpid(), "")
    assert in_namespace(os.getpid(), f"/proc/{os.getpid()}/ns/net")
    assert not in_namespace(os.getpid(), "/nonexistent/netns")
    assert not in_namespace(2**22 + 12345, "")
