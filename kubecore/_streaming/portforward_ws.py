"""Port-forward over the ``channel.k8s.io`` WebSocket subprotocols, as the kubelet and the API
server serve it to clients that do not speak SPDY (the ``kubernetes`` Python client's
``kubernetes.stream.portforward``, kr8s, client-go's WebSocket dialer before KEP-4006).

A client that offers no subprotocol (kr8s' ``pod.portforward()``) is answered without one and
gets the binary ``channel.k8s.io`` framing, the kubelet's default.

The ports come with the request, not in streams: the query's ``ports`` (the API's
``PodPortForwardOptions``) or ``port`` (the kubelet's own name), repeated or comma-separated.
Each requested port ``i`` has two channels: ``2i`` carries its data both ways and ``2i + 1``
the server's error messages. The first message the server sends on each of them is the port
number, two bytes little-endian; after that the data channel carries the bytes of one
connection to the pod's port, made when the session opens, and the error channel a message
when that connection cannot be made or breaks (the same words as over SPDY). The ``v5`` dialect
(``CHANNEL_PROTOCOLS`` says when it is chosen) lets the client close a channel (255): closing a
data channel half-closes the pod's socket for writing, and the server closes a data channel once
the pod's side has ended. The session ends when the client goes or every port's pod side has
ended; then the WebSocket is closed.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading

import attrs

from kubecore._apimachinery.rules import Query
from kubecore._contract.errors import BadParameter
from kubecore._streaming.channels import (
    Channel,
    Dialect,
    FrameError,
    closed_channel,
    decode,
    encode,
)
from kubecore._streaming.portforward import CONNECT_TIMEOUT, Connect
from kubecore._streaming.websocket import WebSocket, WebSocketClosed

logger = logging.getLogger(__name__)

CHANNEL_PROTOCOLS = (
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "v5.channel.k8s.io",
    "channel.k8s.io",
    "base64.channel.k8s.io",
)
"""The subprotocols served, in the server's order of preference: ``v4`` before ``v5``, as the
kubelet serves port-forward only up to ``v4``. A client that offers both (the ``kubernetes``
Python client does) gets ``v4``: its port-forward reader takes any channel past its ports as a
protocol error, so a ``v5`` close from the server would end its session. One that offers only
``v5`` gets it, with the server's closes."""
MAX_PORTS = 64
"""Ports one session may ask for (each holds a connection to the pod and a thread)."""
_COPY_BYTES = 32 * 1024
_JOIN_TIMEOUT = 10.0
_SEND_TIMEOUT = 30.0
"""How long a write to the pod's socket may block the session's reader."""


def requested_ports(query: Query) -> tuple[int, ...]:
    """The ports a request asks for, in order; ``BadParameter`` names what is wrong. Both the
    API's ``ports`` and the kubelet's ``port`` are read."""
    values = [*query.get("ports", ()), *query.get("port", ())]
    if not values:
        raise BadParameter('query parameter "ports" is required')
    ports: list[int] = []
    for value in values:
        if not value:
            raise BadParameter('query parameter "ports" cannot be empty')
        for word in value.split(","):
            text = word.strip()
            if not text.isdigit() or len(text) > 5 or not 0 < int(text) <= 65535:
                raise BadParameter(f"unable to parse {text!r} as a port: must be 1-65535")
            ports.append(int(text))
    if len(ports) > MAX_PORTS:
        raise BadParameter(f"at most {MAX_PORTS} ports may be forwarded at once")
    return tuple(ports)


def port_prefix(port: int) -> bytes:
    """What the first message of a port's channels carries: the port, little-endian."""
    return struct.pack("<H", port)


@attrs.define
class _Port:
    number: int
    data_channel: int
    sock: socket.socket | None = None
    lock: threading.Lock = attrs.Factory(threading.Lock)
    settled: threading.Event = attrs.Factory(threading.Event)
    """Set once the connection to the pod is made or has failed: what the client sends
    before then waits for it."""


class ChannelPortForward:
    """One WebSocket session forwarding ``ports`` of a pod (``pod`` names it in messages)."""

    def __init__(
        self, ws: WebSocket, dialect: Dialect, connect: Connect, pod: str, ports: tuple[int, ...]
    ) -> None:
        self._ws = ws
        self._dialect = dialect
        self._connect = connect
        self._pod = pod
        self._ports = [_Port(number, 2 * index) for index, number in enumerate(ports)]
        self._by_channel = {port.data_channel: port for port in self._ports}
        self._stopped = threading.Event()

    def serve(self) -> None:
        """Announce each port, connect to them, and copy until the session ends."""
        try:
            for port in self._ports:
                self._send(port.data_channel, port_prefix(port.number))
                self._send(port.data_channel + 1, port_prefix(port.number))
        except WebSocketClosed:
            return
        workers = [
            threading.Thread(
                target=self._pod_to_client, args=(port,), name="port-forward", daemon=True
            )
            for port in self._ports
        ]
        for worker in workers:
            worker.start()
        reader = threading.Thread(target=self._client_to_pod, name="port-forward", daemon=True)
        reader.start()
        for worker in workers:
            worker.join()
        self._ws.close()
        self.stop()
        reader.join(_JOIN_TIMEOUT)

    def stop(self) -> None:
        """End the session now, from any thread: the WebSocket and every pod socket."""
        self._stopped.set()
        self._ws.abort()
        for port in self._ports:
            port.settled.set()
        for port in self._ports:
            self._shutdown(port, socket.SHUT_RDWR)

    # --- the pod's side of each port

    def _pod_to_client(self, port: _Port) -> None:
        try:
            sock = self._connect(port.number, CONNECT_TIMEOUT)
        except Exception as failure:  # the runtime's words go to the client
            port.settled.set()
            self._error(port, f"error forwarding port {port.number} to pod {self._pod}: {failure}")
            return
        with port.lock:
            if self._stopped.is_set():
                port.settled.set()
                sock.close()
                return
            port.sock = sock
        port.settled.set()
        try:
            while chunk := sock.recv(_COPY_BYTES):
                self._send(port.data_channel, chunk)
        except WebSocketClosed:
            pass
        except OSError as error:
            if not self._stopped.is_set():
                self._error(port, f"error forwarding port {port.number}: {error}")
        else:
            if self._dialect.closes:
                with contextlib.suppress(WebSocketClosed):
                    self._send(Channel.CLOSE, bytes((port.data_channel,)))
        finally:
            with port.lock:
                port.sock = None
            with contextlib.suppress(OSError):
                sock.close()

    def _error(self, port: _Port, message: str) -> None:
        logger.info("port-forward to %s: %s", self._pod, message)
        with contextlib.suppress(WebSocketClosed):
            self._send(port.data_channel + 1, message.encode())

    # --- the client's side: one reader for every channel

    def _client_to_pod(self) -> None:
        try:
            while (message := self._ws.receive()) is not None:
                try:
                    frame = decode(self._dialect, message)
                except FrameError as error:
                    logger.info("port-forward to %s: %s", self._pod, error)
                    break
                if frame is None:
                    continue
                if frame.channel == Channel.CLOSE and self._dialect.closes:
                    closed = closed_channel(frame)
                    port = self._by_channel.get(closed) if closed is not None else None
                    if port is not None:
                        self._shutdown(port, socket.SHUT_WR)
                    continue
                port = self._by_channel.get(frame.channel)
                if port is not None and frame.data:
                    self._write(port, frame.data)
                # The error channels are the server's to write: what a client sends there,
                # as on any channel no port has, is dropped, as upstream drops it.
        finally:
            # The client is gone: so is every port's answer.
            self.stop()

    def _write(self, port: _Port, data: bytes) -> None:
        port.settled.wait(CONNECT_TIMEOUT + 1.0)
        with port.lock:
            sock = port.sock
        if sock is None:
            return  # not connected (yet, or any more): the bytes have nowhere to go
        try:
            sock.settimeout(_SEND_TIMEOUT)
            sock.sendall(data)
        except OSError as error:
            self._error(port, f"error forwarding port {port.number}: {error}")
            self._shutdown(port, socket.SHUT_RDWR)

    def _shutdown(self, port: _Port, how: int) -> None:
        with port.lock:
            sock = port.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(how)

    def _send(self, channel: int, data: bytes) -> None:
        message = encode(self._dialect, channel, data)
        if isinstance(message, str):
            self._ws.send_text(message)
        else:
            self._ws.send(message)
