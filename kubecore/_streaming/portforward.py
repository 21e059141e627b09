"""The port-forward protocol (``portforward.k8s.io``) on a SPDY connection, as the kubelet
serves it to ``kubectl port-forward``.

For each connection it forwards, the client opens two streams carrying the same headers,
``port`` (the pod's port) and ``requestid``, and ``streamtype`` ``error`` then ``data``
(a client too old to send ``requestid`` is paired by stream id, as the kubelet does). Each
stream is accepted (SYN_REPLY) or, with a header missing or wrong, reset. Once both of a
request have arrived (within ``STREAM_CREATION_TIMEOUT``), the pod's port is connected to
(``connect(port, timeout)``, the runtime's ``PortForwarder``) and bytes are copied both ways;
the client's FIN half-closes the pod's socket for writing, the pod's end of input is the data
stream's FIN, and the request ends when both directions have (or the client resets the data
stream). A port that cannot be connected to is reported on the error stream, in the words
``kubectl`` prints after ``an error occurred forwarding L -> R:``. Many requests, to several
ports, run at once on one connection.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable

import attrs

from kubecore._contract.errors import SpdyClosed
from kubecore._streaming.spdy import RstStatus, header
from kubecore._streaming.spdy_connection import SpdyConnection, SpdyStream, Transport

logger = logging.getLogger(__name__)

PROTOCOL = "portforward.k8s.io"
"""The port-forward protocol's name (``X-Stream-Protocol-Version``)."""
WEBSOCKET_PROTOCOL = "SPDY/3.1+portforward.k8s.io"
"""The WebSocket subprotocol of KEP-4006: SPDY/3.1 frames carried in binary messages."""
STREAM_CREATION_TIMEOUT = 30.0
"""How long a request's second stream may take to arrive (the kubelet's default)."""
CONNECT_TIMEOUT = 10.0
MAX_STREAMS = 256
"""Streams open at once on one session: 128 forwarded connections (each holds two threads)."""
MAX_WAITING_PAIRS = 64
"""Requests whose second stream has not arrived yet; past it a new request's stream is reset."""
_COPY_BYTES = 32 * 1024
_JOIN_TIMEOUT = 10.0

Connect = Callable[[int, float], socket.socket]
"""Connect to a port in the pod within a timeout (``PortForwarder.port_forward``, bound to the
pod's sandbox); raises with a message saying why it cannot."""


class StreamRejected(ValueError):
    """A stream whose headers do not make a port-forward stream."""


@attrs.frozen
class StreamRole:
    kind: str
    """``error`` or ``data``."""
    port: int
    request_id: str


def stream_role(stream_id: int, headers: tuple[tuple[str, str], ...]) -> StreamRole:
    """What a new stream is for, from its headers; ``StreamRejected`` says what is wrong."""
    kind = header(headers, "streamtype")
    if not kind:
        raise StreamRejected('"streamType" header is required')
    if kind not in ("error", "data"):
        raise StreamRejected(f"invalid stream type {kind!r}")
    text = header(headers, "port")
    if not text:
        raise StreamRejected('"port" header is required')
    if not text.isdigit() or not 0 < int(text) <= 65535:
        raise StreamRejected(f"unable to parse {text!r} as a port")
    request_id = header(headers, "requestid") or ""
    if not request_id:
        # An old client: its error stream and data stream are consecutive odd ids.
        request_id = str(stream_id if kind == "error" else stream_id - 2)
    return StreamRole(kind, int(text), request_id)


@attrs.define
class _Pair:
    request_id: str
    error: SpdyStream | None = None
    data: SpdyStream | None = None
    timer: threading.Timer | None = None


class PortForwardSession:
    """One client's port-forward connection: ``serve`` it on a transport until the client goes
    (or ``stop``). ``pod`` names the pod in error messages (``namespace/name, uid U``)."""

    def __init__(self, connect: Connect, pod: str, *, flow_control: bool = False) -> None:
        self._connect = connect
        self._pod = pod
        self._flow_control = flow_control
        self._lock = threading.Lock()
        self._pairs: dict[str, _Pair] = {}
        self._workers: list[threading.Thread] = []
        self._sockets: set[socket.socket] = set()
        self._connection: SpdyConnection | None = None
        self._stopped = False

    def serve(self, transport: Transport) -> None:
        connection = SpdyConnection(
            transport,
            client=False,
            accept=self._accept,
            flow_control=self._flow_control,
            max_streams=MAX_STREAMS,
        )
        self._connection = connection
        if self._stopped:  # stopped before it began
            connection.close()
        try:
            connection.serve()
        finally:
            self._end()

    def stop(self) -> None:
        """End the session (from any thread, before or while it is served): its connection,
        and every forwarded socket."""
        self._stopped = True
        if self._connection is not None:
            self._connection.close()

    def _end(self) -> None:
        with self._lock:
            pairs, self._pairs = list(self._pairs.values()), {}
            sockets = list(self._sockets)
            workers = list(self._workers)
        for pair in pairs:
            if pair.timer is not None:
                pair.timer.cancel()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for worker in workers:
            worker.join(_JOIN_TIMEOUT)

    # --- streams arriving (in the connection's reader thread: never block)

    def _accept(self, stream: SpdyStream) -> None:
        try:
            role = stream_role(stream.id, stream.headers)
        except StreamRejected as rejected:
            logger.info("port-forward stream %d refused: %s", stream.id, rejected)
            stream.reset(RstStatus.CANCEL)
            return
        pair, problem, complete = self._file(role, stream)
        if pair is None:
            logger.info("port-forward stream %d refused: %s", stream.id, problem)
            stream.reset(RstStatus.REFUSED_STREAM)
            return
        stream.reply()
        if role.kind == "error":
            stream.discard_input()  # the client only reads it
        if problem:
            self._print_error(
                pair, f"error processing stream for request {role.request_id}: {problem}"
            )
            stream.reset(RstStatus.PROTOCOL_ERROR)
            return
        if complete:
            if pair.timer is not None:
                pair.timer.cancel()
            self._start(self._forward, pair, role.port)

    def _file(self, role: StreamRole, stream: SpdyStream) -> tuple[_Pair | None, str, bool]:
        """Put the stream in its request's pair: (the pair, what is wrong, whether the pair is
        complete). No pair when too many wait already; a problem for a second stream of a
        kind."""
        with self._lock:
            pair = self._pairs.get(role.request_id)
            if pair is None:
                if len(self._pairs) >= MAX_WAITING_PAIRS:
                    return None, f"more than {MAX_WAITING_PAIRS} requests wait for streams", False
                pair = self._pairs[role.request_id] = _Pair(role.request_id)
                pair.timer = threading.Timer(STREAM_CREATION_TIMEOUT, self._expire, (pair,))
                pair.timer.daemon = True
                pair.timer.start()
            if getattr(pair, role.kind) is not None:
                return pair, f"{role.kind} stream already assigned", False
            setattr(pair, role.kind, stream)
            complete = pair.error is not None and pair.data is not None
            if complete:
                del self._pairs[role.request_id]
            return pair, "", complete

    def _expire(self, pair: _Pair) -> None:
        with self._lock:
            if self._pairs.get(pair.request_id) is not pair:
                return
            del self._pairs[pair.request_id]
        self._print_error(pair, f"request {pair.request_id}: timed out waiting for streams")
        if pair.error is not None:
            pair.error.close()
        if pair.data is not None:
            pair.data.reset(RstStatus.CANCEL)  # nobody will read it

    def _print_error(self, pair: _Pair, message: str) -> None:
        logger.info("port-forward to %s: %s", self._pod, message)
        if pair.error is not None:
            with contextlib.suppress(SpdyClosed):
                pair.error.write(message.encode())

    def _start(self, target: Callable[..., None], *args: object) -> threading.Thread:
        worker = threading.Thread(target=target, args=args, name="port-forward", daemon=True)
        with self._lock:
            self._workers = [w for w in self._workers if w.is_alive()]
            self._workers.append(worker)
        worker.start()
        return worker

    # --- one forwarded connection

    def _forward(self, pair: _Pair, port: int) -> None:
        assert pair.error is not None and pair.data is not None
        error, data = pair.error, pair.data
        try:
            sock = self._connect(port, CONNECT_TIMEOUT)
        except Exception as failure:  # the runtime's words go to the client
            message = f"error forwarding port {port} to pod {self._pod}: {failure}"
            self._print_error(pair, message)
            error.close()
            data.close()
            return
        with self._lock:
            self._sockets.add(sock)
        try:
            upstream = self._start(_client_to_pod, data, sock)
            _pod_to_client(sock, data)
            upstream.join()
        finally:
            with self._lock:
                self._sockets.discard(sock)
            with contextlib.suppress(OSError):
                sock.close()
            error.close()
            data.close()


def _client_to_pod(data: SpdyStream, sock: socket.socket) -> None:
    """Copy what the client sends to the pod; at its FIN (or reset) half-close the socket."""
    how = socket.SHUT_WR
    try:
        while chunk := data.read(_COPY_BYTES):
            sock.sendall(chunk)
        if data.reset_status is not None:
            how = socket.SHUT_RDWR  # the client is gone: so is the pod's answer
    except OSError:
        data.reset(RstStatus.CANCEL)
        how = socket.SHUT_RDWR
    finally:
        with contextlib.suppress(OSError):
            sock.shutdown(how)


def _pod_to_client(sock: socket.socket, data: SpdyStream) -> None:
    """Copy what the pod sends to the client; at its end of input send FIN."""
    try:
        while chunk := sock.recv(_COPY_BYTES):
            data.write(chunk)
    except OSError:
        data.reset(RstStatus.CANCEL)
    except SpdyClosed:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RD)
        return
    data.close()
