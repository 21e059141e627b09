"""Ports in the in-memory runtime's sandboxes (``PortForwarder.port_forward``): a connection is
one end of a ``socket.socketpair()``, the other end served in a thread by a small in-memory
server.

A port is open while a running container of the sandbox listens on it (its behaviour's
``ports``: ``nc -l -p PORT``, ``httpd -p PORT``, or a script). What answers is, in order: the
server a test gave for the port (``FakeRuntime.serve_port(port, handler)``), an HTTP responder
for an ``httpd`` (it serves the container's files under its ``-h`` directory, ``/www`` by default,
as busybox ``httpd`` does), else an echo server (``nc``). A port nothing listens on is refused
with a ``ContainerRuntimeError`` that names it, as a real connect is.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
import shlex
import socket
import threading
from collections.abc import Callable, Mapping

from kubecore.runtime import ContainerRuntimeError, RuntimeState, SandboxNotFound, SandboxState
from kubecore_fake._engine import Engine
from kubecore_fake._records import ContainerRecord

PortHandler = Callable[[socket.socket], None]
"""Serves one accepted connection (the server's end of it); the socket is closed after."""

_CHUNK = 65536
_MAX_REQUEST_HEAD = 64 * 1024


def echo(sock: socket.socket) -> None:
    """Send back what arrives until the client half-closes (``nc -l`` piped to itself)."""
    while data := sock.recv(_CHUNK):
        sock.sendall(data)


def http_responder(files: Mapping[str, str], root: str) -> PortHandler:
    """A one-request HTTP/1.0 server of ``files`` under ``root`` (busybox ``httpd -h``)."""

    def serve(sock: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head and len(head) < _MAX_REQUEST_HEAD:
            data = sock.recv(_CHUNK)
            if not data:
                return
            head += data
        words = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        path = words[1].split("?", 1)[0] if len(words) >= 2 else "/"
        if path.endswith("/"):
            path += "index.html"
        body = files.get(posixpath.normpath(posixpath.join(root, path.lstrip("/"))))
        status = "200 OK" if body is not None else "404 Not Found"
        content = (body if body is not None else "404 Not Found\n").encode()
        sock.sendall(
            f"HTTP/1.0 {status}\r\nContent-Type: text/html\r\n"
            f"Content-Length: {len(content)}\r\nConnection: close\r\n\r\n".encode()
            + content
        )

    return serve


def _httpd_root(rec: ContainerRecord) -> str | None:
    """The ``-h`` directory of an ``httpd`` in the container's command (None: no httpd)."""
    words = " ".join([*rec.config.command, *rec.config.args])
    if not re.search(r"(^|[\s;&|/])httpd(\s|$)", words):
        return None
    with contextlib.suppress(ValueError):
        argv = shlex.split(words.split("httpd", 1)[1].split("&")[0].split(";")[0])
        if "-h" in argv and argv.index("-h") + 1 < len(argv):
            return argv[argv.index("-h") + 1]
    return "/www"


class Ports:
    """The servers behind the sandboxes' ports (state under the engine's lock)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._handlers: dict[int, PortHandler] = {}

    def serve(self, port: int, handler: PortHandler) -> None:
        """Answer connections to ``port`` (in any sandbox where something listens on it) with
        ``handler``."""
        with self._engine.lock:
            self._handlers[port] = handler

    def connect(self, sandbox_id: str, port: int) -> socket.socket:
        engine = self._engine
        with engine.lock:
            sandbox = engine.sandboxes.get(sandbox_id)
            if sandbox is None or not sandbox.managed:
                raise SandboxNotFound(f"sandbox {sandbox_id} not found")
            if sandbox.state is not SandboxState.READY:
                raise ContainerRuntimeError(f"sandbox {sandbox_id} is not ready")
            listener = next(
                (
                    rec
                    for rec in engine.containers.values()
                    if rec.sandbox_id == sandbox_id
                    and rec.state is RuntimeState.RUNNING
                    and port in rec.behaviour.ports
                ),
                None,
            )
            if listener is None:
                raise ContainerRuntimeError(
                    f"dial tcp 127.0.0.1:{port}: connect: connection refused "
                    f"(nothing listens on port {port} in sandbox {sandbox_id})"
                )
            handler = self._handlers.get(port)
            if handler is None:
                root = _httpd_root(listener)
                handler = echo if root is None else http_responder(dict(listener.files), root)
        client, server = socket.socketpair()
        threading.Thread(
            target=_run, args=(handler, server), name=f"fake-port-{port}", daemon=True
        ).start()
        return client


def _run(handler: PortHandler, sock: socket.socket) -> None:
    try:
        handler(sock)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
