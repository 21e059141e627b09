"""Two SPDY connections over a socket pair, each served by its own thread."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kubecore._streaming.portforward_http import SocketTransport
from kubecore._streaming.spdy_connection import SpdyConnection, SpdyStream


def serving(connection: SpdyConnection) -> threading.Thread:
    thread = threading.Thread(target=connection.serve, daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def connected(
    accept: Callable[[SpdyStream], None] | None, **server_options: Any
) -> Iterator[tuple[SpdyConnection, SpdyConnection]]:
    """(client, server) connections; ``client_flow_control`` sets the client's."""
    left, right = socket.socketpair()
    client_flow = server_options.pop("client_flow_control", True)
    client = SpdyConnection(SocketTransport(left), client=True, flow_control=client_flow)
    server = SpdyConnection(SocketTransport(right), client=False, accept=accept, **server_options)
    threads = [serving(client), serving(server)]
    try:
        yield client, server
    finally:
        client.close()
        server.close()
        for thread in threads:
            thread.join(10)
        left.close()
        right.close()


def read_all(stream: SpdyStream, limit: int = 64 * 1024 * 1024) -> bytes:
    parts: list[bytes] = []
    size = 0
    while size <= limit and (chunk := stream.read()):
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)
