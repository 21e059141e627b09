"""Shared by the tests of the ``cri`` runtime's streaming client: the transport of a fake
streaming server (its reading can be paused), and a bounded wait."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable


class SocketTransport:
    """A socket as a ``kubecore._streaming.spdy_connection.Transport``; ``pause`` stops its
    reading (the peer's writes then fill the socket's buffers and block)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._reading = threading.Event()
        self._reading.set()

    def pause(self) -> None:
        self._reading.clear()

    def recv(self) -> bytes:
        self._reading.wait()
        try:
            return self._sock.recv(65536)
        except OSError:
            return b""

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)


def wait_until(condition: Callable[[], object], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)
