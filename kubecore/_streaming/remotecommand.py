"""``kubectl exec`` and ``attach`` served over WebSocket: a request's options, the upgrade, and
the session between the client and a runtime's ``StreamSession``.

``serve_remote_command`` answers one request: without a WebSocket upgrade it is a 400 saying so
(SPDY is not served for exec and attach: kubectl 1.30 and later speak WebSocket, on by default
since 1.31, or with ``KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true``); otherwise it takes one of the
server's stream slots (each session holds a worker of the bounded server, so there are few;
past them a 429), opens the session (failures are answered as HTTP errors before the upgrade),
upgrades with the best ``channel.k8s.io`` subprotocol the client offers and runs the ``Pump``.

The pump is two threads: the request's worker sends the process's output to the client as it is
written and, once the process has ended, its status on the error channel (the exit code) and
the close frame, in one write, then closes the connection cleanly; a second thread reads the
client's messages (stdin, resizes, a ``v5`` close of stdin). When the client goes, the session is
closed (the process is left, as the kubelet leaves it). The server's ``stop()`` ends every live
session (``Live.end``).

The status and the close frame go out together because a client may close its socket as soon as
it has the status while a thread of its own still waits in a read for more (lightkube's
``httpx2`` WebSocket does): when the close frame came later, that read woke on it and read the
rest of the TLS record from the descriptor number, by then the client's next connection, taking
its bytes (``WRONG_VERSION_NUMBER``, ``BAD_RECORD_MAC`` on that connection).
"""

from __future__ import annotations

import contextlib
import logging
import re
import shlex
import socket
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from email.message import Message
from http import HTTPStatus
from typing import Protocol

import attrs

from kubecore._apimachinery.rules import HTTPError, Query, error_for, query_flag, query_value
from kubecore._contract.errors import ContainerNotFound, KubecoreError, StreamingUnsupported
from kubecore._contract.streaming import OutputStream, StreamSession, TerminalSize
from kubecore._streaming.channels import (
    PROTOCOL_NAMES,
    Channel,
    Dialect,
    Frame,
    FrameError,
    closed_channel,
    decode,
    dialect,
    encode,
    exit_status,
    internal_status,
    read_resizes,
    status_payload,
    success_status,
)
from kubecore._streaming.websocket import (
    WebSocket,
    WebSocketClosed,
    handshake,
    wants_websocket,
)

logger = logging.getLogger(__name__)

EXIT_WAIT = 10.0
"""Seconds to wait for an exec'd process's exit code once its output has ended."""
CLOSE_WAIT = 5.0
"""Seconds the client has to answer the closing handshake before the connection is cut."""
IDLE_TIMEOUT = 15 * 60.0
"""Seconds without a byte from the client (kubectl pings every 5 s) after which it counts as
gone and its session ends (the kubelet's streaming idle timeout, shorter)."""
READY_GRACE = 0.1
"""Seconds the first output waits for a client that may not be ready for it (below)."""
_CLIENT_GO = re.compile(r"/v1\.(\d+)\.\d+")
NO_SPDY = (
    "this node serves {what} over WebSocket only (subprotocols v5.channel.k8s.io, "
    "v4.channel.k8s.io); SPDY is not served: use kubectl 1.30 or later (WebSocket is its "
    "default from 1.31; with 1.30 set KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true)"
)


class SessionOpener(Protocol):
    """What serving exec and attach needs from the agent (``kubecore.Kubelet.streams`` has it)."""

    def exec_stream(
        self,
        namespace: str,
        pod_name: str,
        container: str,
        command: list[str],
        *,
        stdin: bool,
        tty: bool,
        size: TerminalSize | None = None,
    ) -> StreamSession: ...

    def attach(
        self, namespace: str, pod_name: str, container: str, *, stdin: bool, tty: bool
    ) -> StreamSession: ...


class StreamSlots(Protocol):
    """The server's bounded stream slots (``kubecore._http.server``)."""

    def stream_slot(self, live: Live) -> AbstractContextManager[None]: ...


class Upgradable(Protocol):
    """The request being answered (``kubecore._http.handler.Handler``)."""

    command: str
    path: str
    headers: Message
    connection: socket.socket
    close_connection: bool


# --- a request's options ----------------------------------------------------------------------


@attrs.frozen
class StreamOptions:
    """What an exec or attach request asks for (the API's ``PodExecOptions`` /
    ``PodAttachOptions``)."""

    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool
    container: str = ""
    """'' when the request names none (the API server picks the default one)."""
    command: tuple[str, ...] = ()


def _flag(query: Query, *names: str) -> bool:
    return any(query_flag(query, name) for name in names)


def stream_options(query: Query, *, is_exec: bool) -> StreamOptions:
    """The options of a request's query, as the API server reads them (``stdin``, ``stdout``,
    ``stderr``, ``tty``, ``container``, ``command`` repeated; the kubelet's ``input``,
    ``output``, ``error`` too). A tty takes stderr into stdout. 400 for a request that asks for
    no stream, or an exec without a command."""
    tty = _flag(query, "tty")
    options = StreamOptions(
        stdin=_flag(query, "stdin", "input"),
        stdout=_flag(query, "stdout", "output"),
        stderr=_flag(query, "stderr", "error") and not tty,
        tty=tty,
        container=query_value(query, "container") or "",
        command=tuple(query.get("command", ())),
    )
    if not (options.stdin or options.stdout or options.stderr):
        raise HTTPError(
            HTTPStatus.BAD_REQUEST, "you must specify at least 1 of stdin, stdout, stderr"
        )
    if is_exec and not options.command:
        raise HTTPError(
            HTTPStatus.BAD_REQUEST, "you must specify at least one command for the container"
        )
    return options


# --- serving one request ----------------------------------------------------------------------


@attrs.define
class Live:
    """One session being served, as the server's stop ends it."""

    session: StreamSession | None = None
    socket: WebSocket | None = None
    ended: bool = False

    def end(self) -> None:
        """Cut the connection and close the session (from any thread, at any time)."""
        self.ended = True
        if self.socket is not None:
            self.socket.abort()
        if self.session is not None:
            with contextlib.suppress(Exception):
                self.session.close()


def open_stream(
    streams: SessionOpener, target: tuple[str, str, str], options: StreamOptions, what: str
) -> StreamSession:
    """Open an exec or attach session on ``target`` (namespace, pod, container), its failures
    as the API server answers them: 400 for a container that is not running or a runtime that
    cannot stream, 404 for a pod that is gone."""
    namespace, pod_name, container = target
    logger.info(
        "%s in %s/%s/%s%s",
        what,
        namespace,
        pod_name,
        container,
        f": {shlex.join(options.command)}" if options.command else "",
        extra={"namespace": namespace, "pod": pod_name, "container": container},
    )
    try:
        if what == "exec":
            return streams.exec_stream(
                *target, list(options.command), stdin=options.stdin, tty=options.tty
            )
        return streams.attach(*target, stdin=options.stdin, tty=options.tty)
    except ContainerNotFound:
        raise HTTPError(
            HTTPStatus.BAD_REQUEST,
            f'container not found ("{container}"): it is not running in pod {pod_name}',
        ) from None
    except StreamingUnsupported as error:
        raise HTTPError(HTTPStatus.BAD_REQUEST, str(error)) from None
    except KubecoreError as error:
        raise error_for(error) from None


Opener = Callable[[], StreamSession]
"""Opens the session; raises ``HTTPError`` for what keeps it from opening."""


def serve_remote_command(
    exchange: Upgradable,
    slots: StreamSlots,
    options: StreamOptions,
    open_session: Opener,
    *,
    what: str,
) -> None:
    """Answer an exec or attach request (``what``: ``exec``, ``attach``): see the module
    docstring. Raises ``HTTPError`` for anything answered before the upgrade."""
    headers = exchange.headers
    if not wants_websocket(headers):
        raise HTTPError(HTTPStatus.BAD_REQUEST, NO_SPDY.format(what=what))
    # Checked before the session opens: a refused upgrade starts no command.
    upgrade = handshake(exchange.command, exchange.path, headers, PROTOCOL_NAMES)
    name = upgrade.subprotocol
    live = Live()
    with slots.stream_slot(live):
        session = open_session()
        live.session = session
        try:
            ws = upgrade.complete(exchange.connection)
        except BaseException:
            session.close()
            raise
        exchange.close_connection = True
        ws.idle_timeout = IDLE_TIMEOUT
        live.socket = ws
        if live.ended:  # the server stopped meanwhile
            ws.abort()
        grace = 0.0 if ready_at_once(headers.get("User-Agent") or "") else READY_GRACE
        try:
            Pump(ws, dialect(name), session, options, what, grace).run()
        except Exception:  # upgraded: no HTTP answer can follow any more
            logger.exception("the %s session ended with an error", what)
            ws.abort()


def ready_at_once(user_agent: str) -> bool:
    """Whether a client takes output as soon as the connection is up. client-go before 1.33
    reads the connection before it has made its streams, and drops what arrives first
    ("Unknown stream id 1, discarding message"); for it (and for a client that does not say
    what it is) the first output waits until the client has sent something, or
    ``READY_GRACE``."""
    match = _CLIENT_GO.search(user_agent)
    return match is not None and int(match.group(1)) >= 33


# --- the session --------------------------------------------------------------------------------


class Pump:
    """Moves one session's streams between the client and the process (module docstring)."""

    def __init__(
        self,
        ws: WebSocket,
        dialect: Dialect,
        session: StreamSession,
        options: StreamOptions,
        what: str,
        grace: float = 0.0,
    ) -> None:
        self.ws = ws
        self.dialect = dialect
        self.session = session
        self.options = options
        self.what = what
        self.grace = grace
        self._client_gone = threading.Event()
        self._client_spoke = threading.Event()

    def run(self) -> None:
        """Serve the session until the process ends or the client goes; then close both."""
        reader = threading.Thread(target=self._read, name="kubecore-stream-in", daemon=True)
        last: bytes | str | None = None
        try:
            reader.start()
            if self.grace:
                self._client_spoke.wait(self.grace)
            self._send(self._first_channel(), b"")
            for stream, data in self.session.output():
                channel = self._channel(stream)
                if channel is not None and data:
                    self._send(channel, data)
            if not self._client_gone.is_set() and self.ws.open:
                last = self._last_message()
        except WebSocketClosed:
            pass
        finally:
            try:
                # The status and the close frame in one write (``WebSocket.close``): a client
                # that closes as soon as it has the status (lightkube's) must not be left
                # reading for a close frame that follows later.
                self.ws.close(last=last)
            finally:
                self.session.close()
            if reader.ident is not None:
                reader.join(CLOSE_WAIT)
                if reader.is_alive():
                    self.ws.abort()
                    reader.join(CLOSE_WAIT)

    def _first_channel(self) -> Channel:
        """The channel of the empty message that tells the client the streams are ready (the
        lowest one it will read, as the kubelet sends it)."""
        if self.options.stdout:
            return Channel.STDOUT
        return Channel.STDERR if self.options.stderr else Channel.ERROR

    def _channel(self, stream: OutputStream) -> Channel | None:
        """Where output of ``stream`` goes (None: the client did not ask for it)."""
        if self.session.tty or stream is OutputStream.STDOUT:
            return Channel.STDOUT if self.options.stdout else None
        return Channel.STDERR if self.options.stderr else None

    def _send(self, channel: int, data: bytes) -> None:
        message = encode(self.dialect, channel, data)
        if isinstance(message, str):
            self.ws.send_text(message)
        else:
            self.ws.send(message)

    def _last_message(self) -> bytes | str | None:
        """What the process ended with, for the error channel (None: the dialect has no such
        message)."""
        if self.what == "exec":
            code = self.session.wait(EXIT_WAIT)
            if code is None:
                status = internal_status("the command's exit code is not known")
            else:
                status = exit_status(code, self.options.command)
        else:
            status = success_status()
        payload = status_payload(self.dialect, status)
        return None if payload is None else encode(self.dialect, Channel.ERROR, payload)

    # --- the client's messages (the second thread)

    def _read(self) -> None:
        try:
            while True:
                message = self.ws.receive()
                if message is None:
                    return
                self._client_spoke.set()
                try:
                    frame = decode(self.dialect, message)
                    if frame is not None:
                        self._deliver(frame)
                except FrameError as error:
                    logger.debug("%s: a message was dropped: %s", self.what, error)
                except Exception:  # the process may be gone: its status still goes out
                    logger.debug("%s: delivering a message failed", self.what, exc_info=True)
        finally:
            self._client_gone.set()
            self.session.close()

    def _deliver(self, frame: Frame) -> None:
        channel = frame.channel
        if channel == Channel.STDIN and self.options.stdin:
            self.session.write_stdin(frame.data)
        elif channel == Channel.RESIZE:
            for size in read_resizes(frame.data):
                self.session.resize(size)
        elif (
            channel == Channel.CLOSE
            and self.dialect.closes
            and closed_channel(frame) == Channel.STDIN
        ):
            self.session.close_stdin()
