"""A bounded HTTP server for ``http.server`` handlers.

The standard library's ``ThreadingHTTPServer`` starts a thread per connection and listens with a
backlog of 5: a burst of clients times out in the kernel's queue, and slow clients each hold a
thread for as long as they like. Here one selector thread accepts connections (backlog 1024) and
collects each whole request without blocking, its head and then its body; only a request that
has fully arrived is handed to a fixed pool of workers, which never read from the socket. A client
that sends nothing, or sends its head or body slowly, costs a socket and a buffer, never a worker:
it has ``head_timeout`` for the head and then ``body_timeout`` for the body, in all (not per
read), as Go's ``ReadHeaderTimeout`` and ``ReadTimeout``. Idle keep-alive connections go back to
the selector between requests.

Connections are bounded in all (``max_connections``) and per client (``max_connections_per_client``,
one IPv4 address or IPv6 /64, loopback included: ``client_of``). A connection that is idle (its
head not all arrived, or between keep-alive requests) may be closed to make room: when a client is
at its share, its own oldest idle connection; when the server is full, the oldest idle one of
anyone. Connections being answered (a stream, a watch, an exec session) are never closed for room.
The last ``health_reserve`` connections are kept for the health checks (``/healthz``, ``/readyz``,
``/livez``): a connection that takes one of them may send only such a request. With no room left
a new connection is answered ``503`` and closed (over TLS, only closed: an answer must not go out
in clear text on a TLS port). When ``accept`` fails for want of file descriptors (``EMFILE``,
``ENFILE``), the oldest idle connection is closed and, when there is none, the listener is left
unwatched for a growing pause (the kernel keeps new clients in its backlog), so that the selector
never spins on a listener it cannot accept from; that is logged once a minute at most, with a count.

The head is checked before any byte of the body is read (``read_head``): a request whose framing
is ambiguous (two ``Content-Length`` headers, ``Transfer-Encoding`` with ``Content-Length``, a
transfer coding other than ``chunked``, a folded or malformed header line, a request line that is
not ``METHOD target HTTP/x.y``) is answered ``400`` and its connection closed, so that no request
can hide inside another; ``chunked`` bodies are not taken (``411``); a body larger than allowed is
refused unread (``413``). A method that takes no body (``GET``, ``HEAD``, ...) may carry a small
one, which is read and dropped. A body is read only when ``admit`` says the request may send one
(the agent: when it is authenticated); other requests go to a worker with their head alone, are
answered without their body, and their connection closed.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import queue
import re
import selectors
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import Any

import attrs

from kubecore._apimachinery.rules import status_body
from kubecore._http.seats import HEALTH_PATHS, Seat, client_of, is_health_check, seat_for
from kubecore._manifest.documents import MAX_DOCUMENT_BYTES

logger = logging.getLogger(__name__)

DEFAULT_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 10250
"""Where the agent's HTTP API listens unless told otherwise (the kubelet's port)."""
MAX_HEAD_BYTES = 64 * 1024
MAX_DROPPED_BODY = 64 * 1024
"""The largest body a method that takes none may carry (it is read and dropped); past it, 413."""
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""The methods whose body a handler reads."""
_LINGER = 2.0
"""Seconds a closed connection's remaining input is drained."""
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_FIRST_PAUSE = 0.05
_LONGEST_PAUSE = 2.0
"""Seconds the listener is left unwatched after ``accept`` ran out of descriptors with no idle
connection to close: the first pause, doubled each time it fails again, up to the longest."""
_REPORT_EVERY = 60.0
"""Seconds between two warnings that ``accept`` ran out of descriptors."""


def status_response(code: HTTPStatus, message: str) -> bytes:
    """A whole HTTP/1.1 answer carrying a v1 ``Status``, that closes the connection."""
    body = status_body(code, message)
    head = (
        f"HTTP/1.1 {int(code)} {code.phrase}\r\nContent-Type: application/json\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body


_BUSY = status_response(HTTPStatus.SERVICE_UNAVAILABLE, "too many connections")
_HEALTH_ONLY = status_response(
    HTTPStatus.SERVICE_UNAVAILABLE,
    f"too many connections: only the health checks ({', '.join(HEALTH_PATHS)}) are answered now",
)
_TOO_LARGE = status_response(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request head too large")
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


# --- a request's head, checked before its body is read ---------------------------------------


class Refused(Exception):
    """A request answered from its head alone (and its connection closed)."""

    def __init__(self, code: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@attrs.frozen
class RequestHead:
    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    """(lower-case name, value) in the order sent."""
    size: int
    """Bytes of the head, its blank line included."""
    length: int
    """Bytes of the body (``Content-Length``; 0 when there is none)."""

    def header(self, name: str) -> str:
        """The value of header ``name`` (lower case), "" when absent."""
        for key, value in self.headers:
            if key == name:
                return value
        return ""


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_DIGITS = re.compile(r"[0-9]{1,18}")


def _show(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "...")


def head_end(buffer: bytes | bytearray) -> int | None:
    """Where the head in ``buffer`` ends (after its blank line), or None while it has not all
    arrived. A request line that cannot start an HTTP/1.x head (``GET /`` of HTTP/0.9, garbage)
    ends the head at once, so that it is answered without waiting for more."""
    first = buffer.find(b"\n")
    if first < 0:
        return None
    words = bytes(buffer[:first]).split()
    if len(words) != 3 or not words[2].startswith(b"HTTP/"):
        return first + 1
    ends = [i + 2 for i in (buffer.find(b"\n\n", first),) if i >= 0]
    ends += [i + 3 for i in (buffer.find(b"\n\r\n", first),) if i >= 0]
    return min(ends) if ends else None


def read_head(data: bytes) -> RequestHead:
    """The head ``data`` (up to its blank line) with the length of its body; raises ``Refused``
    for a head that cannot be answered safely, whatever the route."""
    text = data.decode("latin-1")
    lines = text.split("\n")
    request_line = lines[0].rstrip("\r")
    words = request_line.split()
    if len(words) == 2:
        raise Refused(HTTPStatus.BAD_REQUEST, "HTTP/0.9 requests are not served: use HTTP/1.1")
    if len(words) != 3 or not words[2].startswith("HTTP/") or not _TOKEN.fullmatch(words[0]):
        raise Refused(HTTPStatus.BAD_REQUEST, f"malformed request line {_show(request_line)}")
    headers: list[tuple[str, str]] = []
    for raw in lines[1:]:
        line = raw[:-1] if raw.endswith("\r") else raw
        if not line:
            break
        if "\r" in line or "\0" in line:
            raise Refused(HTTPStatus.BAD_REQUEST, f"malformed header line {_show(line)}")
        if line[0] in " \t":
            raise Refused(HTTPStatus.BAD_REQUEST, f"folded header line {_show(line)}")
        name, colon, value = line.partition(":")
        if not colon or not _TOKEN.fullmatch(name):
            raise Refused(HTTPStatus.BAD_REQUEST, f"malformed header line {_show(line)}")
        headers.append((name.lower(), value.strip(" \t")))
    method = words[0]
    length = body_length(headers)
    return RequestHead(method, words[1], tuple(headers), len(data), length)


def body_length(headers: Any) -> int:
    """The length of a request's body from its headers (pairs, or an ``email.message.Message``);
    raises ``Refused`` for framing two parties could read differently."""
    if hasattr(headers, "get_all"):
        lengths = headers.get_all("Content-Length") or []
        codings = headers.get_all("Transfer-Encoding") or []
    else:
        lengths = [value for name, value in headers if name == "content-length"]
        codings = [value for name, value in headers if name == "transfer-encoding"]
    if codings and lengths:
        raise Refused(
            HTTPStatus.BAD_REQUEST,
            "a request may not have both Transfer-Encoding and Content-Length",
        )
    if codings:
        coding = ", ".join(str(value).strip(" \t") for value in codings)
        if coding.lower() != "chunked":
            raise Refused(
                HTTPStatus.BAD_REQUEST, f"Transfer-Encoding {_show(coding)} is not supported"
            )
        raise Refused(HTTPStatus.LENGTH_REQUIRED, "send a Content-Length, not chunks")
    if len(lengths) > 1:
        raise Refused(HTTPStatus.BAD_REQUEST, "a request may have only one Content-Length")
    if not lengths:
        return 0
    value = str(lengths[0]).strip(" \t")
    if not _DIGITS.fullmatch(value):
        raise Refused(HTTPStatus.BAD_REQUEST, f"bad Content-Length {_show(value)}")
    return int(value)


Admit = Callable[[RequestHead, socket.socket], bool]
"""Whether the selector may read a request's body (the head has been checked already)."""


@attrs.frozen
class Limits:
    workers: int = 16
    """Requests answered at once."""
    max_connections: int = 1024
    """Open connections (waiting, idle or being answered); past it a new one gets a 503 (an idle
    one is closed first to make room)."""
    max_connections_per_client: int = 256
    """Open connections from one client (``client_of``); past it the client's oldest idle one is
    closed to make room, or the new one refused."""
    health_reserve: int = 8
    """Of ``max_connections``, the last ones, kept for health checks (``HEALTH_PATHS``)."""
    head_timeout: float = 10.0
    """Seconds a client has to send a request's head (and an idle keep-alive connection to
    start its next request)."""
    body_timeout: float = 10.0
    """Seconds a client has, once its head has arrived, to send the whole body."""
    max_body_bytes: int = MAX_DOCUMENT_BYTES
    """The largest body a request may send; a larger one is refused (413) before it is read."""


class RequestReader(io.RawIOBase):
    """One request, head and body, as the selector collected it: a worker reads it from memory
    and never waits on the client."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self._data = data

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = min(len(buffer), len(self._data))
        buffer[:count] = self._data[:count]
        self._data = self._data[count:]
        return count

    def readline(self, size: int | None = -1) -> bytes:
        end = self._data.find(b"\n")
        end = len(self._data) if end < 0 else end + 1
        if size is not None and size >= 0:
            end = min(end, size)
        line, self._data = self._data[:end], self._data[end:]
        return line


@attrs.define(eq=False)
class _Waiting:
    sock: socket.socket
    address: Any
    buffer: bytearray
    deadline: float
    client: str
    since: float
    """When the connection was accepted or came back from a worker: the oldest idle one is
    closed first to make room."""
    health_only: bool = False
    """It holds a connection of the health reserve: one health check, then it closes."""
    draining: bool = False
    """Answered and shut for writing: what the client still sends is read and dropped until it
    closes (closing with unread input would reset the connection and lose the answer)."""
    head: RequestHead | None = None
    """Set once the head has arrived and been checked; then the body is being collected."""
    end: int = 0
    """The bytes of ``buffer`` this request takes (its head, and its body when it is read)."""
    whole: bool = True
    """False when the body is not read: the connection cannot serve another request."""
    closed: bool = False

    @property
    def idle(self) -> bool:
        """Its request head has not all arrived (a new connection, or one kept alive between
        requests), or it is closing: not collecting a body, nor with a worker."""
        return self.head is None or self.draining


Handle = Callable[[socket.socket, Any, RequestReader], bool]
"""Answer one request from the reader; True to keep the connection for another request."""


def _admit_all(head: RequestHead, sock: socket.socket) -> bool:
    return True


class BoundedServer:
    """Accepts on ``(address, port)`` and answers complete requests with ``handle`` on a pool."""

    refusal: bytes = _BUSY
    """What a connection refused for want of room is sent before it is closed."""

    def __init__(
        self,
        address: str,
        port: int,
        handle: Handle,
        limits: Limits,
        admit: Admit = _admit_all,
    ) -> None:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind((address, port))
            self._listener.listen(1024)
        except BaseException:
            self._listener.close()
            raise
        self._listener.setblocking(False)
        self.server_address: tuple[Any, ...] = self._listener.getsockname()
        self._handle = handle
        self._admit = admit
        self._limits = limits
        self._pool = ThreadPoolExecutor(limits.workers, thread_name_prefix="kubecore-http")
        self._selector = selectors.DefaultSelector()
        self._returned: queue.SimpleQueue[_Waiting] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._open = 0
        self._per_client: dict[str, int] = {}
        self._open_lock = threading.Lock()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._paused_until: float | None = None
        """While accepting is paused (out of descriptors): when the listener is watched again."""
        self._pause = _FIRST_PAUSE
        self._starved = 0
        """Accepts that failed for want of descriptors since the last warning."""
        self._next_report = 0.0

    def serve_forever(self) -> None:
        sel = self._selector
        sel.register(self._listener, selectors.EVENT_READ, None)
        sel.register(self._wake_r, selectors.EVENT_READ, None)
        try:
            while not self._stopping.is_set():
                for key, _ in sel.select(timeout=self._select_timeout()):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        self._drain_wake()
                    elif not key.data.closed:  # closed to make room since select returned
                        self._read(key.data)
                now = time.monotonic()
                self._expire(now)
                if self._paused_until is not None and now >= self._paused_until:
                    self._paused_until = None
                    sel.register(self._listener, selectors.EVENT_READ, None)
        finally:
            for key in list(sel.get_map().values()):
                if isinstance(key.data, _Waiting):
                    self._close(key.data)
            sel.close()
            self._stopped.set()

    def shutdown(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        self._wake()
        self._stopped.wait(timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def server_close(self) -> None:
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    def open_connections(self, client: str | None = None) -> int:
        """The connections open now: in all, or of one client (``client_of``)."""
        with self._open_lock:
            return self._open if client is None else self._per_client.get(client, 0)

    # --- the selector thread

    def _select_timeout(self) -> float:
        if self._paused_until is None:
            return 0.5
        return max(0.0, min(0.5, self._paused_until - time.monotonic()))

    def _accept(self) -> None:
        for _ in range(64):
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                if error.errno not in _OUT_OF_DESCRIPTORS:
                    logger.debug("accepting a connection failed: %s", error)
                    return
                self._out_of_descriptors(error)
                if self._paused_until is not None:
                    return
                continue  # an idle connection was closed: its descriptor is free again
            self._pause = _FIRST_PAUSE
            self._take(sock, address)

    def _take(self, sock: socket.socket, address: Any) -> None:
        client = client_of(address)
        seat = self._seat(client)
        if seat == "none":
            try:
                sock.setblocking(False)
                if self.refusal:
                    sock.send(self.refusal)
            except OSError:
                pass
            sock.close()
            return
        with self._open_lock:
            self._open += 1
            self._per_client[client] = self._per_client.get(client, 0) + 1
        sock.setblocking(False)
        now = time.monotonic()
        deadline = now + self._limits.head_timeout
        waiting = _Waiting(sock, address, bytearray(), deadline, client, now, seat == "health")
        self._wait(waiting)

    def _seat(self, client: str) -> Seat:
        """The seat a new connection from ``client`` gets, once idle connections are closed to
        make room: the client's own oldest when it is at its share, else anyone's oldest."""
        limits = self._limits
        if self.open_connections(client) >= limits.max_connections_per_client:
            self._close_oldest_idle(client)
        if self.open_connections() >= limits.max_connections - limits.health_reserve:
            self._close_oldest_idle(None)
        return seat_for(
            self.open_connections(client),
            self.open_connections(),
            per_client=limits.max_connections_per_client,
            most=limits.max_connections,
            reserve=limits.health_reserve,
        )

    def _close_oldest_idle(self, client: str | None) -> bool:
        """Close the oldest idle connection (of ``client``, or of anyone); False when there is
        none. Idle: in the selector and not collecting a body (a connection being answered is
        with a worker, not in the selector)."""
        oldest: _Waiting | None = None
        for key in self._selector.get_map().values():
            waiting = key.data
            if not isinstance(waiting, _Waiting) or not waiting.idle:
                continue
            if client is not None and waiting.client != client:
                continue
            if oldest is None or waiting.since < oldest.since:
                oldest = waiting
        if oldest is None:
            return False
        logger.debug("closing the idle connection of %s to make room", oldest.address)
        self._selector.unregister(oldest.sock)
        self._close(oldest)
        return True

    def _out_of_descriptors(self, error: OSError) -> None:
        """``accept`` failed for want of descriptors: free one by closing the oldest idle
        connection, or stop watching the listener for a while (the selector would see it ready
        again at once, and spin)."""
        now = time.monotonic()
        self._starved += 1
        if now >= self._next_report:
            logger.warning(
                "cannot accept connections: %s (%d time(s) since the last warning); closing idle"
                " connections and pausing accepts (the limit on open files is too low for"
                " max_connections, or something else holds the descriptors)",
                error.strerror or error,
                self._starved,
            )
            self._starved = 0
            self._next_report = now + _REPORT_EVERY
        if self._close_oldest_idle(None):
            return
        self._selector.unregister(self._listener)
        self._paused_until = now + self._pause
        self._pause = min(self._pause * 2, _LONGEST_PAUSE)

    def _wait(self, waiting: _Waiting) -> None:
        """Move the request on, or (back) into the selector (it is not in it now)."""
        if not waiting.draining:
            try:
                if self._progress(waiting):
                    return
            except Exception:  # never let one client end the selector thread
                logger.exception("reading a request from %s failed", waiting.address)
                self._close(waiting)
                return
        self._selector.register(waiting.sock, selectors.EVENT_READ, waiting)

    def _read(self, waiting: _Waiting) -> None:
        data = self._receive(waiting.sock)
        if data is None:
            return
        if not data:
            self._selector.unregister(waiting.sock)
            self._close(waiting)
            return
        if waiting.draining:
            return
        waiting.buffer += data
        self._selector.unregister(waiting.sock)
        self._wait(waiting)

    @staticmethod
    def _receive(sock: socket.socket) -> bytes | None:
        """What has arrived (b"" at the end of input), or None when nothing has yet."""
        try:
            data = sock.recv(65536)
            # A TLS socket may hold decrypted bytes the selector cannot see: take them too.
            pending = getattr(sock, "pending", None)
            while pending is not None and data and pending():
                data += sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return b""
        return data

    def _progress(self, waiting: _Waiting) -> bool:
        """Move a request on with what has arrived; True once it has left the selector (handed
        to a worker, or answered and closed)."""
        if waiting.head is None:
            blank = len(waiting.buffer) - len(waiting.buffer.lstrip(b"\r\n"))
            del waiting.buffer[:blank]  # blank lines before a request are ignored
            end = head_end(waiting.buffer)
            if end is None:
                if len(waiting.buffer) <= MAX_HEAD_BYTES:
                    return False
                self._refuse(waiting, _TOO_LARGE)
                return True
            try:
                head = read_head(bytes(waiting.buffer[:end]))
                self._check_length(head)
            except Refused as refused:
                self._refuse(waiting, status_response(refused.code, refused.message))
                return True
            if waiting.health_only and not is_health_check(head.target):
                self._refuse(waiting, _HEALTH_ONLY)
                return True
            waiting.head = head
            waiting.end = end + head.length
            if head.length and head.method in BODY_METHODS and not self._admit(head, waiting.sock):
                # Answered without its body (which is never read); the connection then closes.
                waiting.end, waiting.whole = end, False
            elif len(waiting.buffer) < waiting.end:
                waiting.deadline = time.monotonic() + self._limits.body_timeout
                if head.header("expect").lower() == "100-continue":
                    with contextlib.suppress(OSError):
                        waiting.sock.send(_CONTINUE)
        if len(waiting.buffer) < waiting.end:
            return False
        self._dispatch(waiting)
        return True

    def _check_length(self, head: RequestHead) -> None:
        if head.method in BODY_METHODS:
            limit = self._limits.max_body_bytes
            if head.length > limit:
                raise Refused(
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                    f"body is {head.length} bytes; limit {limit}",
                )
        elif head.length > MAX_DROPPED_BODY:
            raise Refused(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"a {head.method} request takes no body; this one is {head.length} bytes",
            )

    def _refuse(self, waiting: _Waiting, answer: bytes) -> None:
        """Answer from the selector, then drain what the client still sends and close."""
        try:
            waiting.sock.send(answer)
            waiting.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(waiting)
            return
        waiting.draining = True
        waiting.deadline = time.monotonic() + _LINGER
        self._selector.register(waiting.sock, selectors.EVENT_READ, waiting)

    def _expire(self, now: float) -> None:
        for key in list(self._selector.get_map().values()):
            waiting = key.data
            if isinstance(waiting, _Waiting) and now >= waiting.deadline:
                self._selector.unregister(waiting.sock)
                if waiting.head is not None and not waiting.draining:
                    message = f"the body did not arrive within {self._limits.body_timeout:g} s"
                    self._refuse(waiting, status_response(HTTPStatus.REQUEST_TIMEOUT, message))
                else:
                    self._close(waiting)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        while True:
            try:
                waiting = self._returned.get_nowait()
            except queue.Empty:
                return
            if self._stopping.is_set():
                self._close(waiting)
            else:
                self._wait(waiting)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _dispatch(self, waiting: _Waiting) -> None:
        try:
            self._pool.submit(self._serve, waiting)
        except RuntimeError:  # the pool is shut down
            self._close(waiting)

    def _close(self, waiting: _Waiting) -> None:
        waiting.closed = True
        try:
            waiting.sock.close()
        finally:
            with self._open_lock:
                self._open -= 1
                left = self._per_client[waiting.client] - 1
                if left:
                    self._per_client[waiting.client] = left
                else:
                    del self._per_client[waiting.client]

    # --- a worker

    def _serve(self, waiting: _Waiting) -> None:
        sock = waiting.sock
        keep = False
        reader = RequestReader(bytes(waiting.buffer[: waiting.end]))
        try:
            sock.setblocking(True)
            keep = self._handle(sock, waiting.address, reader) and waiting.whole
        except Exception:
            logger.debug("connection from %s ended with an error", waiting.address, exc_info=True)
        if self._stopping.is_set():
            self._close(waiting)
            return
        try:
            if not keep or waiting.health_only:
                sock.shutdown(socket.SHUT_WR)
            sock.setblocking(False)
        except OSError:
            self._close(waiting)
            return
        now = time.monotonic()
        if keep and not waiting.health_only:
            deadline = now + self._limits.head_timeout
            rest = waiting.buffer[waiting.end :]
            self._returned.put(_Waiting(sock, waiting.address, rest, deadline, waiting.client, now))
        else:
            self._returned.put(
                _Waiting(
                    sock,
                    waiting.address,
                    bytearray(),
                    now + _LINGER,
                    waiting.client,
                    now,
                    draining=True,
                )
            )
        self._wake()
