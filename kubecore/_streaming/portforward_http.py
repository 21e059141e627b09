"""``kubectl port-forward`` over HTTP: the request that opens a session, answered on the API's
``pods/{name}/portforward`` and the kubelet's ``/portForward/{namespace}/{pod}``.

Three ways in. Two carry the same SPDY/3.1 connection (``kubecore._streaming.portforward``):

* a WebSocket with the subprotocol ``SPDY/3.1+portforward.k8s.io`` (KEP-4006, what kubectl
  1.31 and later try first): SPDY bytes travel in binary messages;
* the legacy HTTP upgrade: ``Connection: Upgrade``, ``Upgrade: SPDY/3.1`` and
  ``X-Stream-Protocol-Version: portforward.k8s.io`` (kubectl falls back to it, and uses it with
  ``KUBECTL_PORT_FORWARD_WEBSOCKETS=false``), answered ``101 Switching Protocols``; a request
  without a protocol version is a 400, one with none this server speaks a 403 that lists them in
  ``X-Accepted-Stream-Protocol-Versions``, as the kubelet answers.

The third is a WebSocket with one of the ``channel.k8s.io`` subprotocols (``v5``, ``v4`` and
their elders), the ports in the query (``kubecore._streaming.portforward_ws``): what the
``kubernetes`` Python client and kr8s speak.

A session keeps a worker of the HTTP server for as long as it lasts: it holds one of the
server's stream slots (``max_stream_sessions``, shared with exec and attach; past it, 429), and
ends when the client goes, after ``IDLE_TIMEOUT`` without a byte from it, or when the server
stops.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from email.message import Message
from http import HTTPStatus
from typing import Protocol, TypeVar

from kubecore._apimachinery.rules import HTTPError, Query, error_for
from kubecore._contract.errors import BadParameter, KubecoreError, StreamingUnsupported
from kubecore._streaming.channels import dialect
from kubecore._streaming.portforward import PROTOCOL, WEBSOCKET_PROTOCOL, Connect
from kubecore._streaming.portforward import PortForwardSession as Session
from kubecore._streaming.portforward_ws import (
    CHANNEL_PROTOCOLS,
    ChannelPortForward,
    requested_ports,
)
from kubecore._streaming.remotecommand import Live
from kubecore._streaming.websocket import (
    WRITE_TIMEOUT,
    WebSocket,
    WebSocketClosed,
    handshake,
    wants_websocket,
)

IDLE_TIMEOUT = 4 * 3600.0
"""Seconds a session may go without a byte from the client (the kubelet's
``streamingConnectionIdleTimeout``); kubectl pings every 5 s."""
PROTOCOL_HEADER = "X-Stream-Protocol-Version"
ACCEPTED_HEADER = "X-Accepted-Stream-Protocol-Versions"
_RECV_BYTES = 65536
_POLL_SECONDS = 1.0
_READ_SECONDS = 1.0


class Exchange(Protocol):
    """The request being answered (``kubecore._http.handler.Handler``)."""

    command: str
    path: str
    headers: Message
    connection: socket.socket
    close_connection: bool


class SocketTransport:
    """The upgraded connection itself. Reads and writes take turns under one lock (a TLS
    connection must never be read and written by two threads at once): a read waits for data
    without it, then reads what arrived. ``recv`` gives up (b"") after ``idle_timeout`` seconds
    without a byte; closing shuts the socket (the HTTP server closes it)."""

    def __init__(self, sock: socket.socket, idle_timeout: float | None = None) -> None:
        self._sock = sock
        self._idle_timeout = idle_timeout
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def recv(self) -> bytes:
        heard = time.monotonic()
        while not self._closed.is_set():
            if not self._readable():
                idle = self._idle_timeout
                if idle is not None and time.monotonic() - heard > idle:
                    return b""
                continue
            with self._lock:
                try:
                    self._sock.settimeout(_READ_SECONDS)
                    return self._sock.recv(_RECV_BYTES)
                except (TimeoutError, ssl.SSLWantReadError, BlockingIOError, InterruptedError):
                    continue  # a TLS record still partial
                except OSError:
                    return b""
        return b""

    def _readable(self) -> bool:
        pending = getattr(self._sock, "pending", None)
        if pending is not None and pending():
            return True
        try:
            poller = select.poll()
            poller.register(self._sock.fileno(), select.POLLIN | select.POLLPRI)
            return bool(poller.poll(_POLL_SECONDS * 1000))
        except (OSError, ValueError):
            return True  # a closed socket: its recv says so

    def send(self, data: bytes) -> None:
        with self._lock:
            self._sock.settimeout(WRITE_TIMEOUT)
            self._sock.sendall(data)

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            # The plain socket's shutdown: a TLS socket's own would drop its TLS state under a
            # thread reading it.
            socket.socket.shutdown(self._sock, socket.SHUT_RDWR)


class WebSocketTransport:
    """SPDY bytes in WebSocket binary messages: each send is one message, messages read are
    one stream of bytes (empty ones carry none)."""

    def __init__(self, ws: WebSocket) -> None:
        self._ws = ws

    def recv(self) -> bytes:
        # Go's SPDY framer writes each field on its own, and an empty write is an empty
        # message: only the end of the WebSocket is the end of input.
        while (message := self._ws.receive()) is not None:
            if message:
                return message
        return b""

    def send(self, data: bytes) -> None:
        try:
            self._ws.send(data)
        except WebSocketClosed as error:
            raise ConnectionError(str(error)) from error

    def close(self) -> None:
        self._ws.close()
        self._ws.abort()


def negotiate(headers: Message) -> str:
    """The protocol version of a legacy upgrade; ``HTTPError`` when there is none to agree."""
    offered = [
        word.strip()
        for value in headers.get_all(PROTOCOL_HEADER) or []
        for word in value.split(",")
        if word.strip()
    ]
    if not offered:
        raise HTTPError(HTTPStatus.BAD_REQUEST, f"unable to upgrade: {PROTOCOL_HEADER} is required")
    if PROTOCOL not in offered:
        raise HTTPError(
            HTTPStatus.FORBIDDEN,
            f"unable to upgrade: unable to negotiate protocol: client supports {offered}, "
            f"server accepts {[PROTOCOL]}",
            {ACCEPTED_HEADER: PROTOCOL},
        )
    connection = (headers.get("Connection") or "").lower()
    upgrade = (headers.get("Upgrade") or "").lower()
    if "upgrade" not in connection or "spdy/3.1" not in upgrade:
        raise HTTPError(
            HTTPStatus.BAD_REQUEST,
            "unable to upgrade: missing upgrade headers in request "
            "(Connection: Upgrade, Upgrade: SPDY/3.1)",
        )
    return PROTOCOL


def switching_protocols(protocol: str) -> bytes:
    return (
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
        f"{PROTOCOL_HEADER}: {protocol}\r\n\r\n"
    ).encode()


def wants_port_forward(headers: Message) -> bool:
    """Whether a request asks to open a session (a WebSocket or a SPDY upgrade)."""
    return wants_websocket(headers) or "spdy" in (headers.get("Upgrade") or "").lower()


class _Session(Protocol):
    def stop(self) -> None: ...


_S = TypeVar("_S", bound=_Session)


class _Stoppable(Live):
    """A port-forward session as the server's stop ends it (``stream_slot``)."""

    def __init__(self) -> None:
        super().__init__()
        self._session: _Session | None = None

    def serve(self, session: _S) -> _S:
        self._session = session
        if self.ended:  # the server stopped before the session began
            session.stop()
        return session

    def end(self) -> None:
        self.ended = True
        if self._session is not None:
            self._session.stop()


class StreamSlots(Protocol):
    """The HTTP server's bounded sessions (``kubecore._http.server``: ``stream_slot``)."""

    def stream_slot(self, live: Live) -> AbstractContextManager[None]: ...


SERVED_WEBSOCKET_PROTOCOLS = (WEBSOCKET_PROTOCOL, *CHANNEL_PROTOCOLS)
"""The WebSocket subprotocols of a port-forward, in the server's order of preference."""
UNOFFERED = "channel.k8s.io"
"""What a client that offers no subprotocol speaks (kr8s' ``pod.portforward()``): the binary
channels, the kubelet's default port-forward protocol."""


def serve_port_forward(
    exchange: Exchange, connect: Connect, pod: str, slots: StreamSlots, query: Query
) -> None:
    """Open the session the request asks for and serve it until it ends (it holds one of the
    server's stream slots). Errors before the upgrade are ``HTTPError`` (nothing has been sent
    then)."""
    live = _Stoppable()
    with slots.stream_slot(live):
        sock = exchange.connection
        headers = exchange.headers
        if not wants_websocket(headers):
            protocol = negotiate(headers)
            exchange.close_connection = True
            sock.sendall(switching_protocols(protocol))
            live.serve(Session(connect, pod)).serve(SocketTransport(sock, IDLE_TIMEOUT))
            return
        agreed = handshake(
            exchange.command, exchange.path, headers, SERVED_WEBSOCKET_PROTOCOLS, UNOFFERED
        )
        if agreed.subprotocol == WEBSOCKET_PROTOCOL:
            exchange.close_connection = True
            ws = agreed.complete(sock)
            ws.idle_timeout = IDLE_TIMEOUT
            live.serve(Session(connect, pod)).serve(WebSocketTransport(ws))
            return
        try:
            ports = requested_ports(query)
        except BadParameter as error:
            raise HTTPError(HTTPStatus.BAD_REQUEST, str(error)) from None
        exchange.close_connection = True
        ws = agreed.complete(sock)
        ws.idle_timeout = IDLE_TIMEOUT
        live.serve(ChannelPortForward(ws, dialect(agreed.subprotocol), connect, pod, ports)).serve()


class PortForwarding(Protocol):
    """The agent's side (``kubecore.Kubelet.streams.port_forwarder``)."""

    def port_forwarder(
        self, namespace: str, pod_name: str
    ) -> Callable[[int, float], socket.socket]: ...


def connector(streams: PortForwarding, namespace: str, name: str) -> Connect:
    """The pod's ``connect(port, timeout)``, or the ``HTTPError`` (a v1 ``Status``) that says
    why there is none: 404 for a pod not on the node or without a ready sandbox, 501 for a
    runtime that cannot forward ports."""
    try:
        return streams.port_forwarder(namespace, name)
    except StreamingUnsupported as error:
        raise HTTPError(HTTPStatus.NOT_IMPLEMENTED, str(error), reason="NotImplemented") from None
    except KubecoreError as error:
        raise error_for(error) from None
