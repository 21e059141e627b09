"""The way into a CRI runtime's streaming server (the URL its ``Exec``, ``Attach`` and
``PortForward`` answer): one HTTP/1.1 request upgraded to SPDY/3.1, as ``kubectl`` (and the
kubelet proxying it) makes it.

containerd 1.6 serves the kubelet's ``pkg/cri/streaming`` on 127.0.0.1 (plain HTTP unless
``enable_tls_streaming``); each URL holds a one-time token that lapses after a minute. The
request says ``Connection: Upgrade``, ``Upgrade: SPDY/3.1`` and the stream protocol it speaks
(``X-Stream-Protocol-Version``); the server answers ``101 Switching Protocols`` naming the one
it chose, and the connection then carries SPDY frames (``kubecore._streaming.spdy``). Any other
answer is an error whose body says why (an unknown or used token is a 404)."""

from __future__ import annotations

import contextlib
import json
import socket
import urllib.parse
from typing import Any

import attrs

from kubecore import ContainerRuntimeError

PROTOCOL_HEADER = "X-Stream-Protocol-Version"
MAX_HEAD = 64 * 1024
"""The largest answer head read (the server's is a few hundred bytes)."""
_MAX_BODY = 4096


@attrs.frozen
class StreamURL:
    """Where a streaming URL points (``http`` only: a TLS streaming server is refused)."""

    host: str
    port: int
    target: str
    """The path and query to ask for."""


def parse_stream_url(url: str) -> StreamURL:
    """The parts of a streaming URL; a clear error for anything but ``http://host:port/path``."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http":
        raise ContainerRuntimeError(
            f"the CRI runtime's streaming URL {url!r} is not plain http (a TLS streaming server "
            "is not supported)"
        )
    try:
        port = parts.port or 80
    except ValueError:
        raise ContainerRuntimeError(
            f"the CRI runtime's streaming URL {url!r} has a bad port"
        ) from None
    if not parts.hostname:
        raise ContainerRuntimeError(f"the CRI runtime's streaming URL {url!r} has no host")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return StreamURL(host=parts.hostname, port=port, target=target)


def upgrade_request(where: StreamURL, protocol: str) -> bytes:
    """The request that opens a SPDY/3.1 connection speaking ``protocol``."""
    host = f"[{where.host}]" if ":" in where.host else where.host
    lines = [
        f"POST {where.target} HTTP/1.1",
        f"Host: {host}:{where.port}",
        "Connection: Upgrade",
        "Upgrade: SPDY/3.1",
        f"{PROTOCOL_HEADER}: {protocol}",
        "Content-Length: 0",
        "User-Agent: kubecore",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@attrs.frozen
class Answer:
    """The head of the server's answer, and the bytes that came behind it."""

    status: int
    reason: str
    headers: dict[str, str]
    """Names lower case; a repeated header's last value."""
    rest: bytes


def parse_answer(head: bytes) -> Answer | None:
    """The answer once its head is complete in ``head`` (None: not yet); raises
    ``ContainerRuntimeError`` for bytes that are not an HTTP/1.x answer."""
    end = head.find(b"\r\n\r\n")
    if end < 0:
        if len(head) > MAX_HEAD:
            raise ContainerRuntimeError("the CRI streaming server's answer head is too long")
        return None
    lines = head[:end].decode("latin-1").split("\r\n")
    first = lines[0].split(" ", 2)
    if len(first) < 2 or not first[0].startswith("HTTP/1.") or not first[1].isdigit():
        raise ContainerRuntimeError(f"the CRI streaming server answered {lines[0][:100]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    reason = first[2] if len(first) > 2 else ""
    return Answer(status=int(first[1]), reason=reason, headers=headers, rest=head[end + 4 :])


def open_spdy(url: str, protocol: str, timeout: float) -> tuple[socket.socket, bytes]:
    """A socket upgraded to SPDY/3.1 speaking ``protocol``, and the SPDY bytes that came with
    the answer; the socket is blocking, without a timeout."""
    where = parse_stream_url(url)
    try:
        sock = socket.create_connection((where.host, where.port), timeout=timeout)
    except OSError as error:
        raise ContainerRuntimeError(
            f"cannot reach the CRI runtime's streaming server at {where.host}:{where.port}: {error}"
        ) from error
    try:
        sock.sendall(upgrade_request(where, protocol))
        answer = _read_answer(sock)
        if answer.status != 101:
            raise ContainerRuntimeError(
                f"the CRI streaming server refused the stream: {answer.status} {answer.reason}"
                f"{_body_text(sock, answer)}"
            )
        chosen = answer.headers.get(PROTOCOL_HEADER.lower(), "")
        if chosen != protocol:
            raise ContainerRuntimeError(
                f"the CRI streaming server chose stream protocol {chosen!r}, not {protocol!r}"
            )
        sock.settimeout(None)
        return sock, answer.rest
    except BaseException as error:
        with contextlib.suppress(OSError):
            sock.close()
        if isinstance(error, OSError):
            raise ContainerRuntimeError(f"the CRI streaming server's answer: {error}") from error
        raise


def _read_answer(sock: socket.socket) -> Answer:
    head = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            raise ContainerRuntimeError("the CRI streaming server closed before answering")
        head += chunk
        answer = parse_answer(head)
        if answer is not None:
            return answer


def _body_text(sock: socket.socket, answer: Answer) -> str:
    """What an error answer's body says (bounded; a Status's message when it is one)."""
    body = answer.rest
    try:
        length = min(int(answer.headers.get("content-length", _MAX_BODY)), _MAX_BODY)
    except ValueError:
        length = _MAX_BODY
    with contextlib.suppress(OSError):
        while len(body) < length and (chunk := sock.recv(_MAX_BODY)):
            body += chunk
    text = body[:_MAX_BODY].decode("utf-8", "replace").strip()
    with contextlib.suppress(ValueError):
        value: Any = json.loads(text)
        if isinstance(value, dict) and value.get("message"):
            text = str(value["message"])
    return f": {text}" if text else ""
