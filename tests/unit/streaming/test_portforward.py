"""The port-forward protocol on a SPDY connection, driven by a client as kubectl's: an error and
a data stream per connection, many at once, half-close both ways, errors on the error stream,
streams with bad headers reset."""

from __future__ import annotations

import concurrent.futures
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from kubecore._contract.errors import ContainerRuntimeError
from kubecore._streaming.portforward import (
    MAX_WAITING_PAIRS,
    PortForwardSession,
    StreamRejected,
    stream_role,
)
from kubecore._streaming.portforward_http import SocketTransport
from kubecore._streaming.spdy import Headers, RstStatus
from kubecore._streaming.spdy_connection import SpdyConnection, SpdyStream
from tests.unit.streaming.spdy_support import read_all, serving

WAIT = 20.0


def _serve_echo(sock: socket.socket) -> None:
    with sock:
        while data := sock.recv(65536):
            sock.sendall(data)


def _serve_banner(sock: socket.socket) -> None:
    with sock:
        sock.sendall(b"hello\n")  # then it reads until the client half-closes
        while sock.recv(65536):
            pass


SERVERS: dict[int, Callable[[socket.socket], None]] = {7: _serve_echo, 25: _serve_banner}


def connect(port: int, timeout: float) -> socket.socket:
    server = SERVERS.get(port)
    if server is None:
        raise ContainerRuntimeError(f"connection refused: nothing listens on port {port}")
    mine, theirs = socket.socketpair()
    threading.Thread(target=server, args=(theirs,), daemon=True).start()
    return mine


@pytest.fixture
def client() -> Iterator[SpdyConnection]:
    left, right = socket.socketpair()
    session = PortForwardSession(connect, "default/web")
    server = threading.Thread(target=session.serve, args=(SocketTransport(right),), daemon=True)
    server.start()
    connection = SpdyConnection(SocketTransport(left), client=True, flow_control=False)
    reader = serving(connection)
    yield connection
    connection.close()
    reader.join(WAIT)
    server.join(WAIT)
    left.close()
    right.close()


def open_pair(connection: SpdyConnection, port: int, request: int) -> tuple[SpdyStream, SpdyStream]:
    """As kubectl: the error stream (closed for writing at once), then the data stream."""
    headers: Headers = (("streamtype", "error"), ("port", str(port)), ("requestid", str(request)))
    error = connection.open_stream(headers)
    error.close()
    data = connection.open_stream((("streamtype", "data"), *headers[1:]))
    return error, data


def test_an_echo_through_a_forwarded_connection(client: SpdyConnection) -> None:
    error, data = open_pair(client, 7, 0)
    data.write(b"ping " * 10_000)
    data.close()  # the client half-closes: the pod reads end of input, and still answers
    assert read_all(data) == b"ping " * 10_000
    assert read_all(error) == b""
    assert error.replied.is_set() and data.replied.is_set()


def test_the_pod_speaks_first_and_half_closes_last(client: SpdyConnection) -> None:
    error, data = open_pair(client, 25, 0)
    assert data.read() == b"hello\n"
    data.close()
    assert read_all(data) == b""  # the pod ended once it read the client's end of input
    assert read_all(error) == b""


def test_twenty_concurrent_connections_on_two_ports(client: SpdyConnection) -> None:
    def one(request: int) -> bytes:
        port = 7 if request % 2 else 25
        error, data = open_pair(client, port, request)
        if port == 7:
            data.write(f"request {request}".encode())
        data.close()
        answer = read_all(data)
        assert read_all(error) == b""
        return answer

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(one, range(20), timeout=WAIT))
    for request, answer in enumerate(answers):
        assert answer == (f"request {request}".encode() if request % 2 else b"hello\n")


def test_a_port_nothing_listens_on_is_reported_on_the_error_stream(client: SpdyConnection) -> None:
    error, data = open_pair(client, 9999, 0)
    assert read_all(error) == (
        b"error forwarding port 9999 to pod default/web: "
        b"connection refused: nothing listens on port 9999"
    )
    assert read_all(data) == b""
    error, data = open_pair(client, 7, 1)  # the session goes on
    data.write(b"still here")
    data.close()
    assert read_all(data) == b"still here"


def test_streams_with_bad_headers_are_reset(client: SpdyConnection) -> None:
    for headers in (
        (("port", "7"), ("requestid", "0")),
        (("streamtype", "bogus"), ("port", "7")),
        (("streamtype", "data"),),
        (("streamtype", "data"), ("port", "70000")),
    ):
        stream = client.open_stream(headers)
        assert read_all(stream) == b""
        assert stream.reset_status == RstStatus.CANCEL


def test_a_second_error_stream_for_a_request_is_reset(client: SpdyConnection) -> None:
    headers: Headers = (("streamtype", "error"), ("port", "7"), ("requestid", "5"))
    error = client.open_stream(headers)
    error.close()
    second = client.open_stream(headers)
    assert read_all(second) == b""
    assert second.reset_status == RstStatus.PROTOCOL_ERROR
    data = client.open_stream((("streamtype", "data"), *headers[1:]))
    data.write(b"paired")
    data.close()
    assert read_all(data) == b"paired"
    assert read_all(error) == (
        b"error processing stream for request 5: error stream already assigned"
    )


def test_a_client_without_request_ids_is_paired_by_stream_id() -> None:
    assert stream_role(1, (("streamtype", "error"), ("port", "80"))).request_id == "1"
    assert stream_role(3, (("streamtype", "data"), ("port", "80"))).request_id == "1"
    with pytest.raises(StreamRejected, match="port"):
        stream_role(3, (("streamtype", "data"), ("port", "http")))


def test_requests_waiting_for_their_second_stream_are_bounded(client: SpdyConnection) -> None:
    waiting = [
        client.open_stream((("streamtype", "error"), ("port", "7"), ("requestid", str(n))))
        for n in range(MAX_WAITING_PAIRS + 1)
    ]
    last = waiting[-1]
    assert read_all(last) == b""
    assert last.reset_status == RstStatus.REFUSED_STREAM
    assert all(stream.reset_status is None for stream in waiting[:-1])
    # The data stream of a waiting request completes it, and it is served.
    data = client.open_stream((("streamtype", "data"), ("port", "7"), ("requestid", "0")))
    data.write(b"served")
    data.close()
    assert read_all(data) == b"served"


def test_what_a_client_writes_on_an_error_stream_is_dropped(client: SpdyConnection) -> None:
    headers: Headers = (("streamtype", "error"), ("port", "7"), ("requestid", "1"))
    error = client.open_stream(headers)
    error.write(b"noise" * 200_000)  # nobody reads it: it must not hold the session's reader
    data = client.open_stream((("streamtype", "data"), *headers[1:]))
    data.write(b"heard")
    data.close()
    assert read_all(data) == b"heard"
