"""A server-side WebSocket (RFC 6455) on a blocking socket, framed by ``wsproto``.

``accept`` answers an HTTP request that asks to upgrade (its head already read by the HTTP
server) with ``101 Switching Protocols`` and one of the subprotocols it offered, or raises
``HTTPError`` (400) saying what is missing. The ``WebSocket`` it returns is read by one thread
(``receive``) while others ``send``. Every use of the socket and of the framing state is behind
one lock, taken only once the socket has something to read (a TLS connection must never be read
and written by two threads at once); a send waits at most ``write_timeout`` seconds for a slow
client. ``abort`` ends a connection from any thread, unblocking both sides. Pings are answered
and close frames returned as the protocol says.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import time
from collections.abc import Sequence
from email.message import Message
from http import HTTPStatus

from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from kubecore._apimachinery.rules import HTTPError

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest message a client may send (kubectl sends at most 32 KiB at a time)."""
_READ_BYTES = 65536
_POLL_SECONDS = 1.0
"""How long ``receive`` waits for the socket before it looks again whether it was aborted."""
_READ_SECONDS = 1.0
"""How long one read of a socket that has shown data may take (the rest of a TLS record)."""
WRITE_TIMEOUT = 30.0
"""The default time a send may take before the client counts as gone."""


def wants_websocket(headers: Message) -> bool:
    """Whether a request asks to be upgraded to a WebSocket."""
    upgrade = (headers.get("Upgrade") or "").lower()
    return "websocket" in [word.strip() for word in upgrade.split(",")]


def offered_protocols(headers: Message) -> list[str]:
    """The subprotocols a request offers (``Sec-WebSocket-Protocol``), in its order."""
    offered: list[str] = []
    for value in headers.get_all("Sec-WebSocket-Protocol") or []:
        offered.extend(word.strip() for word in value.split(",") if word.strip())
    return offered


def choose_protocol(offered: Sequence[str], served: Sequence[str]) -> str | None:
    """The first of ``served`` (the server's preference) that the client offered."""
    return next((protocol for protocol in served if protocol in offered), None)


class WebSocketClosed(Exception):
    """The connection is closed (by either side, or it broke)."""


class WebSocket:
    """One accepted WebSocket; ``subprotocol`` is the one agreed."""

    def __init__(
        self,
        sock: socket.socket,
        connection: WSConnection,
        subprotocol: str,
        write_timeout: float = WRITE_TIMEOUT,
    ) -> None:
        self.sock = sock
        self.subprotocol = subprotocol
        self.write_timeout = write_timeout
        self._connection = connection
        self._lock = threading.Lock()
        self._parts: list[bytes] = []
        self._size = 0
        self._ready: list[bytes | None] = []
        self._aborted = threading.Event()
        self.idle_timeout: float | None = None
        """With a value: ``receive`` gives up (None, the connection aborted) after this many
        seconds without a byte from the peer."""

    def receive(self) -> bytes | None:
        """The next whole message (text is returned encoded), or None once the peer closed,
        the connection broke or was aborted. Only one thread may call it."""
        heard = time.monotonic()
        while not self._ready:
            with self._lock:
                data = self._recv_locked() if self._readable() else None
                if data is None:
                    idle = self.idle_timeout
                    if idle is not None and time.monotonic() - heard > idle:
                        self._abort_locked()  # a peer gone without a word (pings count)
                        self._ready.append(None)
                    continue
                heard = time.monotonic()
                try:
                    self._connection.receive_data(data or None)
                    self._take(list(self._connection.events()))
                except RemoteProtocolError as error:
                    self._reply_locked(error.event_hint)
                    self._ready.append(None)
                except LocalProtocolError:  # read again after the end
                    self._ready.append(None)
                if not data and not self._ready:
                    self._ready.append(None)
        return self._ready.pop(0)

    def _readable(self) -> bool:
        """Whether the socket has something to read (or has ended), waiting up to
        ``_POLL_SECONDS`` without the lock. Called with the lock held: it is let go while
        waiting."""
        pending = getattr(self.sock, "pending", None)
        if self._aborted.is_set() or (pending is not None and pending()):
            return True
        self._lock.release()
        try:
            fd = self.sock.fileno()
            if fd < 0:
                return True
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(_POLL_SECONDS * 1000))
        except (OSError, ValueError):
            return True
        finally:
            self._lock.acquire()

    def _recv_locked(self) -> bytes | None:
        """What the socket has (b"" at its end), or None when a TLS record is still partial."""
        if self._aborted.is_set():
            return b""
        try:
            self.sock.settimeout(_READ_SECONDS)
            return self.sock.recv(_READ_BYTES)
        except (TimeoutError, ssl.SSLWantReadError, BlockingIOError, InterruptedError):
            return None
        except OSError:
            return b""

    def send(self, data: bytes) -> None:
        """Send one binary message; raises ``WebSocketClosed`` once the connection is closed
        (or when the client did not take it within ``write_timeout``)."""
        self._send(BytesMessage(data=data))

    def send_text(self, text: str) -> None:
        """Send one text message (as ``send``)."""
        self._send(TextMessage(data=text))

    def _send(self, message: BytesMessage | TextMessage) -> None:
        with self._lock:
            if self._aborted.is_set() or self._connection.state is not ConnectionState.OPEN:
                raise WebSocketClosed("the WebSocket is closed")
            try:
                self._sendall(self._connection.send(message))
            except (OSError, LocalProtocolError) as error:
                self._abort_locked()
                raise WebSocketClosed(str(error) or "the client did not take the data") from error

    def abort(self) -> None:
        """End the connection now, from any thread: a ``receive`` returns None, a ``send``
        raises. The socket itself is closed by its owner."""
        self._aborted.set()
        with contextlib.suppress(OSError):
            # The plain socket's shutdown: a TLS socket's own would drop its TLS state under
            # a thread reading it.
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)

    def _abort_locked(self) -> None:
        self._aborted.set()
        with contextlib.suppress(OSError):
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)

    @property
    def open(self) -> bool:
        """Whether messages can still be sent (neither side has closed, nothing broke)."""
        return not self._aborted.is_set() and self._connection.state is ConnectionState.OPEN

    def close(self, code: int = 1000, reason: str = "", *, last: bytes | str | None = None) -> None:
        """Send a close frame (once; a closed or broken connection is left as it is), after
        ``last`` (a final binary or text message) in the same write when there is one: a client
        that stops reading once it has that message learns of the close with it, not later."""
        with self._lock:
            if self._connection.state is ConnectionState.OPEN:
                with contextlib.suppress(OSError, LocalProtocolError):
                    data = b""
                    if last is not None:
                        message = TextMessage(last) if isinstance(last, str) else BytesMessage(last)
                        data = self._connection.send(message)
                    self._sendall(data + self._connection.send(CloseConnection(code, reason)))

    def _take(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, (BytesMessage, TextMessage)):
                data = event.data if isinstance(event, BytesMessage) else event.data.encode()
                self._size += len(data)
                if self._size > MAX_MESSAGE_BYTES:
                    self._reply_locked(CloseConnection(1009, "message too big"))
                    self._ready.append(None)
                    return
                self._parts.append(bytes(data))
                if event.message_finished:
                    self._ready.append(b"".join(self._parts))
                    self._parts, self._size = [], 0
            elif isinstance(event, Ping):
                self._reply_locked(event.response())
            elif isinstance(event, CloseConnection):
                self._reply_locked(event.response())
                self._ready.append(None)

    def _reply_locked(self, event: Event | None) -> None:
        if event is None:
            return
        with contextlib.suppress(OSError, LocalProtocolError):
            self._sendall(self._connection.send(event))

    def _sendall(self, data: bytes) -> None:
        if data:
            self.sock.settimeout(self.write_timeout)
            self.sock.sendall(data)


class Handshake:
    """A checked upgrade request, not answered yet (``handshake``): ``complete`` sends the
    ``101`` and gives the ``WebSocket``."""

    def __init__(self, connection: WSConnection, subprotocol: str, answer: bytes) -> None:
        self.subprotocol = subprotocol
        self._connection = connection
        self._answer = answer

    def complete(self, sock: socket.socket, write_timeout: float = WRITE_TIMEOUT) -> WebSocket:
        sock.settimeout(write_timeout)
        sock.sendall(self._answer)
        return WebSocket(sock, self._connection, self.subprotocol, write_timeout)


def handshake(
    method: str,
    target: str,
    headers: Message,
    served: Sequence[str],
    unoffered: str | None = None,
) -> Handshake:
    """Check an upgrade request (its head: ``method``, ``target``, ``headers``) and agree on
    the first of ``served`` the client offers; nothing is sent. A client that offers no
    subprotocol is answered without one and speaks ``unoffered`` (the kubelet's default
    protocol; None: refused). Raises ``HTTPError`` (400) when it is not a valid WebSocket
    handshake or offers none of them."""
    if method != "GET" or not wants_websocket(headers):
        raise HTTPError(HTTPStatus.BAD_REQUEST, "expected a WebSocket upgrade (GET, Upgrade)")
    offered = offered_protocols(headers)
    subprotocol = choose_protocol(offered, served)
    agreed = subprotocol
    if not offered and unoffered is not None:
        subprotocol, agreed = unoffered, None
    if subprotocol is None:
        raise HTTPError(
            HTTPStatus.BAD_REQUEST,
            f"none of the offered WebSocket subprotocols {offered} is served; "
            f"this endpoint speaks {list(served)}",
        )
    connection = WSConnection(ConnectionType.SERVER)
    head = [f"{method} {target} HTTP/1.1"]
    head.extend(f"{name}: {value}" for name, value in headers.items())
    try:
        connection.receive_data(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        request = next((e for e in connection.events() if isinstance(e, Request)), None)
        if request is None:
            raise HTTPError(HTTPStatus.BAD_REQUEST, "not a valid WebSocket handshake")
        answer = connection.send(AcceptConnection(subprotocol=agreed))
    except (LocalProtocolError, RemoteProtocolError, UnicodeEncodeError) as error:
        raise HTTPError(HTTPStatus.BAD_REQUEST, f"WebSocket handshake: {error}") from None
    return Handshake(connection, subprotocol, answer)


def accept(
    sock: socket.socket,
    method: str,
    target: str,
    headers: Message,
    served: Sequence[str],
    write_timeout: float = WRITE_TIMEOUT,
) -> WebSocket:
    """Upgrade the request (its head: ``method``, ``target``, ``headers``) to a WebSocket with
    the first of ``served`` the client offers (``handshake``, then ``complete``). Raises
    ``HTTPError`` (400) when it is not a WebSocket handshake or offers none of them; nothing has
    been sent then."""
    return handshake(method, target, headers, served).complete(sock, write_timeout)
