"""A bounded HTTP server for ``http.server`` handlers.

The standard library's ``ThreadingHTTPServer`` starts a thread per connection and listens with a
backlog of 5: a burst of clients times out in the kernel's queue, and slow clients each hold a
thread for as long as they like. Here one selector thread accepts connections (backlog 1024) and
collects each request's head without blocking; only a request whose head has fully arrived is
handed to a fixed pool of workers. A client that sends nothing, or sends its head slowly, costs a
socket and a buffer, never a worker, and is dropped when ``head_timeout`` passes. Idle keep-alive
connections go back to the selector between requests. Past ``max_connections`` open
connections a new one is answered ``503`` at once and closed.
"""

from __future__ import annotations

import contextlib
import io
import logging
import queue
import selectors
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

logger = logging.getLogger(__name__)

DEFAULT_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 10250
"""Where the agent's HTTP API listens unless told otherwise (the kubelet's port)."""
MAX_HEAD_BYTES = 64 * 1024
_LINGER = 2.0
"""Seconds a closed connection's remaining input is drained."""


def _status_response(code: int, phrase: str, reason: str, message: str) -> bytes:
    body = (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        f'"message":"{message}","reason":"{reason}","code":{code}}}\n'
    ).encode()
    head = (
        f"HTTP/1.1 {code} {phrase}\r\nContent-Type: application/json\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body


_BUSY = _status_response(503, "Service Unavailable", "ServiceUnavailable", "too many connections")
_TOO_LARGE = _status_response(
    431, "Request Header Fields Too Large", "RequestHeaderFieldsTooLarge", "request head too large"
)


def _head_complete(buffer: bytes) -> bool:
    return b"\r\n\r\n" in buffer or b"\n\n" in buffer


@attrs.frozen
class Limits:
    workers: int = 16
    """Requests answered at once."""
    max_connections: int = 1024
    """Open connections (waiting, idle or being answered); past it a new one gets a 503."""
    head_timeout: float = 10.0
    """Seconds a client has to send a request's head (and an idle keep-alive connection to
    start its next request)."""


class PrefixedReader(io.RawIOBase):
    """A socket's input with the bytes already received in front (unbuffered, so that what a
    request did not read can be handed back: see ``leftover``)."""

    def __init__(self, prefix: bytes, sock: socket.socket) -> None:
        super().__init__()
        self._prefix = prefix
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._prefix:
            count = min(len(buffer), len(self._prefix))
            buffer[:count] = self._prefix[:count]
            self._prefix = self._prefix[count:]
            return count
        return self._sock.recv_into(buffer)

    def readline(self, size: int | None = -1) -> bytes:
        # Lines of the head are in the prefix: serve them without a byte-by-byte loop.
        end = self._prefix.find(b"\n")
        if end >= 0 and (size is None or size < 0 or end < size):
            line, self._prefix = self._prefix[: end + 1], self._prefix[end + 1 :]
            return line
        return super().readline(-1 if size is None else size)

    def leftover(self) -> bytes:
        return self._prefix


@attrs.define(eq=False)
class _Waiting:
    sock: socket.socket
    address: Any
    buffer: bytes
    deadline: float
    draining: bool = False
    """Answered and shut for writing: what the client still sends is read and dropped until it
    closes (closing with unread input would reset the connection and lose the answer)."""


Handle = Callable[[socket.socket, Any, PrefixedReader], bool]
"""Answer one request from the reader; True to keep the connection for another request."""


class BoundedServer:
    """Accepts on ``(address, port)`` and answers complete requests with ``handle`` on a pool."""

    def __init__(self, address: str, port: int, handle: Handle, limits: Limits) -> None:
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
        self._limits = limits
        self._pool = ThreadPoolExecutor(limits.workers, thread_name_prefix="kubecore-http")
        self._selector = selectors.DefaultSelector()
        self._returned: queue.SimpleQueue[_Waiting] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._open = 0
        self._open_lock = threading.Lock()
        self._stopping = threading.Event()
        self._stopped = threading.Event()

    def serve_forever(self) -> None:
        sel = self._selector
        sel.register(self._listener, selectors.EVENT_READ, None)
        sel.register(self._wake_r, selectors.EVENT_READ, None)
        try:
            while not self._stopping.is_set():
                for key, _ in sel.select(timeout=0.5):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        self._drain_wake()
                    else:
                        self._read(key.data)
                self._expire(time.monotonic())
        finally:
            for key in list(sel.get_map().values()):
                if isinstance(key.data, _Waiting):
                    self._close(key.data.sock)
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

    @property
    def open_connections(self) -> int:
        with self._open_lock:
            return self._open

    # --- the selector thread

    def _accept(self) -> None:
        for _ in range(64):
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                logger.warning("accepting a connection failed: %s", error)
                return
            with self._open_lock:
                full = self._open >= self._limits.max_connections
                if not full:
                    self._open += 1
            if full:
                try:
                    sock.setblocking(False)
                    sock.send(_BUSY)
                except OSError:
                    pass
                sock.close()
                continue
            sock.setblocking(False)
            self._wait(_Waiting(sock, address, b"", time.monotonic() + self._limits.head_timeout))

    def _wait(self, waiting: _Waiting) -> None:
        if not waiting.draining and _head_complete(waiting.buffer):
            self._dispatch(waiting)
            return
        self._selector.register(waiting.sock, selectors.EVENT_READ, waiting)

    def _read(self, waiting: _Waiting) -> None:
        try:
            data = waiting.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._selector.unregister(waiting.sock)
            self._close(waiting.sock)
            return
        if waiting.draining:
            return
        waiting.buffer += data
        if _head_complete(waiting.buffer):
            self._selector.unregister(waiting.sock)
            self._dispatch(waiting)
        elif len(waiting.buffer) > MAX_HEAD_BYTES:
            self._selector.unregister(waiting.sock)
            with contextlib.suppress(OSError):
                waiting.sock.send(_TOO_LARGE)
            self._close(waiting.sock)

    def _expire(self, now: float) -> None:
        for key in list(self._selector.get_map().values()):
            waiting = key.data
            if isinstance(waiting, _Waiting) and now >= waiting.deadline:
                self._selector.unregister(waiting.sock)
                self._close(waiting.sock)

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
                self._close(waiting.sock)
            else:
                self._wait(waiting)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _dispatch(self, waiting: _Waiting) -> None:
        try:
            self._pool.submit(self._serve, waiting)
        except RuntimeError:  # the pool is shut down
            self._close(waiting.sock)

    def _close(self, sock: socket.socket) -> None:
        try:
            sock.close()
        finally:
            with self._open_lock:
                self._open -= 1

    # --- a worker

    def _serve(self, waiting: _Waiting) -> None:
        sock = waiting.sock
        keep = False
        reader = PrefixedReader(waiting.buffer, sock)
        try:
            sock.setblocking(True)
            keep = self._handle(sock, waiting.address, reader)
        except Exception:
            logger.debug("connection from %s ended with an error", waiting.address, exc_info=True)
        if self._stopping.is_set():
            self._close(sock)
            return
        try:
            if not keep:
                sock.shutdown(socket.SHUT_WR)
            sock.setblocking(False)
        except OSError:
            self._close(sock)
            return
        if keep:
            deadline = time.monotonic() + self._limits.head_timeout
            self._returned.put(_Waiting(sock, waiting.address, reader.leftover(), deadline))
        else:
            deadline = time.monotonic() + _LINGER
            self._returned.put(_Waiting(sock, waiting.address, b"", deadline, draining=True))
        self._wake()
