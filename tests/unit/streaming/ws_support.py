"""A small WebSocket client for the streaming tests (wsproto, client side, blocking, bounded in
time), and a scripted ``StreamSession`` to serve."""

from __future__ import annotations

import collections
import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Iterator

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Message,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)

from kubecore._contract.streaming import OutputStream, TerminalSize

TIMEOUT = 10.0


class Rejected(Exception):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"{status}: {body!r}")
        self.status = status
        self.body = body


class Client:
    """One client connection: ``open`` does the handshake (``Rejected`` for an HTTP answer)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.settimeout(TIMEOUT)
        self.conn = WSConnection(ConnectionType.CLIENT)
        self.subprotocol: str | None = None
        self._messages: collections.deque[bytes | str | None] = collections.deque()
        self._parts: list[bytes | str] = []
        self.pongs = 0
        self.close_code: int | None = None

    @classmethod
    def connect(
        cls,
        port: int,
        target: str,
        protocols: list[str],
        headers: dict[str, str] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> Client:
        sock = socket.create_connection(("127.0.0.1", port), TIMEOUT)
        if tls is not None:
            sock = tls.wrap_socket(sock, server_hostname="127.0.0.1")
        client = cls(sock)
        client.open(target, protocols, headers or {})
        return client

    def open(self, target: str, protocols: list[str], headers: dict[str, str]) -> None:
        extra = [(k.encode(), v.encode()) for k, v in headers.items()]
        request = Request(
            host="127.0.0.1", target=target, subprotocols=protocols, extra_headers=extra
        )
        self.sock.sendall(self.conn.send(request))
        status, body = 0, b""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            data = self.sock.recv(65536)
            self.conn.receive_data(data or None)
            for event in self.conn.events():
                if isinstance(event, AcceptConnection):
                    self.subprotocol = event.subprotocol
                    return
                if isinstance(event, RejectConnection):
                    status = event.status_code
                    if not event.has_body:
                        raise Rejected(status, b"")
                elif isinstance(event, RejectData):
                    body += event.data
                    if event.body_finished:
                        raise Rejected(status, body)
                else:
                    self._take(event)
            if not data:
                raise Rejected(status, body)
        raise AssertionError("no handshake answer in time")

    def send(self, data: bytes, *, finished: bool = True) -> None:
        self.sock.sendall(self.conn.send(BytesMessage(data=data, message_finished=finished)))

    def send_text(self, text: str) -> None:
        self.sock.sendall(self.conn.send(TextMessage(data=text)))

    def ping(self) -> None:
        self.sock.sendall(self.conn.send(Ping(b"hb")))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.sock.sendall(self.conn.send(CloseConnection(1000)))

    def receive(self) -> bytes | str | None:
        """The next message; None once the server closed (or the connection ended)."""
        deadline = time.monotonic() + TIMEOUT
        for event in self.conn.events():  # what came with an earlier read
            self._take(event)
        while not self._messages:
            if time.monotonic() > deadline:
                raise AssertionError("no message in time")
            try:
                data = self.sock.recv(65536)
            except (ConnectionError, ssl.SSLError):
                data = b""
            self.conn.receive_data(data or None)
            for event in self.conn.events():
                self._take(event)
            if not data and not self._messages:
                self._messages.append(None)
        return self._messages.popleft()

    def _take(self, event: object) -> None:
        if isinstance(event, Message):
            self._parts.append(event.data)
            if event.message_finished:
                parts, self._parts = self._parts, []
                joined: bytes | str = (
                    "".join(str(p) for p in parts)
                    if isinstance(event, TextMessage)
                    else b"".join(bytes(p) for p in parts)  # type: ignore[arg-type]
                )
                self._messages.append(joined)
        elif isinstance(event, CloseConnection):
            self.close_code = event.code
            with contextlib.suppress(Exception):
                self.sock.sendall(self.conn.send(event.response()))
            self._messages.append(None)
        elif isinstance(event, Ping):
            self.sock.sendall(self.conn.send(event.response()))
        else:
            self.pongs += 1

    def all_messages(self) -> list[bytes | str]:
        """Every message until the server closes."""
        got: list[bytes | str] = []
        for _ in range(10_000):
            message = self.receive()
            if message is None:
                return got
            got.append(message)
        raise AssertionError("too many messages")


class ScriptedSession:
    """A ``StreamSession`` a test drives: ``emit`` output, ``exit`` with a code; it records
    stdin, stdin's close, resizes and closes."""

    def __init__(self, tty: bool = False) -> None:
        self.tty = tty
        self.stdin = bytearray()
        self.stdin_closed = threading.Event()
        self.sizes: list[TerminalSize] = []
        self.closed = threading.Event()
        self.close_calls = 0
        self._cond = threading.Condition()
        self._queue: collections.deque[tuple[OutputStream, bytes]] = collections.deque()
        self._exit: int | None = None
        self._ended = False

    def emit(self, stream: OutputStream, data: bytes) -> None:
        with self._cond:
            self._queue.append((stream, data))
            self._cond.notify_all()

    def exit(self, code: int | None) -> None:
        with self._cond:
            self._exit, self._ended = code, True
            self._cond.notify_all()

    def write_stdin(self, data: bytes) -> None:
        with self._cond:
            self.stdin += data
            self._cond.notify_all()

    def close_stdin(self) -> None:
        self.stdin_closed.set()

    def output(self) -> Iterator[tuple[OutputStream, bytes]]:
        while True:
            with self._cond:
                self._cond.wait_for(
                    lambda: self._queue or self._ended or self.closed.is_set(), TIMEOUT
                )
                if self.closed.is_set() or not self._queue:
                    return
                chunk = self._queue.popleft()
            yield chunk

    def resize(self, size: TerminalSize) -> None:
        self.sizes.append(size)

    def wait(self, timeout: float | None = None) -> int | None:
        with self._cond:
            self._cond.wait_for(lambda: self._ended, timeout)
            return self._exit

    def close(self) -> None:
        self.close_calls += 1
        self.closed.set()
        with self._cond:
            self._cond.notify_all()

    def wait_stdin(self, wanted: bytes) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: wanted in self.stdin, TIMEOUT), bytes(self.stdin)
