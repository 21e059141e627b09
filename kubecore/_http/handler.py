"""The handler of one request of the kubelet HTTP API: reading it (the bounded server read it
whole), routing it to its endpoint (``Site.routes``; the Kubernetes API's paths to ``Site.api``)
and answering it (a body, a chunked stream, or a v1 ``Status`` for an error, never a
traceback)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, Protocol

from kubecore._api.auth import Gate, host_allowed
from kubecore._apimachinery.rules import HTTPError, error_for, status_body
from kubecore._contract.errors import BadParameter
from kubecore._http.config import ServedKubelet, ServerConfig
from kubecore._http.serving import Refused, RequestReader, body_length

if TYPE_CHECKING:
    from kubecore._api.server import KubeApi
    from kubecore._streaming.remotecommand import Live

logger = logging.getLogger(__name__)

JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"
MAX_QUERY_BYTES = 32 * 1024
"""The longest query string read (a selector is at most 8 KiB, three times that encoded)."""
MAX_QUERY_FIELDS = 256

Route = Callable[["Handler", list[str], dict[str, list[str]]], None]
"""An endpoint: the handler, the path's segments after the first (unquoted), the query."""
ANSWERED_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
"""The methods some endpoint answers; any other (``TRACE``, ``QUERY``, ...) is a 405."""
PEER_GONE = (
    BrokenPipeError,
    ConnectionResetError,
    ConnectionAbortedError,
    TimeoutError,
    ssl.SSLEOFError,
    ssl.SSLZeroReturnError,
)
"""What writing to a client that went away (or stopped reading) raises: not the server's
fault, so one debug line and the connection is closed."""


class Site(Protocol):
    """What the handler sees as ``self.server`` (``kubecore._http.server``)."""

    kubelet: ServedKubelet
    config: ServerConfig
    api: KubeApi | None
    stopping: threading.Event
    routes: Mapping[str, tuple[str, Route]]
    """The endpoints by the path's first segment, each with the method it answers (or the
    methods, separated by ``|``)."""
    gate: Gate
    """Who may (the API's token check, for every endpoint)."""
    host_names: tuple[str, ...]
    """The names a plain-HTTP request's ``Host`` may give besides loopback ones."""

    def follow_slot(
        self, container: tuple[str, str, str], authorization: str
    ) -> AbstractContextManager[None]: ...

    def watch_slot(self, authorization: str) -> AbstractContextManager[None]: ...

    def stream_slot(self, live: Live) -> AbstractContextManager[None]: ...


def _read_exactly(stream: Any, length: int) -> bytes:
    """``length`` bytes, or fewer at the end of input (one read of a raw stream may return only
    part of what was asked)."""
    chunks: list[bytes] = []
    remaining = length
    while remaining > 0:
        chunk = stream.read(remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


class _SocketWriter(io.BufferedIOBase):
    """Writes go out whole (``sendall``), unbuffered, as ``http.server`` expects."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._sock.sendall(data)
        with memoryview(data) as view:
            return view.nbytes


class Handler(BaseHTTPRequestHandler):
    """Answers exactly one request; the server hands a kept-alive connection back to its
    selector until the next one arrives."""

    protocol_version = "HTTP/1.1"
    server_version = "kubecore"
    server: Site  # type: ignore[assignment]

    def __init__(
        self, sock: socket.socket, address: Any, server: Site, reader: RequestReader
    ) -> None:
        self._reader = reader
        super().__init__(sock, address, server)  # type: ignore[arg-type]

    def setup(self) -> None:
        self.connection = self.request
        # The request has been read whole; a client slow to take the answer cannot hold a
        # worker for longer than this per write.
        self.connection.settimeout(self.server.config.request_timeout)
        self.rfile = self._reader  # type: ignore[assignment]
        self.wfile = _SocketWriter(self.connection)

    def handle(self) -> None:
        self.close_connection = True
        self.handle_one_request()

    def handle_expect_100(self) -> bool:
        return True  # the selector said "100 Continue" before it read the body

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # Used by the base class for malformed requests: answer in the same JSON shape.
        try:
            status = HTTPStatus(code)
        except ValueError:
            status = HTTPStatus.BAD_REQUEST
        self.close_connection = True
        if self.request_version == "HTTP/0.9":
            # An unparsable request line leaves the 0.9 default, which suppresses headers.
            self.request_version = "HTTP/1.0"
        self._send_bytes(status, status_body(status, message or status.phrase), JSON_TYPE)

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if self.command in ANSWERED_METHODS:
            return True
        path = urllib.parse.urlsplit(self.path).path
        allowed = ", ".join(sorted(self._allowed(path)))
        message = f"{self.command} is not allowed on {path}; use {allowed}"
        self._fail(HTTPError(HTTPStatus.METHOD_NOT_ALLOWED, message, {"Allow": allowed}))
        return False

    def _allowed(self, path: str) -> set[str]:
        """The methods ``path`` answers (any a node answers, for a path of the node's API or
        none at all)."""
        segments = path.split("/")[1:]
        route = self.server.routes.get(segments[0] if segments else "")
        api = self.server.api
        if route is None or (api is not None and segments[0] in api.heads):
            return set(ANSWERED_METHODS)
        allowed = set(route[0].split("|"))
        if allowed == {"GET"}:
            allowed.add("HEAD")
        return allowed

    # every method goes through one dispatcher so that a wrong method gets a 405, not a 501
    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_OPTIONS(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        try:
            split = urllib.parse.urlsplit(self.path)
            segments = split.path.split("/")[1:]
            self._check_caller(segments[0] if segments else "")
            self._route(split.path, segments, parse_query(split.query))
        except HTTPError as error:
            self._fail(error)
        except BadParameter as error:
            self._fail(error_for(error))
        except PEER_GONE as gone:
            logger.debug("%s %s: the client went away (%r)", self.command, self.path, gone)
            self.close_connection = True
        except Exception:
            logger.exception("request %s %s failed", self.command, self.path)
            self._fail(HTTPError(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error (see the log)"))

    def _check_caller(self, head: str) -> None:
        """Refuse, before anything of the request is parsed, one whose ``Host`` does not name
        the node (plain HTTP only) or that lacks the token it needs
        (``kubecore._api.auth``)."""
        tls = isinstance(self.connection, ssl.SSLSocket)
        host = self.headers.get("Host") or ""
        # The address the connection arrived on names the node too (a server on 0.0.0.0).
        arrived = str(self.connection.getsockname()[0])
        if not tls and not host_allowed(host, (*self.server.host_names, arrived)):
            raise HTTPError(
                HTTPStatus.MISDIRECTED_REQUEST,
                f"the Host {host[:100]!r} does not name this node: use its address, its name "
                "or localhost",
            )
        api = self.server.api
        # The kubelet's own endpoints only read: a write method there is answered 405 below.
        method = self.command if api is not None and head in api.heads else "GET"
        self.server.gate.authenticate(self.headers.get("Authorization") or "", method, tls, head)

    def _route(self, path: str, segments: list[str], query: dict[str, list[str]]) -> None:
        head = segments[0] if segments else ""
        api = self.server.api
        if api is not None and head in api.heads:
            api.handle(self, segments, query)
            return
        routes = self.server.routes
        if head not in routes:
            raise HTTPError(HTTPStatus.NOT_FOUND, f"no such path {path!r}")
        method, route = routes[head]
        allowed = self._allowed(path)
        if self.command not in allowed:
            raise HTTPError(
                HTTPStatus.METHOD_NOT_ALLOWED,
                f"{self.command} is not allowed on {path}; use {method.replace('|', ' or ')}",
                {"Allow": ", ".join(sorted(allowed))},
            )
        if self.command == "GET":
            self._refuse_body()  # only the endpoints that are posted to take a body
        route(self, [urllib.parse.unquote(s) for s in segments[1:]], query)

    # --- responses

    def _send_bytes(
        self,
        code: HTTPStatus,
        body: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, value: object, code: HTTPStatus = HTTPStatus.OK) -> None:
        self._send_bytes(code, json.dumps(value, indent=2).encode() + b"\n", JSON_TYPE)

    def _fail(self, error: HTTPError) -> None:
        # The request body (if any) may be unread: do not reuse the connection.
        self.close_connection = True
        with contextlib.suppress(OSError):
            self._send_bytes(error.code, error.body(), JSON_TYPE, error.headers)

    def _stream(self, first: bytes, rest: Iterator[bytes], content_type: str) -> None:
        """Send a chunked body; stop when the iterator ends or the client goes away."""
        try:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if self.command == "HEAD":
                return
            chunk = first
            while True:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                if self.server.stopping.is_set():
                    break
                next_chunk = next(rest, None)
                if next_chunk is None:
                    break
                chunk = next_chunk
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True
        finally:
            close = getattr(rest, "close", None)
            if callable(close):
                close()

    def _refuse_body(self) -> None:
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or (length not in (None, "0")):
            self._read_body()  # from memory (the selector read it, at most 64 KiB): dropped

    def _read_body(self) -> bytes:
        """The body, from memory: the selector read it (or, for a request it did not admit, did
        not, and this finds it short)."""
        try:
            length = body_length(self.headers)
        except Refused as refused:
            raise HTTPError(refused.code, refused.message) from None
        limit = self.server.config.max_body_bytes
        if length > limit:
            raise HTTPError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body is {length} bytes; limit {limit}"
            )
        body = _read_exactly(self.rfile, length)
        if len(body) != length:
            raise HTTPError(HTTPStatus.BAD_REQUEST, "body shorter than its Content-Length")
        return body


def parse_query(text: str) -> dict[str, list[str]]:
    """A request's query string, bounded in length and in fields before it is split; a 400
    past either bound."""
    if len(text) > MAX_QUERY_BYTES:
        raise HTTPError(
            HTTPStatus.BAD_REQUEST,
            f"the query string is {len(text)} bytes; at most {MAX_QUERY_BYTES} are read",
        )
    try:
        return urllib.parse.parse_qs(text, keep_blank_values=True, max_num_fields=MAX_QUERY_FIELDS)
    except ValueError:
        raise HTTPError(
            HTTPStatus.BAD_REQUEST, f"the query has more than {MAX_QUERY_FIELDS} parameters"
        ) from None
