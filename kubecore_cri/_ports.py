"""Port forwarding on a CRI runtime (``PortForwarder``): the client of the runtime's streaming
server (the URL ``PortForward`` answers), speaking ``portforward.k8s.io`` over SPDY/3.1 as
``kubectl port-forward`` does (the one protocol the kubelet's ``pkg/cri/streaming/portforward``
serves to a SPDY client; SPDY rather than its WebSocket, for the half-close of each direction).

Each ``port_forward`` is one connection to the server with one request on it: an ``error`` and
a ``data`` stream carrying the same ``port`` and ``requestid``. The runtime connects to the port
inside the sandbox's network namespace once both arrived, and copies bytes until one direction
ends (containerd then gives the other one second). The caller gets one end of a socket pair;
two threads copy between the other end and the data stream. The caller's half-close is the
data stream's FIN; the caller closing its end altogether (a hang-up on the pair) ends the
request and frees the connection.

The server says nothing when its connection succeeds, only (on the error stream) when it fails,
so whether the port has a listener is read first, without touching it, from the namespace's
socket table (``/proc/<sandbox pid>/net/tcp``, ``tcp6``: a socket listening on an address its
loopback reaches), once the pid is known to be the sandbox's (its ``/proc/<pid>/ns/net`` is the
namespace containerd names). A port nothing listens on is then refused with the same words as
the Docker runtime's; a listener gone in between is the server's refusal, logged, and the socket
closed. Where the table cannot be read (the runtime on another host or in another pid namespace,
no right to read it), the request is made unchecked."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import select
import socket
import threading
from collections.abc import Callable, Iterable

from kubecore import ContainerRuntimeError
from kubecore.runtime import MANAGED_LABEL, SandboxNotFound
from kubecore.streaming import RstStatus, SpdyClosed, SpdyConnection
from kubecore_cri._client import CriConnection
from kubecore_cri._errors import Subject
from kubecore_cri._pb import api_pb2 as pb
from kubecore_cri._streams import LiveStreams
from kubecore_cri._upgrade import open_spdy

log = logging.getLogger(__name__)

PROTOCOL = "portforward.k8s.io"
_LISTEN = "0A"
_COPY = 32 * 1024
_HANGUP_POLL_MS = 1000


# --- the namespace's listeners (pure) -----------------------------------------------------------


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address of ``/proc/net/tcp*``: 32-bit words in the host's (little-endian) order."""
    raw = bytes.fromhex(hex_address)
    swapped = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    if len(swapped) == 4:
        return ipaddress.IPv4Address(swapped)
    return ipaddress.IPv6Address(swapped)


def _reached_from_loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_unspecified or address.is_loopback


def listening_ports(tables: Iterable[str]) -> set[int]:
    """The ports with a listening socket that a connection to the loopback reaches, from the
    text of ``/proc/<pid>/net/tcp`` and ``tcp6`` (a line that is not a socket is skipped)."""
    ports: set[int] = set()
    for table in tables:
        for line in table.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 4 or fields[3] != _LISTEN:
                continue
            local, _, port = fields[1].partition(":")
            try:
                address = _address(local)
                number = int(port, 16)
            except ValueError:
                continue
            if _reached_from_loopback(address):
                ports.add(number)
    return ports


def read_listening_ports(pid: int) -> set[int] | None:
    """The listening ports of ``pid``'s network namespace; None when its tables cannot be read
    (another host's process, or no right to)."""
    tables = []
    for name in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{name}", encoding="ascii", errors="replace") as table:
                tables.append(table.read())
        except FileNotFoundError:
            if name == "tcp":
                return None
        except OSError:
            return None
    return listening_ports(tables)


# --- one forwarded connection -------------------------------------------------------------------


class _Transport:
    """The upgraded socket, with the SPDY bytes that came behind the server's answer."""

    def __init__(self, sock: socket.socket, rest: bytes) -> None:
        self._sock = sock
        self._rest = rest
        self._lock = threading.Lock()

    def recv(self) -> bytes:
        if self._rest:
            rest, self._rest = self._rest, b""
            return rest
        return self._sock.recv(64 * 1024)

    def send(self, data: bytes) -> None:
        with self._lock:
            self._sock.sendall(data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)


class Forward:
    """One forwarded connection: the SPDY connection, its two streams, the socket pair's far end
    and the threads between them. It ends (and frees all of it) when both directions have, when
    the server refuses, or at ``close``."""

    def __init__(
        self,
        sock: socket.socket,
        rest: bytes,
        port: int,
        where: str,
        on_end: Callable[[Forward], None],
    ) -> None:
        self._sock = sock
        self._port = port
        self._where = where
        self._on_end = on_end
        self._connection = SpdyConnection(_Transport(sock, rest), client=True, flow_control=False)
        self._lock = threading.Lock()
        self._ended = False
        self._directions = 2
        self.near, self._far = socket.socketpair()
        self._threads: list[threading.Thread] = []

    def start(self) -> socket.socket:
        """Open the request's streams and the copying; the caller's end of the socket pair."""
        self._thread(self._serve, "reader")
        try:
            headers = (("port", str(self._port)), ("requestid", "0"))
            self._error = self._connection.open_stream((("streamtype", "error"), *headers))
            self._data = self._connection.open_stream((("streamtype", "data"), *headers))
        except SpdyClosed:
            self.close()
            raise ConnectionError(
                f"the CRI streaming server closed the port-forward to {self._where}"
            ) from None
        self._error.close()  # nothing is written on it
        self._thread(self._watch_error, "error")
        self._thread(self._to_runtime, "in")
        self._thread(self._from_runtime, "out")
        return self.near

    def _thread(self, target: Callable[[], None], what: str) -> None:
        name = f"kubecore-cri-portforward-{self._port}-{what}"
        worker = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(worker)
        worker.start()

    def _serve(self) -> None:
        try:
            self._connection.serve()
        finally:
            self.close()

    def _watch_error(self) -> None:
        message = b""
        while len(message) < 4096 and (chunk := self._error.read(4096)):
            message += chunk
        if message:
            log.info(
                "port-forward to %s: %s", self._where, message.decode("utf-8", "replace")[:500]
            )
            self.close()

    def _to_runtime(self) -> None:
        """What the caller writes, to the data stream; at its end, the stream's FIN. Then wait
        for the caller to close its end: nobody reads what the port still answers."""
        try:
            while chunk := self._far.recv(_COPY):
                self._data.write(chunk)
            self._data.close()
        except (OSError, SpdyClosed):
            self._data.reset(RstStatus.CANCEL)
        self._direction_done()
        self._wait_for_hangup()

    def _wait_for_hangup(self) -> None:
        """Until the caller has closed its end (not only for writing), or the forward ended."""
        try:
            poller = select.poll()
            poller.register(self._far.fileno(), select.POLLHUP)
        except (OSError, ValueError):
            return  # closed: the forward has ended
        while not self._ended:
            if poller.poll(_HANGUP_POLL_MS):
                break
        self.close()

    def _from_runtime(self) -> None:
        """What the port answers, to the caller; at its end, the caller reads end of file."""
        try:
            while chunk := self._data.read(_COPY):
                self._far.sendall(chunk)
            with contextlib.suppress(OSError):
                self._far.shutdown(socket.SHUT_WR)
        except OSError:
            self._data.reset(RstStatus.CANCEL)
        self._direction_done()

    def _direction_done(self) -> None:
        with self._lock:
            self._directions -= 1
            done = self._directions == 0
        if done:
            self.close()

    def close(self) -> None:
        """End the request at once; idempotent."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
        # The connection's socket first: a copy blocked on a server that does not read wakes.
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._connection.close()
        with contextlib.suppress(OSError):
            self._far.shutdown(socket.SHUT_RDWR)  # wakes the copy from the caller
        with contextlib.suppress(OSError):
            self._far.close()
        with contextlib.suppress(OSError):
            self._sock.close()
        self._on_end(self)


def open_forward(
    url: str, port: int, where: str, timeout: float, on_end: Callable[[Forward], None]
) -> Forward:
    """Connect to the streaming ``url`` and start forwarding ``port``."""
    sock, rest = open_spdy(url, PROTOCOL, timeout)
    forward = Forward(sock, rest, port, where, on_end)
    forward.start()
    return forward


def port_forward(
    connection: CriConnection, live: LiveStreams, sandbox_id: str, port: int, timeout: float
) -> socket.socket:
    """A connected socket to ``port`` on the sandbox's loopback (``PortForwarder``)."""
    if not 0 < port < 65536:
        raise ContainerRuntimeError(f"port-forward to sandbox {sandbox_id}: bad port {port}")
    answer = connection.call(
        "PodSandboxStatus",
        pb.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id, verbose=True),
        Subject.SANDBOX,
    )
    if answer.status.labels.get(MANAGED_LABEL) != "true":
        raise SandboxNotFound(f"{sandbox_id} is not a kubecore sandbox")
    if answer.status.state != pb.SANDBOX_READY:
        raise ContainerRuntimeError(
            f"port-forward to sandbox {sandbox_id}: it is not running "
            f"(state {pb.PodSandboxState.Name(answer.status.state)})"
        )
    where = f"port {port} in sandbox {sandbox_id}"
    pid, netns = sandbox_process(answer.info.get("info") or "")
    checkable = connection.is_local() and pid > 0 and in_namespace(pid, netns)
    listening = read_listening_ports(pid) if checkable else None
    if listening is not None and port not in listening:
        raise ContainerRuntimeError(f"nothing listens on {where}")
    request = pb.PortForwardRequest(pod_sandbox_id=sandbox_id, port=[port])
    url = connection.call("PortForward", request, Subject.SANDBOX).url
    try:
        forward = open_forward(url, port, where, timeout, live.discard)
    except OSError as error:
        raise ContainerRuntimeError(f"cannot connect to {where}: {error}") from error
    live.add(forward)
    return forward.near


def sandbox_process(info: str) -> tuple[int, str]:
    """The sandbox process's pid (0: not told) and its network namespace's path (empty: the
    host's) in containerd's verbose status."""
    try:
        value = json.loads(info) if info else {}
    except ValueError:
        return 0, ""
    if not isinstance(value, dict):
        return 0, ""
    try:
        pid = int(value.get("pid") or 0)
    except (TypeError, ValueError):
        pid = 0
    namespaces = ((value.get("runtimeSpec") or {}).get("linux") or {}).get("namespaces") or []
    paths = [n.get("path") or "" for n in namespaces if isinstance(n, dict)]
    kinds = [n.get("type") for n in namespaces if isinstance(n, dict)]
    netns = paths[kinds.index("network")] if "network" in kinds else ""
    return pid, str(netns)


def in_namespace(pid: int, netns: str) -> bool:
    """Whether ``pid``, as this process sees it, is in the network namespace at ``netns`` (the
    host's: this process's own, when empty): so it is the sandbox's process, not another one
    with the same number in another pid namespace."""
    try:
        theirs = os.stat(f"/proc/{pid}/ns/net")
        expected = os.stat(netns or "/proc/self/ns/net")
    except OSError:
        return False
    return (theirs.st_dev, theirs.st_ino) == (expected.st_dev, expected.st_ino)
