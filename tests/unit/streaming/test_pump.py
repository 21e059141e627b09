"""The WebSocket (``kubecore._streaming.websocket``) and the session pump
(``kubecore._streaming.remotecommand.Pump``) on a real loopback connection, with a scripted
session: output in order on the right channels, the exit status, stdin and its close, resizes,
a client that goes, an abort, pings, refused handshakes."""

from __future__ import annotations

import http.client
import io
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from wsproto.events import BytesMessage, CloseConnection

from kubecore._apimachinery.rules import HTTPError
from kubecore._contract.streaming import OutputStream, TerminalSize
from kubecore._streaming.channels import PROTOCOL_NAMES, dialect
from kubecore._streaming.remotecommand import Pump, StreamOptions, ready_at_once
from kubecore._streaming.websocket import MAX_MESSAGE_BYTES, WebSocket, WebSocketClosed, accept
from tests.unit.streaming.ws_support import TIMEOUT, Client, Rejected, ScriptedSession

EXEC = StreamOptions(stdin=True, stdout=True, stderr=True, tty=False, command=("sh",))


class Server:
    """Accepts one connection on loopback and hands the upgraded WebSocket to ``serve``."""

    def __init__(self, serve: Callable[[WebSocket], None], served: tuple[str, ...]) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.serve = serve
        self.served = served
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        sock, _ = self.listener.accept()
        try:
            head = b""
            while b"\r\n\r\n" not in head:
                head += sock.recv(1)
            line, _, rest = head.decode("latin-1").partition("\r\n")
            method, target, _ = line.split(" ")
            headers = http.client.parse_headers(io.BytesIO(rest.encode("latin-1")))
            try:
                ws = accept(sock, method, target, headers, self.served, write_timeout=2.0)
            except HTTPError as error:
                body = error.body()
                sock.sendall(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                return
            self.serve(ws)
        except BaseException as error:
            self.error = error
        finally:
            self.done.set()
            sock.close()
            self.listener.close()


def pump_server(session: ScriptedSession, options: StreamOptions = EXEC) -> Server:
    def serve(ws: WebSocket) -> None:
        Pump(ws, dialect(ws.subprotocol), session, options, "exec").run()

    return Server(serve, PROTOCOL_NAMES)


@pytest.fixture
def session() -> Iterator[ScriptedSession]:
    yield ScriptedSession()


def test_output_goes_out_in_order_then_the_exit_status(session: ScriptedSession) -> None:
    server = pump_server(session)
    client = Client.connect(server.port, "/", ["v5.channel.k8s.io"])
    assert client.subprotocol == "v5.channel.k8s.io"
    assert client.receive() == b"\x01"  # the streams are ready
    session.emit(OutputStream.STDOUT, b"one\n")
    session.emit(OutputStream.STDERR, b"two\n")
    session.emit(OutputStream.STDOUT, b"three\n")
    session.exit(3)
    messages = client.all_messages()
    assert messages[:3] == [b"\x01one\n", b"\x02two\n", b"\x01three\n"]
    status = json.loads(bytes(messages[3])[1:])
    assert bytes(messages[3])[:1] == b"\x03"
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
    assert len(messages) == 4
    assert client.close_code == 1000, "the server closes cleanly"
    assert server.done.wait(TIMEOUT) and server.error is None
    assert session.closed.is_set()


def test_stdin_resizes_and_the_close_of_stdin_reach_the_session(session: ScriptedSession) -> None:
    session.tty = True
    server = pump_server(session, StreamOptions(True, True, False, True, command=("sh",)))
    client = Client.connect(server.port, "/", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
    assert client.receive() == b"\x01"
    client.send(b"\x00echo hi\r")
    client.send(b'\x04{"Width":100,"Height":30}')
    client.send(b"\x09ignored: no such channel")
    client.send(b"\x04not json")
    client.ping()
    client.send(b"\xff\x00")
    session.wait_stdin(b"echo hi\r")
    assert session.stdin_closed.wait(TIMEOUT)
    assert session.sizes == [TerminalSize(100, 30)]
    session.emit(OutputStream.STDERR, b"on a tty, stderr is stdout")
    session.exit(0)
    messages = client.all_messages()
    assert messages == [
        b"\x01on a tty, stderr is stdout",
        b'\x03{"metadata":{},"status":"Success"}',
    ]
    assert client.pongs == 1


class _SlowToClose(ScriptedSession):
    """A session whose close takes a while (a runtime cleaning up)."""

    def close(self) -> None:
        time.sleep(0.2)
        super().close()


def test_the_exit_status_and_the_close_frame_arrive_in_one_read() -> None:
    """A client that stops reading once it has the status (lightkube's closes its socket while
    a thread of its own still reads) learns of the close with it, even from a session slow to
    close: the two go out in one write."""
    session = _SlowToClose()
    server = pump_server(session, StreamOptions(False, True, False, False, command=("true",)))
    client = Client.connect(server.port, "/", ["v5.channel.k8s.io"])
    assert client.receive() == b"\x01"
    session.exit(0)
    client.conn.receive_data(client.sock.recv(65536))
    events = list(client.conn.events())
    assert [type(e) for e in events] == [BytesMessage, CloseConnection], events
    assert bytes(events[0].data)[:1] == b"\x03"
    client.sock.sendall(client.conn.send(events[1].response()))
    assert server.done.wait(TIMEOUT) and server.error is None


def test_a_client_that_goes_closes_the_session(session: ScriptedSession) -> None:
    server = pump_server(session)
    client = Client.connect(server.port, "/", ["v5.channel.k8s.io"])
    assert client.receive() == b"\x01"
    client.close()
    assert session.closed.wait(TIMEOUT)
    assert server.done.wait(TIMEOUT) and server.error is None


def test_a_client_that_vanishes_closes_the_session(session: ScriptedSession) -> None:
    server = pump_server(session)
    client = Client.connect(server.port, "/", ["v4.channel.k8s.io"])
    assert client.receive() == b"\x01"
    client.sock.close()
    assert session.closed.wait(TIMEOUT)
    assert server.done.wait(TIMEOUT)


def test_base64_and_v1_dialects(session: ScriptedSession) -> None:
    server = pump_server(session)
    client = Client.connect(server.port, "/", ["base64.channel.k8s.io"])
    assert client.receive() == "1"
    client.send_text("0aGk=")  # "hi" on stdin
    session.wait_stdin(b"hi")
    session.emit(OutputStream.STDOUT, b"out")
    session.exit(2)
    messages = client.all_messages()
    assert messages[0] == "1b3V0"
    assert messages[1].startswith("3")
    assert b"non-zero exit code" in __import__("base64").b64decode(str(messages[1])[1:])


def test_the_streams_asked_for_are_the_only_ones_sent(session: ScriptedSession) -> None:
    server = pump_server(session, StreamOptions(False, False, True, False, command=("x",)))
    client = Client.connect(server.port, "/", ["v4.channel.k8s.io"])
    assert client.receive() == b"\x02"  # the lowest stream asked for
    session.emit(OutputStream.STDOUT, b"dropped")
    session.emit(OutputStream.STDERR, b"kept")
    session.exit(0)
    assert client.all_messages() == [b"\x02kept", b'\x03{"metadata":{},"status":"Success"}']


def test_an_unknown_exit_code_is_an_internal_error(session: ScriptedSession) -> None:
    server = pump_server(session)
    client = Client.connect(server.port, "/", ["v5.channel.k8s.io"])
    assert client.receive() == b"\x01"
    session.exit(None)
    (status,) = client.all_messages()
    assert json.loads(bytes(status)[1:])["reason"] == "InternalError"


def test_abort_ends_a_blocked_receive_and_later_sends() -> None:
    received: list[bytes | None] = []
    aborted = threading.Event()
    sockets: list[WebSocket] = []

    def serve(ws: WebSocket) -> None:
        sockets.append(ws)
        threading.Timer(0.2, ws.abort).start()
        received.append(ws.receive())
        with pytest.raises(WebSocketClosed):
            ws.send(b"late")
        aborted.set()

    server = Server(serve, ("v5.channel.k8s.io",))
    Client.connect(server.port, "/", ["v5.channel.k8s.io"])
    assert aborted.wait(TIMEOUT), server.error
    assert received == [None]
    assert not sockets[0].open


def test_a_message_too_big_closes_the_connection() -> None:
    received: list[bytes | None] = []

    def serve(ws: WebSocket) -> None:
        received.append(ws.receive())

    server = Server(serve, ("v5.channel.k8s.io",))
    client = Client.connect(server.port, "/", ["v5.channel.k8s.io"])
    chunk = b"x" * (1024 * 1024)
    try:
        for _ in range(MAX_MESSAGE_BYTES // len(chunk) + 2):
            client.send(chunk, finished=False)  # one message, in parts
    except OSError:
        pass  # the server closed meanwhile
    assert server.done.wait(TIMEOUT)
    assert received == [None]


def test_a_handshake_offering_nothing_served_is_refused() -> None:
    server = Server(lambda ws: None, ("v5.channel.k8s.io",))
    with pytest.raises(Rejected) as refused:
        Client.connect(server.port, "/", ["v9.channel.k8s.io"])
    assert refused.value.status == 400
    assert b"v5.channel.k8s.io" in refused.value.body


def test_only_client_go_1_33_and_later_take_output_at_once() -> None:
    assert ready_at_once("kubectl/v1.37.1 (linux/amd64) kubernetes/abc")
    assert not ready_at_once("kubectl/v1.32.4 (linux/amd64) kubernetes/abc")
    assert not ready_at_once("curl/8.0")
    assert not ready_at_once("")


def test_a_silent_peer_counts_as_gone_after_the_idle_timeout() -> None:
    received: list[bytes | None] = []

    def serve(ws: WebSocket) -> None:
        ws.idle_timeout = 0.3
        received.append(ws.receive())

    server = Server(serve, ("v5.channel.k8s.io",))
    client = Client.connect(server.port, "/", ["v5.channel.k8s.io"])
    assert server.done.wait(TIMEOUT)
    assert received == [None]
    assert client.receive() is None


def _upgraded_pair() -> tuple[WebSocket, socket.socket]:
    """A server WebSocket on one end of a socket pair, the other end the raw client."""
    server, client = socket.socketpair()
    headers = http.client.parse_headers(
        io.BytesIO(
            b"Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            b"Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n"
        )
    )
    ws = accept(server, "GET", "/", headers, ["v5.channel.k8s.io"], write_timeout=2.0)
    client.settimeout(2.0)
    assert client.recv(4096).startswith(b"HTTP/1.1 101")
    return ws, client


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
@example(b"\x88\x80\x00\x00\x00\x00")  # a close frame that is not masked right
@example(b"\x81\x85\x00\x00\x00\x00\xff\xfe\xfd\xfc\xfb")  # text that is not UTF-8
def test_any_bytes_from_a_client_end_in_messages_or_a_close(data: bytes) -> None:
    ws, client = _upgraded_pair()
    try:
        client.sendall(data)
        client.shutdown(socket.SHUT_WR)
        for _ in range(len(data) + 2):
            if ws.receive() is None:
                break
        else:
            raise AssertionError("receive never reported the end")
    finally:
        client.close()
        ws.sock.close()
