"""Interactive exec and attach for the process runtime (``StreamingRuntime``).

An exec'd command is a host process in the container's working dir with its env, in a session of
its own: without a tty its stdin, stdout and stderr are pipes; with one they are a new
pseudo-terminal, which becomes its controlling terminal (a resize sets its window size, and the
kernel tells the process). A command that cannot be started is a process that exits 127 (not
found) or 126 (not executable) with the error as its output. Closing the session closes the
process's stdin and the session's ends of its output (a tty: the terminal, which hangs it up); it
does not wait for the process.

An attach follows the container's log file from its end: the supervisor copies the main
process's output there, line by line, stdout and stderr marked. The main process has no stdin.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import selectors
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from kubecore.runtime import OutputStream, TerminalSize

_POLL = 0.1
"""Seconds between two looks at whether the process ended or the session was closed."""
_READ = 65536


def _set_size(fd: int, size: TerminalSize) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size.height, size.width, 0, 0))


def _take_terminal() -> None:
    """In the child, after ``setsid``: its stdin (the terminal) becomes its controlling one."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class ProcessSession:
    """An exec'd host process's streams (``StreamSession``)."""

    def __init__(
        self,
        command: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        stdin: bool,
        tty: bool,
        size: TerminalSize | None,
    ) -> None:
        self.tty = tty
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._failure: tuple[int, bytes] | None = None
        self._terminal: int | None = None
        self._stdin: IO[bytes] | None = None
        self._readers: dict[int, OutputStream] = {}
        self._reading = False
        self.process: subprocess.Popen[bytes] | None = None
        try:
            if tty:
                self._start_tty(command, cwd, env, size)
            else:
                self._start_pipes(command, cwd, env, stdin)
        except OSError as error:
            code = 127 if isinstance(error, FileNotFoundError) else 126
            self._failure = (code, f"exec: {command[0]!r}: {error.strerror or error}\n".encode())

    def _start_pipes(self, command: list[str], cwd: str, env: dict[str, str], stdin: bool) -> None:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        assert process.stdout is not None and process.stderr is not None
        self.process, self._stdin = process, process.stdin
        self._readers = {
            process.stdout.fileno(): OutputStream.STDOUT,
            process.stderr.fileno(): OutputStream.STDERR,
        }

    def _start_tty(
        self, command: list[str], cwd: str, env: dict[str, str], size: TerminalSize | None
    ) -> None:
        primary, secondary = pty.openpty()
        try:
            _set_size(secondary, size or TerminalSize(80, 24))
            self.process = subprocess.Popen(
                command, cwd=cwd, env={"TERM": "xterm", **env}, stdin=secondary,
                stdout=secondary, stderr=secondary, start_new_session=True,
                preexec_fn=_take_terminal,
            )  # fmt: skip
        except BaseException:
            os.close(primary)
            raise
        finally:
            os.close(secondary)
        self._terminal = primary
        self._readers = {primary: OutputStream.STDOUT}

    # --- StreamSession

    def write_stdin(self, data: bytes) -> None:
        with self._lock:
            if self._closed.is_set():
                return
            with contextlib.suppress(OSError, ValueError):
                if self._terminal is not None:
                    os.write(self._terminal, data)
                elif self._stdin is not None:
                    self._stdin.write(data)
                    self._stdin.flush()

    def close_stdin(self) -> None:
        with self._lock, contextlib.suppress(OSError, ValueError):
            if self._terminal is not None and not self._closed.is_set():
                os.write(self._terminal, b"\x04")  # a terminal's end of input
            elif self._stdin is not None:
                self._stdin.close()

    def output(self) -> Iterator[tuple[OutputStream, bytes]]:
        if self._failure is not None:
            yield OutputStream.STDERR if not self.tty else OutputStream.STDOUT, self._failure[1]
            return
        self._reading = True
        selector = selectors.DefaultSelector()
        for fd in self._readers:
            selector.register(fd, selectors.EVENT_READ)
        try:
            yield from self._pump(selector)
        finally:
            selector.close()
            self._release()

    def _pump(self, selector: selectors.BaseSelector) -> Iterator[tuple[OutputStream, bytes]]:
        process = self.process
        assert process is not None
        while selector.get_map() and not self._closed.is_set():
            events = selector.select(_POLL)
            if not events and process.poll() is not None:
                return  # it ended; what it left running may hold its output open
            for key, _ in events:
                try:
                    chunk = os.read(key.fd, _READ)
                except OSError:  # EIO: every end of the terminal is closed
                    chunk = b""
                if chunk:
                    yield self._readers[key.fd], chunk
                else:
                    selector.unregister(key.fd)

    def resize(self, size: TerminalSize) -> None:
        with self._lock:
            if self._terminal is not None and not self._closed.is_set():
                with contextlib.suppress(OSError):
                    _set_size(self._terminal, size)

    def wait(self, timeout: float | None = None) -> int | None:
        if self._failure is not None:
            return self._failure[0]
        assert self.process is not None
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return 128 - code if code < 0 else code

    def close(self) -> None:
        self._closed.set()
        self.close_stdin()
        if self.process is not None and self.process.poll() is None and self.tty:
            # The terminal goes away: its session is hung up, as a closed ssh session is.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGHUP)
        if not self._reading:
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._terminal is not None:
                with contextlib.suppress(OSError):
                    os.close(self._terminal)
                self._terminal = None
            process = self.process
            if process is not None:
                for stream in (process.stdout, process.stderr):
                    if stream is not None:
                        stream.close()


def parse_stream_line(raw: bytes) -> tuple[OutputStream, bytes]:
    """A log file line ``<rfc3339> <stream> <text>\\n`` as (stream, ``<text>\\n``)."""
    _, _, rest = raw.partition(b" ")
    stream, _, text = rest.partition(b" ")
    return (OutputStream.STDERR if stream == b"stderr" else OutputStream.STDOUT), text


class LogAttach:
    """An attach: the container's log lines from the end of the file on, until it ends."""

    tty = False

    def __init__(
        self,
        log: IO[bytes],
        directory: Path,
        ended: Callable[[Path], bool],
        exit_code: Callable[[Path], int | None],
    ) -> None:
        log.seek(0, os.SEEK_END)
        self._log = log
        self._directory = directory
        self._ended = ended
        self._exit_code = exit_code
        self._closed = threading.Event()

    def write_stdin(self, data: bytes) -> None:
        """The main process has no stdin: ignored."""

    def close_stdin(self) -> None:
        """The main process has no stdin: nothing to close."""

    def resize(self, size: TerminalSize) -> None:
        """The main process has no terminal: ignored."""

    def output(self) -> Iterator[tuple[OutputStream, bytes]]:
        partial = b""
        with self._log:
            while not self._closed.is_set():
                finished = self._ended(self._directory) or not self._directory.exists()
                partial += self._log.readline()
                if partial.endswith(b"\n"):
                    yield parse_stream_line(partial)
                    partial = b""
                elif finished or self._closed.wait(_POLL):
                    return

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._ended(self._directory):
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(_POLL)
        return self._exit_code(self._directory)

    def close(self) -> None:
        self._closed.set()
