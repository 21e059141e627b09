"""``kubectl port-forward`` against a node on the in-memory runtime: a pod whose containers
listen (an ``httpd`` serving ``ok`` on 8080 and an echo on 9000), a running ``kubectl
port-forward`` whose local ports are read from what it prints, and plain clients."""

from __future__ import annotations

import contextlib
import queue
import re
import socket
import subprocess
import threading
from collections.abc import Iterator

import attrs

from tests.api.kubectl_support import Kubectl

WEB_POD = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: http
    image: busybox:1.35
    command:
    - sh
    - -c
    - mkdir -p /tmp/www; echo ok > /tmp/www/index.html; httpd -f -p 8080 -h /tmp/www
  - name: echo
    image: busybox:1.35
    command: [nc, -lk, -p, "9000", -e, cat]
"""
WAIT = 30.0


@attrs.define
class PortForward:
    """A running ``kubectl port-forward``: the local port of each remote one."""

    process: subprocess.Popen[str]
    ports: dict[int, int]
    stderr: list[str]

    def connect(self, remote: int) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.ports[remote]), timeout=WAIT)

    def wait_exit(self) -> int:
        return self.process.wait(WAIT)

    def errors(self) -> str:
        return "".join(self.stderr)


def _pump(stream: object, lines: queue.Queue[str | None], keep: list[str] | None) -> None:
    for line in stream:  # type: ignore[attr-defined]
        if keep is not None:
            keep.append(line)
        lines.put(line)
    lines.put(None)


@contextlib.contextmanager
def port_forward(
    binary: str, kubectl: Kubectl, pod: str, remotes: list[int], *, websockets: bool
) -> Iterator[PortForward]:
    """``kubectl port-forward pod/POD :R ...`` (verbose, so the dialer used is logged), ready
    once it has said where it listens for every remote port."""
    env = kubectl.env()
    env["KUBECTL_PORT_FORWARD_WEBSOCKETS"] = "true" if websockets else "false"
    process = subprocess.Popen(
        [binary, "port-forward", f"pod/{pod}", *(f":{r}" for r in remotes), "-v=4"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    stderr: list[str] = []
    threading.Thread(target=_pump, args=(process.stdout, lines, None), daemon=True).start()
    threading.Thread(
        target=_pump, args=(process.stderr, queue.Queue(), stderr), daemon=True
    ).start()
    ports: dict[int, int] = {}
    try:
        while len(ports) < len(remotes):
            line = lines.get(timeout=WAIT)
            if line is None:
                process.wait(WAIT)
                raise AssertionError(f"kubectl port-forward ended: {''.join(stderr)}")
            match = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)", line)
            if match:
                ports[int(match.group(2))] = int(match.group(1))
        yield PortForward(process, ports, stderr)
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(WAIT)


def http_get(sock: socket.socket, path: str = "/") -> bytes:
    with sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: pod\r\n\r\n".encode())
        return receive_all(sock)


def echo(sock: socket.socket, payload: bytes) -> bytes:
    """Send ``payload``, half-close, and read the answer to its end."""
    with sock:
        sender = threading.Thread(
            target=lambda: (sock.sendall(payload), sock.shutdown(socket.SHUT_WR))
        )
        sender.start()
        answer = receive_all(sock)
        sender.join(WAIT)
        return answer


def receive_all(sock: socket.socket, limit: int = 64 * 1024 * 1024) -> bytes:
    parts: list[bytes] = []
    size = 0
    while size <= limit and (chunk := sock.recv(65536)):
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


def upgrade(
    address: tuple[str, int], path: str, headers: dict[str, str]
) -> tuple[socket.socket, bytes]:
    """POST ``path`` with ``headers`` on a new connection: the socket and the answer's head
    (and, for an error, its body)."""
    sock = socket.create_connection(address, timeout=WAIT)
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n{head}\r\n".encode()
    )
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    if not answer.startswith(b"HTTP/1.1 101"):
        answer += receive_all(sock)
    return sock, answer


SPDY_UPGRADE = {
    "Connection": "Upgrade",
    "Upgrade": "SPDY/3.1",
    "X-Stream-Protocol-Version": "portforward.k8s.io",
}
