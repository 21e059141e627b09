"""Shared by the Docker streaming tests: a session's output read on a thread of its own, and
plain HTTP over a socket the runtime handed back."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

from kubecore.runtime import OutputStream, StreamSession

HTTPD = "echo hello-from-pod > /www/index.html; exec httpd -f -p {address} -h /www"
"""A container command: busybox httpd serving ``hello-from-pod`` on ``{address}``."""


class Collected:
    """A session's output, read as it arrives by a daemon thread (so a test can write stdin
    and wait on what comes back, each wait bounded)."""

    def __init__(self, session: StreamSession) -> None:
        self.session = session
        self.chunks: list[tuple[OutputStream, bytes]] = []
        self.error: BaseException | None = None
        self._changed = threading.Condition()
        self.ended = False
        self._thread = threading.Thread(target=self._read, daemon=True, name="test-output")
        self._thread.start()

    def _read(self) -> None:
        try:
            for chunk in self.session.output():
                with self._changed:
                    self.chunks.append(chunk)
                    self._changed.notify_all()
        except BaseException as error:
            self.error = error
        finally:
            with self._changed:
                self.ended = True
                self._changed.notify_all()

    def stream(self, which: OutputStream) -> bytes:
        with self._changed:
            return b"".join(data for stream, data in self.chunks if stream is which)

    @property
    def stdout(self) -> bytes:
        return self.stream(OutputStream.STDOUT)

    @property
    def stderr(self) -> bytes:
        return self.stream(OutputStream.STDERR)

    def wait_until(self, done: Callable[[Collected], bool], timeout: float = 15.0) -> None:
        """Until ``done(self)`` holds; fails (AssertionError) after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not done(self):
                left = deadline - time.monotonic()
                if left <= 0 or (self.ended and not done(self)):
                    raise AssertionError(
                        f"output never matched (ended={self.ended}, error={self.error!r}): "
                        f"{self.chunks!r}"
                    )
                self._changed.wait(left)

    def wait_for(self, text: bytes, timeout: float = 15.0) -> None:
        self.wait_until(lambda c: text in c.stdout + c.stderr, timeout)

    def wait_ended(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not self.ended:
                left = deadline - time.monotonic()
                assert left > 0, f"output did not end within {timeout}s: {self.chunks!r}"
                self._changed.wait(left)
        assert self.error is None, self.error


def http_get(sock: socket.socket, path: str = "/", timeout: float = 10.0) -> bytes:
    """A whole HTTP/1.0 answer read from ``sock`` (which the call closes)."""
    with sock:
        sock.settimeout(timeout)
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: pod\r\n\r\n".encode())
        answer = b""
        while data := sock.recv(65536):
            answer += data
    return answer
