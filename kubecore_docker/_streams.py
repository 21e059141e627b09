"""Streaming exec and attach on the engine (``StreamingRuntime``): each session is one hijacked
engine connection (``exec_start`` or ``attach`` with ``Upgrade: tcp``) carrying the process's
stdin one way and its output the other, multiplexed in Docker's frames unless it has a terminal.

stdin ends with a half-close of the connection (the engine then closes the process's stdin);
the exit code is the engine's (``exec_inspect``, or the container's state for an attach)."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from kubecore import ContainerRuntimeError
from kubecore.runtime import Clock, NotFound, OutputStream, TerminalSize
from kubecore_docker._errors import Subject, engine_errors
from kubecore_docker._frames import FrameReader

log = logging.getLogger(__name__)

_READ_SIZE = 64 * 1024
_POLL_FIRST, _POLL_MAX = 0.005, 0.1
_INITIAL_RESIZE_FOR = 2.0
"""Seconds a session's first resize may be retried while the engine starts the process (API
1.41 has no console size at start: until the process runs, a resize is refused)."""

NO_DETACH_KEYS = "ctrl-^,ctrl-@,ctrl-_,ctrl-],ctrl-^,ctrl-@,ctrl-_,ctrl-]"
"""The engine's detach sequence for a session with a terminal: the engine cannot switch it off,
and its default (ctrl-p ctrl-q: readline's previous-history, then a character) would end the
session; a sequence nobody types instead (the engine holds a key back only while the keys typed
match its start)."""

_START_FAILURE = b"OCI runtime exec failed"
_HEAD_SIZE = 512
_NOT_FOUND_SIGNS = (b"executable file not found", b"no such file or directory")
_NOT_EXECUTABLE, _NOT_FOUND = 126, 127


class _Process(Protocol):
    """What a session asks of the engine about its process."""

    unknown_once_left: bool
    """True if the process's end is not the session's to report once the session is closed
    (an attached container's main process)."""

    def resize(self, size: TerminalSize) -> None: ...

    def exit_code(self) -> int | None:
        """The exit code once the process has exited, else None."""
        ...


class HijackedConnection:
    """The engine connection of one session, safe to use from several threads: reads go through
    the HTTP response's buffer (bytes the engine sent right behind its ``101`` answer may be
    there already), writes and half-closes to the socket; ``close`` wakes a blocked reader, and
    the socket is released only once no call is using it (so a file descriptor is never used
    after it was closed and reused)."""

    def __init__(self, raw: Any) -> None:
        self._socket: socket.socket = getattr(raw, "_sock", raw)
        self._socket.settimeout(None)  # the client's timeout is for requests, not for sessions
        response = getattr(raw, "_response", None)
        buffered = getattr(getattr(getattr(response, "raw", None), "_fp", None), "fp", None)
        read1 = getattr(buffered, "read1", None)
        self._read: Callable[[int], bytes] = read1 if read1 is not None else raw.read
        self._response = response
        self._raw = raw
        self._lock = threading.Lock()
        self._users = 0
        self._closing = False
        self._released = False

    def _enter(self) -> bool:
        with self._lock:
            if self._closing:
                return False
            self._users += 1
            return True

    def _leave(self) -> None:
        with self._lock:
            self._users -= 1
            release = self._closing and self._users == 0
        if release:
            self._release()

    def read(self) -> bytes:
        """The next bytes from the engine; empty at the end of the stream or once closed."""
        if not self._enter():
            return b""
        try:
            return bytes(self._read(_READ_SIZE) or b"")
        except (OSError, ValueError) as error:
            if not self._closing:
                log.info("the engine's stream ended with an error: %s", error)
            return b""
        finally:
            self._leave()

    def write(self, data: bytes) -> None:
        """Send ``data``; dropped once closed, or when the engine no longer reads (the process
        has ended: its output ends too)."""
        if not self._enter():
            return
        try:
            self._socket.sendall(data)
        except OSError as error:
            log.debug("stdin dropped: %s", error)
        finally:
            self._leave()

    def close_write(self) -> None:
        if not self._enter():
            return
        try:
            self._socket.shutdown(socket.SHUT_WR)
        except OSError as error:
            log.debug("half-close failed: %s", error)
        finally:
            self._leave()

    def close(self) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
            release = self._users == 0
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked in recv
        if release:
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        for closer in (self._raw, self._socket, self._response):
            with contextlib.suppress(Exception):
                if closer is not None:
                    closer.close()


class DockerStreamSession:
    """A ``StreamSession`` over a hijacked engine connection."""

    def __init__(
        self,
        connection: HijackedConnection,
        process: _Process,
        clock: Clock,
        *,
        tty: bool,
        stdin: bool,
    ) -> None:
        self.tty = tty
        self._connection = connection
        self._process = process
        self._clock = clock
        self._stdin = stdin
        self._stdin_closed = False
        self._closed = threading.Event()
        self._head = b""
        """The first bytes of output: where the engine says that the command did not start."""

    def write_stdin(self, data: bytes) -> None:
        if self._stdin and not self._stdin_closed and data:
            self._connection.write(data)

    def close_stdin(self) -> None:
        if self._stdin and not self._stdin_closed:
            self._stdin_closed = True
            self._connection.close_write()

    def output(self) -> Iterator[tuple[OutputStream, bytes]]:
        frames = None if self.tty else FrameReader()
        while data := self._connection.read():
            chunks = [(OutputStream.STDOUT, data)] if frames is None else frames.feed(data)
            for stream, payload in chunks:
                if len(self._head) < _HEAD_SIZE:
                    self._head += payload[: _HEAD_SIZE - len(self._head)]
                yield stream, payload
        if frames is not None and frames.mid_frame and not self._closed.is_set():
            log.info("the engine's stream ended inside a frame: the rest of its output is lost")

    def resize(self, size: TerminalSize) -> None:
        if self.tty and not self._closed.is_set():
            self._process.resize(size)

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else self._clock.monotonic() + timeout
        interval = _POLL_FIRST
        while True:
            try:
                code = self._process.exit_code()
            except NotFound:
                return None  # removed (with its container): its end cannot be told any more
            if code is not None:
                return self._as_shell_reports(code)
            if self._closed.is_set() and self._process.unknown_once_left:
                return None
            if deadline is not None and self._clock.monotonic() >= deadline:
                return None
            if deadline is not None:
                interval = min(interval, max(0.0, deadline - self._clock.monotonic()))
            self._clock.sleep(interval)
            interval = min(interval * 2, _POLL_MAX)

    def _as_shell_reports(self, code: int) -> int:
        """The engine answers 126 for a command that could not be started, found or not; a shell
        (and the contract) says 127 for one that is not there."""
        head = self._head.lstrip()
        if code == _NOT_EXECUTABLE and head.startswith(_START_FAILURE):
            return _NOT_FOUND if any(sign in head.lower() for sign in _NOT_FOUND_SIGNS) else code
        return code

    def close(self) -> None:
        self._closed.set()
        self._connection.close()


class ExecProcess:
    """An exec instance: resized and inspected by its id."""

    unknown_once_left = False

    def __init__(self, api: Any, exec_id: str) -> None:
        self._api = api
        self._exec_id = exec_id

    def resize(self, size: TerminalSize) -> None:
        if not self.try_resize(size):
            log.debug("resize of exec %s skipped: it is not running", self._exec_id[:12])

    def try_resize(self, size: TerminalSize) -> bool:
        """Resize; False if the engine refused because the process is not running (not yet
        started, or ended)."""
        try:
            with engine_errors(Subject.CONTAINER):
                self._api.exec_resize(self._exec_id, height=size.height, width=size.width)
        except ContainerRuntimeError as error:
            if not _gone(error):
                raise
            return False
        return True

    def first_resize(self, size: TerminalSize, clock: Clock) -> None:
        """Resize as soon as the engine has started the process (bounded): until then it
        refuses, and after the process has ended there is nothing to resize."""
        deadline = clock.monotonic() + _INITIAL_RESIZE_FOR
        interval = _POLL_FIRST
        while not self.try_resize(size):
            if self.exit_code() is not None or clock.monotonic() >= deadline:
                return
            clock.sleep(interval)
            interval = min(interval * 2, _POLL_MAX)

    def exit_code(self) -> int | None:
        with engine_errors(Subject.CONTAINER):
            info = self._api.exec_inspect(self._exec_id)
        if info.get("Running") or info.get("ExitCode") is None:
            return None
        return int(info["ExitCode"])


class AttachedProcess:
    """A container's main process: resized and inspected as the container."""

    unknown_once_left = True

    def __init__(self, api: Any, container_id: str) -> None:
        self._api = api
        self._container_id = container_id

    def resize(self, size: TerminalSize) -> None:
        try:
            with engine_errors(Subject.CONTAINER):
                self._api.resize(self._container_id, height=size.height, width=size.width)
        except ContainerRuntimeError as error:
            if not _gone(error):
                raise
            log.debug("resize of %s skipped: %s", self._container_id[:12], error)

    def exit_code(self) -> int | None:
        with engine_errors(Subject.CONTAINER):
            state = self._api.inspect_container(self._container_id).get("State") or {}
        if state.get("Running") or state.get("Restarting"):
            return None
        return int(state.get("ExitCode") or 0)


def _gone(error: ContainerRuntimeError) -> bool:
    """A resize refused because the process is not running (yet, or any more)."""
    text = str(error).lower()
    return isinstance(error, NotFound) or "not running" in text or "stopped container" in text


def exec_stream(
    api: Any,
    clock: Clock,
    container_id: str,
    command: list[str],
    *,
    stdin: bool,
    tty: bool,
    size: TerminalSize | None,
) -> DockerStreamSession:
    """Start ``command`` in the container, attached (``StreamingRuntime.exec_stream``)."""
    if not command:
        raise ContainerRuntimeError(f"exec in {container_id}: no command given")
    with engine_errors(Subject.CONTAINER):
        exec_id = api.exec_create(
            container_id,
            command,
            stdout=True,
            stderr=True,
            stdin=stdin,
            tty=tty,
            detach_keys=NO_DETACH_KEYS if tty else None,
        )["Id"]
        raw = api.exec_start(exec_id, tty=tty, socket=True)
    process = ExecProcess(api, exec_id)
    session = DockerStreamSession(HijackedConnection(raw), process, clock, tty=tty, stdin=stdin)
    if tty and size is not None:
        try:
            process.first_resize(size, clock)
        except BaseException:
            session.close()
            raise
    return session


def attach(
    api: Any, clock: Clock, container_id: str, *, stdin: bool, tty: bool
) -> DockerStreamSession:
    """Attach to the container's main process (``StreamingRuntime.attach``). Whether its output
    is framed is the container's own setting (``Tty``), whatever ``tty`` asks; stdin is attached
    only when the container keeps one open."""
    with engine_errors(Subject.CONTAINER):
        data = api.inspect_container(container_id)
    state = data.get("State") or {}
    config = data.get("Config") or {}
    if not state.get("Running"):
        raise ContainerRuntimeError(
            f"cannot attach to container {container_id}: it is not running "
            f"(state {state.get('Status', 'unknown')})"
        )
    has_tty = bool(config.get("Tty"))
    with_stdin = stdin and bool(config.get("OpenStdin"))
    params: dict[str, Any] = {"stdout": 1, "stderr": 1, "stream": 1, "logs": 0}
    if with_stdin:
        params["stdin"] = 1
    if has_tty:
        params["detachKeys"] = NO_DETACH_KEYS
    with engine_errors(Subject.CONTAINER):
        raw = api.attach_socket(container_id, params=params)
    process = AttachedProcess(api, container_id)
    return DockerStreamSession(
        HijackedConnection(raw), process, clock, tty=has_tty, stdin=with_stdin
    )
