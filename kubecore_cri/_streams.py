"""Streaming exec and attach on a CRI runtime (``StreamingRuntime``): the client of the runtime's
streaming server (the URL ``Exec`` and ``Attach`` answer), speaking what the kubelet's
``pkg/cri/streaming/remotecommand`` serves.

That server speaks WebSocket (``channel.k8s.io`` up to ``v4``) and SPDY/3.1 (``v4.channel.k8s.io``
and older). SPDY it is: it is the only one of the two in which a client can end the process's
stdin (a FIN on the stdin stream; a WebSocket channel cannot be closed before ``v5``, which
containerd 1.6 does not serve), and each stream is its own, so nothing is framed in the payload.

One connection per session. The client opens a stream per part, each naming it in a
``streamtype`` header: ``error`` (where the server writes the end's ``Status`` as JSON),
``stdin`` when asked, ``stdout``, ``stderr`` without a terminal and ``resize`` with one (JSON
``{"Width": .., "Height": ..}`` messages); the session starts once the server has accepted each
(SYN_REPLY). One thread reads the connection, so the output comes in the order the server sent
it, and holds back while the reader of ``output`` is behind (``MAX_BUFFERED``: TCP then pushes
back on the server). The server ends the session by closing the connection, right after the
``Status``: success, ``NonZeroExitCode`` with the code, or an internal error (a command that
could not start: reported as the exit code a shell gives, with the runtime's message as output).
The server (moby's ``spdystream``) does no SPDY flow control, so neither does this client.

containerd 1.6 may end an attach's output when the container exits before the container's last
words have been copied to it (its log file has them): a race of its own, seen on the wire.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from kubecore import ContainerRuntimeError
from kubecore.runtime import NotFound, OutputStream, TerminalSize
from kubecore.streaming import (
    DataFrame,
    Frame,
    FrameReader,
    FrameWriter,
    Ping,
    RstStatus,
    RstStream,
    SpdyProtocolError,
    SynReply,
    SynStream,
)
from kubecore_cri._client import CriConnection
from kubecore_cri._errors import Subject
from kubecore_cri._pb import api_pb2 as pb
from kubecore_cri._upgrade import open_spdy

log = logging.getLogger(__name__)

PROTOCOL = "v4.channel.k8s.io"
MAX_BUFFERED = 256 * 1024
"""Bytes of output held for a slow reader before the connection is no longer read."""
MAX_STATUS = 64 * 1024
_READ_SIZE = 64 * 1024
_CHUNK = 32 * 1024
_POLL_FIRST, _POLL_MAX = 0.01, 0.2
_NOT_EXECUTABLE, _NOT_FOUND = 126, 127
_START_FAILURE_SIGNS = ("failed to start exec", "oci runtime exec failed", "exec failed")
_NOT_FOUND_SIGNS = ("executable file not found", "no such file or directory")


# --- the end of a session (pure) ----------------------------------------------------------------


@attrs.frozen
class Outcome:
    """How the server said the process ended: its exit code (None: not known), and the words
    of a failure that is not the process's own (put on its output)."""

    code: int | None
    message: str = ""


def exec_outcome(status: bytes) -> Outcome:
    """The outcome of an exec from the ``Status`` on its error stream (b"": none came)."""
    if not status.strip():
        return Outcome(None)
    try:
        value: Any = json.loads(status.decode("utf-8", "replace"))
    except ValueError:
        return Outcome(None, status.decode("utf-8", "replace"))
    if not isinstance(value, dict):
        return Outcome(None, str(value))
    if value.get("status") == "Success":
        return Outcome(0)
    message = str(value.get("message") or "")
    if value.get("reason") == "NonZeroExitCode":
        details = value.get("details")
        causes = details.get("causes") if isinstance(details, dict) else None
        for cause in causes if isinstance(causes, list) else ():
            if isinstance(cause, dict) and cause.get("reason") == "ExitCode":
                with contextlib.suppress(ValueError):
                    return Outcome(int(str(cause.get("message"))))
        return Outcome(None, message)
    lowered = message.lower()
    if any(sign in lowered for sign in _START_FAILURE_SIGNS):
        missing = any(sign in lowered for sign in _NOT_FOUND_SIGNS)
        return Outcome(_NOT_FOUND if missing else _NOT_EXECUTABLE, message)
    return Outcome(None, message)


def resize_message(size: TerminalSize) -> bytes:
    return json.dumps({"Width": size.width, "Height": size.height}).encode()


# --- the session --------------------------------------------------------------------------------


class _Chunks:
    """The output between the connection's reader and ``output``: bounded in bytes (the reader
    waits), ended by the reader or by ``close`` (then nothing more is handed out)."""

    def __init__(self) -> None:
        self._items: collections.deque[tuple[OutputStream, bytes]] = collections.deque()
        self._size = 0
        self._ended = False
        self._closed = False
        self._cond = threading.Condition()

    def put(self, stream: OutputStream, data: bytes) -> None:
        with self._cond:
            while self._size >= MAX_BUFFERED and not self._closed:
                self._cond.wait()
            if not self._closed:
                self._items.append((stream, data))
                self._size += len(data)
                self._cond.notify_all()

    def end(self) -> None:
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._items.clear()
            self._cond.notify_all()

    def get(self) -> tuple[OutputStream, bytes] | None:
        with self._cond:
            while not self._items and not self._ended and not self._closed:
                self._cond.wait()
            if self._closed or not self._items:
                return None
            stream, data = self._items.popleft()
            self._size -= len(data)
            self._cond.notify_all()
            return stream, data


@attrs.frozen
class Parts:
    """Which streams a session has."""

    stdin: bool
    tty: bool

    def stream_types(self) -> list[str]:
        types = ["error"]
        if self.stdin:
            types.append("stdin")
        types.append("stdout")
        types.append("resize" if self.tty else "stderr")
        return types


class CriStreamSession:
    """A ``StreamSession`` over one SPDY connection to the runtime's streaming server.
    ``after_end(timeout)`` answers the exit code once the server has ended the session, waiting
    up to ``timeout`` seconds for it (an attach asks the container's status, which may still say
    running for a moment after its output ended; None: the exec's own ``Status`` says)."""

    def __init__(
        self,
        sock: socket.socket,
        parts: Parts,
        *,
        after_end: Callable[[float | None], int | None] | None = None,
        on_close: Callable[[CriStreamSession], None] | None = None,
    ) -> None:
        self.tty = parts.tty
        self._sock = sock
        self._after_end = after_end
        self._on_close = on_close
        self._ids = {kind: 1 + 2 * n for n, kind in enumerate(parts.stream_types())}
        self._kinds = {stream_id: kind for kind, stream_id in self._ids.items()}
        self._writer = FrameWriter()
        self._send_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._chunks = _Chunks()
        self._replied: set[int] = set()
        self._ready = threading.Event()
        self._ended = threading.Event()
        self._closed = threading.Event()
        self._stdin_closed = not parts.stdin
        self._status = b""
        self._outcome = Outcome(None)
        self._pending = b""
        self._reader = threading.Thread(
            target=self._read_all, name="kubecore-cri-stream", daemon=True
        )

    # --- start

    def start(self, rest: bytes, timeout: float) -> None:
        """Open the streams and wait (``timeout``) until the server has accepted every one."""
        self._pending = rest
        for kind, stream_id in self._ids.items():
            if not self._send(SynStream(stream_id, (("streamtype", kind),))):
                break
        self._reader.start()
        if not self._ready.wait(timeout) or not self._all_accepted():
            self.close()
            why = self._outcome.message or "it did not accept the session's streams in time"
            raise ContainerRuntimeError(f"the CRI streaming server: {why}")

    def _all_accepted(self) -> bool:
        return len(self._replied) == len(self._ids)

    # --- the reader

    def _read_all(self) -> None:
        reader = FrameReader()
        try:
            data, self._pending = self._pending, b""
            while True:
                for frame in reader.feed(data) if data else ():
                    self._handle(frame)
                try:
                    data = self._sock.recv(_READ_SIZE)
                except OSError:
                    break
                if not data:
                    break
        except SpdyProtocolError as error:
            log.info("the CRI streaming connection ended: %s", error)
        finally:
            self._finish()

    def _handle(self, frame: Frame) -> None:
        if isinstance(frame, DataFrame):
            kind = self._kinds.get(frame.stream_id)
            if kind == "stdout" and frame.data:
                self._chunks.put(OutputStream.STDOUT, frame.data)
            elif kind == "stderr" and frame.data:
                self._chunks.put(OutputStream.STDERR, frame.data)
            elif kind == "error" and len(self._status) < MAX_STATUS:
                self._status += frame.data[: MAX_STATUS - len(self._status)]
        elif isinstance(frame, SynReply):
            self._replied.add(frame.stream_id)
            if self._all_accepted():
                self._ready.set()
        elif isinstance(frame, RstStream):
            if self._kinds.get(frame.stream_id) == "stdin":
                self._stdin_closed = True
        elif isinstance(frame, Ping):
            if frame.ping_id % 2 == 0:  # the server's: echoed
                self._send(frame)
        elif isinstance(frame, SynStream):
            self._send(RstStream(frame.stream_id, RstStatus.REFUSED_STREAM))

    def _finish(self) -> None:
        self._outcome = exec_outcome(self._status)
        if self._outcome.message and not self._closed.is_set():
            where = OutputStream.STDOUT if self.tty else OutputStream.STDERR
            self._chunks.put(where, self._outcome.message.encode() + b"\n")
        self._ended.set()
        self._ready.set()  # a start still waiting learns it is over
        self._chunks.end()
        with self._send_lock, contextlib.suppress(OSError):
            self._sock.close()
        if self._on_close is not None:
            self._on_close(self)

    # --- writing

    def _send(self, frame: Frame) -> bool:
        with self._send_lock:
            if self._closed.is_set() or self._ended.is_set():
                return False
            try:
                self._sock.sendall(self._writer.encode(frame))
            except OSError as error:
                log.debug("a frame to the CRI streaming server was dropped: %s", error)
                return False
            return True

    def write_stdin(self, data: bytes) -> None:
        if self._stdin_closed or not data:
            return
        stream_id = self._ids["stdin"]
        for start in range(0, len(data), _CHUNK):
            if not self._send(DataFrame(stream_id, bytes(data[start : start + _CHUNK]))):
                return

    def close_stdin(self) -> None:
        if not self._stdin_closed:
            self._stdin_closed = True
            self._send(DataFrame(self._ids["stdin"], b"", fin=True))

    def resize(self, size: TerminalSize) -> None:
        if self.tty:
            self._send(DataFrame(self._ids["resize"], resize_message(size)))

    # --- the session's life

    def output(self) -> Iterator[tuple[OutputStream, bytes]]:
        while (chunk := self._chunks.get()) is not None:
            yield chunk

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._ended.wait(timeout):
            return None
        if self._after_end is None:
            return self._outcome.code
        if self._closed.is_set():
            return self._after_end(0.0)  # left by the client: asked once
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        return self._after_end(left)

    def close(self) -> None:
        with self._state_lock:
            if self._closed.is_set():
                return
            self._closed.set()
        # Not under the send lock: a writer blocked on a server that does not read is woken.
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the reader, which closes it
        self._chunks.close()
        if not self._reader.is_alive() and self._reader.ident is None:
            with contextlib.suppress(OSError):
                self._sock.close()
        if self._on_close is not None:
            self._on_close(self)


def open_session(
    url: str,
    parts: Parts,
    timeout: float,
    *,
    after_end: Callable[[float | None], int | None] | None = None,
    on_close: Callable[[CriStreamSession], None] | None = None,
) -> CriStreamSession:
    """Connect to the streaming ``url`` and start a session with ``parts``."""
    sock, rest = open_spdy(url, PROTOCOL, timeout)
    session = CriStreamSession(sock, parts, after_end=after_end, on_close=on_close)
    session.start(rest, timeout)
    return session


# --- the calls ----------------------------------------------------------------------------------


class LiveStreams:
    """The sessions and forwarded connections open on a runtime: all closed when it closes
    (the agent stopping ends them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: set[Any] = set()
        self._closed = False

    def add(self, live: Any) -> None:
        with self._lock:
            closed = self._closed
            if not closed:
                self._live.add(live)
        if closed:
            live.close()
            raise ContainerRuntimeError("the cri runtime is closed")

    def __len__(self) -> int:
        with self._lock:
            return len(self._live)

    def discard(self, live: Any) -> None:
        with self._lock:
            self._live.discard(live)

    def close_all(self) -> None:
        with self._lock:
            self._closed = True
            live, self._live = list(self._live), set()
        for item in live:
            with contextlib.suppress(Exception):
                item.close()


def container_info(connection: CriConnection, container_id: str) -> tuple[Any, dict[str, Any]]:
    """A container's status and its verbose ``info`` (containerd's: ``config``, ``pid``...)."""
    answer = connection.call(
        "ContainerStatus",
        pb.ContainerStatusRequest(container_id=container_id, verbose=True),
        Subject.CONTAINER,
    )
    try:
        info = json.loads(answer.info.get("info") or "{}")
    except ValueError:
        info = {}
    return answer.status, info if isinstance(info, dict) else {}


def exec_stream(
    connection: CriConnection,
    live: LiveStreams,
    container_id: str,
    command: list[str],
    *,
    stdin: bool,
    tty: bool,
    size: TerminalSize | None,
) -> CriStreamSession:
    """Start ``command`` in the container, attached (``StreamingRuntime.exec_stream``)."""
    if not command:
        raise ContainerRuntimeError(f"exec in {container_id}: no command given")
    request = pb.ExecRequest(
        container_id=container_id, cmd=command, tty=tty, stdin=stdin, stdout=True, stderr=not tty
    )
    url = connection.call("Exec", request, Subject.CONTAINER).url
    session = open_session(
        url, Parts(stdin=stdin, tty=tty), connection.options.timeout, on_close=live.discard
    )
    live.add(session)
    if tty and size is not None:
        session.resize(size)
    return session


def attach(
    connection: CriConnection, live: LiveStreams, container_id: str, *, stdin: bool, tty: bool
) -> CriStreamSession:
    """Attach to the container's main process (``StreamingRuntime.attach``): framed or not as
    the container was made (``tty``), with stdin only when it keeps one open."""
    status, info = container_info(connection, container_id)
    if status.state != pb.CONTAINER_RUNNING:
        raise ContainerRuntimeError(
            f"cannot attach to container {container_id}: it is not running "
            f"(state {pb.ContainerState.Name(status.state)})"
        )
    config = info.get("config") or {}
    has_tty = bool(config.get("tty"))
    with_stdin = stdin and bool(config.get("stdin"))
    request = pb.AttachRequest(
        container_id=container_id, stdin=with_stdin, tty=has_tty, stdout=True, stderr=not has_tty
    )
    url = connection.call("Attach", request, Subject.CONTAINER).url

    def exit_code(timeout: float | None) -> int | None:
        """The container's exit code once it has exited (None: still running after
        ``timeout`` seconds, or removed)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        interval = _POLL_FIRST
        while True:
            try:
                now = connection.call(
                    "ContainerStatus",
                    pb.ContainerStatusRequest(container_id=container_id),
                    Subject.CONTAINER,
                ).status
            except NotFound:
                return None
            if now.state == pb.CONTAINER_EXITED:
                return int(now.exit_code)
            if deadline is not None and time.monotonic() >= deadline:
                return None
            left = interval if deadline is None else min(interval, deadline - time.monotonic())
            time.sleep(max(0.0, left))
            interval = min(interval * 2, _POLL_MAX)

    session = open_session(
        url,
        Parts(stdin=with_stdin, tty=has_tty),
        connection.options.timeout,
        after_end=exit_code,
        on_close=live.discard,
    )
    live.add(session)
    return session
