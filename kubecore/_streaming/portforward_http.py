"""``kubectl port-forward`` over HTTP: the request that opens a session, answered on the API's
``pods/{name}/portforward`` and the kubelet's ``/portForward/{namespace}/{pod}``.

Two ways in, both carrying the same SPDY/3.1 connection (``kubecore._streaming.portforward``):

* a WebSocket with the subprotocol ``SPDY/3.1+portforward.k8s.io`` (KEP-4006, what kubectl
  1.31 and later try first): SPDY bytes travel in binary messages;
* the legacy HTTP upgrade: ``Connection: Upgrade``, ``Upgrade: SPDY/3.1`` and
  ``X-Stream-Protocol-Version: portforward.k8s.io`` (kubectl falls back to it, and uses it with
  ``KUBECTL_PORT_FORWARD_WEBSOCKETS=false``), answered ``101 Switching Protocols``; a request
  without a protocol version is a 400, one with none this server speaks a 403 that lists them in
  ``X-Accepted-Stream-Protocol-Versions``, as the kubelet answers.

A session keeps a worker of the HTTP server for as long as it lasts, so at most
``max_sessions`` run at once per server (past it, 429); it ends when the client goes, after
``IDLE_TIMEOUT`` without a byte from it, or when the server stops.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import weakref
from collections.abc import Callable, Iterator
from email.message import Message
from http import HTTPStatus
from typing import Protocol

from kubecore._contract.errors import KubecoreError
from kubecore._http.rules import HTTPError, error_for
from kubecore._streaming.portforward import PROTOCOL, WEBSOCKET_PROTOCOL, Connect
from kubecore._streaming.portforward import PortForwardSession as Session
from kubecore._streaming.websocket import WebSocket, WebSocketClosed, accept, wants_websocket

IDLE_TIMEOUT = 4 * 3600.0
"""Seconds a session may go without a byte from the client (the kubelet's
``streamingConnectionIdleTimeout``); kubectl pings every 5 s."""
PROTOCOL_HEADER = "X-Stream-Protocol-Version"
ACCEPTED_HEADER = "X-Accepted-Stream-Protocol-Versions"
_RECV_BYTES = 65536
_STOP_POLL = 0.5


class Exchange(Protocol):
    """The request being answered (``kubecore._http.handler.Handler``)."""

    command: str
    path: str
    headers: Message
    connection: socket.socket
    close_connection: bool


class SocketTransport:
    """The upgraded connection itself. Closing it shuts it (the HTTP server closes it)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def recv(self) -> bytes:
        return self._sock.recv(_RECV_BYTES)

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)


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
        with contextlib.suppress(OSError):
            self._ws.sock.shutdown(socket.SHUT_RDWR)


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


class SessionSlots:
    """At most ``limit`` sessions at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self._lock:
            if self._held >= self.limit:
                raise HTTPError(
                    HTTPStatus.TOO_MANY_REQUESTS,
                    f"too many port-forward sessions open (at most {self.limit})",
                    {"Retry-After": "5"},
                )
            self._held += 1
        try:
            yield
        finally:
            with self._lock:
                self._held -= 1


_SLOTS: weakref.WeakKeyDictionary[object, SessionSlots] = weakref.WeakKeyDictionary()
_SLOTS_LOCK = threading.Lock()


def slots_for(server: object, limit: int) -> SessionSlots:
    """The session slots of one HTTP server (made on first use)."""
    with _SLOTS_LOCK:
        slots = _SLOTS.get(server)
        if slots is None:
            slots = _SLOTS[server] = SessionSlots(limit)
        return slots


def serve_port_forward(
    exchange: Exchange,
    connect: Connect,
    pod: str,
    *,
    slots: SessionSlots,
    stopping: threading.Event,
) -> None:
    """Open the session the request asks for and serve it until it ends. Errors before the
    upgrade are ``HTTPError`` (nothing has been sent then)."""
    with slots.hold():
        sock = exchange.connection
        headers = exchange.headers
        if wants_websocket(headers):
            ws = accept(sock, exchange.command, exchange.path, headers, [WEBSOCKET_PROTOCOL])
            transport: SocketTransport | WebSocketTransport = WebSocketTransport(ws)
        else:
            sock.sendall(switching_protocols(negotiate(headers)))
            transport = SocketTransport(sock)
        exchange.close_connection = True
        sock.settimeout(IDLE_TIMEOUT)
        session = Session(connect, pod)
        done = threading.Event()
        watcher = threading.Thread(
            target=_stop_with, args=(stopping, done, session), name="port-forward-stop", daemon=True
        )
        watcher.start()
        try:
            session.serve(transport)
        finally:
            done.set()
            watcher.join(_STOP_POLL * 4)


def _stop_with(stopping: threading.Event, done: threading.Event, session: Session) -> None:
    while not done.wait(_STOP_POLL):
        if stopping.is_set():
            session.stop()
            return


class StreamSite(Protocol):
    """What a session needs of the HTTP server it runs in (``kubecore._http.server``)."""

    stopping: threading.Event

    @property
    def config(self) -> _WorkerCount: ...


class _WorkerCount(Protocol):
    @property
    def workers(self) -> int: ...


def session_limit(site: StreamSite) -> SessionSlots:
    """The site's session slots: half its workers, so that other requests are still answered."""
    return slots_for(site, max(1, site.config.workers // 2))


class PortForwarding(Protocol):
    """The agent's side (``kubecore.Kubelet.port_forwarder``)."""

    def port_forwarder(
        self, namespace: str, pod_name: str
    ) -> Callable[[int, float], socket.socket]: ...


def connector(kubelet: PortForwarding, namespace: str, name: str) -> Connect:
    """The pod's ``connect(port, timeout)``, or the ``HTTPError`` (a v1 ``Status``) that says
    why there is none: 404 for a pod not on the node or without a ready sandbox, 501 for a
    runtime that cannot forward ports."""
    try:
        return kubelet.port_forwarder(namespace, name)
    except NotImplementedError as error:
        raise HTTPError(HTTPStatus.NOT_IMPLEMENTED, str(error), reason="NotImplemented") from None
    except KubecoreError as error:
        raise error_for(error) from None
