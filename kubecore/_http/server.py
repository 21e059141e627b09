"""The kubelet HTTP API: a small read-mostly server on the standard library's HTTP server.

Endpoints (all GET unless said):

* ``/healthz``: the kubelet's health checks (``ping``, ``syncloop``, ``runtime``, one ``source
  <name>`` per pod source): 200 ``ok`` (``?verbose`` lists each check), or 500 listing each check
  with ``[+]``/``[-]`` and why a failing one fails; ``/healthz/<check>`` runs one check.
* ``/pods``: the desired pods with their status, as a v1 ``PodList``.
* ``/pods/{namespace}/{name}``: one pod.
* ``/containerLogs/{namespace}/{pod}/{container}``: the container's output, with the kubelet's
  query (``previous``, ``sinceSeconds``, ``sinceTime``, ``limitBytes``, ``timestamps``,
  ``tailLines``, ``follow``; ``kubecore._observability.logs``); ``follow`` streams until the client
  goes away
  or the container stops. A query the container cannot answer (``previous`` with no terminated
  instance, a container waiting to start) is a 400 that says so.
* ``/run/{namespace}/{pod}/{container}`` (POST, off unless ``enable_exec``): runs a command
  (``?cmd=...``, repeated for argv, or a JSON body ``{"command": [...]}``) and answers
  ``{"exitCode", "stdout", "stderr"}``. Needs ``Authorization: Bearer <token>``.
* ``/logs/`` and ``/logs/{path}``: node log files under ``log_dir``, never outside it.
* ``/metrics`` (the kubelet's ``kubelet_*`` metrics and kubecore's own), ``/metrics/probes``
  (``prober_*``), ``/metrics/resource`` (node, pod and container CPU and memory): Prometheus text.
* ``/stats/summary``: the Summary API document (node, pods, containers, volumes).
* ``/version``, ``/api``, ``/apis``, ``/openapi``: the node's Kubernetes API for ``kubectl``, when
  ``KubeletServer`` is given one (``kubecore._api.server.attach_api``).

With ``tls_cert_file`` and ``tls_private_key_file`` every endpoint is served over TLS.

Errors are answered as a v1 ``Status`` JSON object with a reason, never with a traceback.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import shlex
import socket
import ssl
import stat
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs
from prometheus_client import CONTENT_TYPE_LATEST

from kubecore._contract.errors import BadParameter, KubecoreError
from kubecore._contract.values import ExecResult
from kubecore._http.rules import (
    Credentials,
    HTTPError,
    check_bearer,
    error_for,
    query_seconds,
    require_bearer,
    status_body,
)
from kubecore._http.serving import (
    DEFAULT_ADDRESS,
    DEFAULT_PORT,
    BoundedServer,
    Limits,
    Refused,
    RequestHead,
    RequestReader,
    body_length,
)
from kubecore._manifest import pod_to_dict
from kubecore._model.v1 import Pod
from kubecore._observability.logs import MAX_TAIL_LINES as MAX_TAIL_LINES
from kubecore._observability.logs import LogOptions, parse_log_options

if TYPE_CHECKING:
    from kubecore._api.server import KubeApi

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
MAX_LOG_PATH = 4096
MAX_LOG_NAME = 255
"""The longest ``/logs/`` path and file name asked for (Linux's PATH_MAX and NAME_MAX)."""
MAX_EXEC_TIMEOUT = 300.0

JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"


class _Metrics(Protocol):
    def render(self) -> bytes: ...

    def render_probes(self) -> bytes: ...

    def render_resource(self) -> bytes: ...


class ServedKubelet(Protocol):
    """What the server needs from the agent (``kubecore.Kubelet`` has all of it)."""

    def pods(self) -> list[Pod]: ...

    def get_pod(self, namespace: str, name: str) -> Pod | None: ...

    def container_logs(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        timestamps: bool = False,
        previous: bool = False,
        since_seconds: int | None = None,
        since_time: float | None = None,
        limit_bytes: int | None = None,
    ) -> Iterator[bytes]: ...

    def exec(
        self, namespace: str, pod: str, container: str, command: list[str], *, timeout: float = ...
    ) -> ExecResult: ...

    def stats_summary(self) -> dict[str, Any]: ...

    def health_checks(self) -> list[tuple[str, str]]:
        """(check name, "" when it passes, else why: ``failed: …`` or ``not ready: …``), in
        the order ``/healthz`` lists them."""
        ...

    @property
    def metrics(self) -> _Metrics: ...


@attrs.frozen
class ServerConfig:
    """Where and how the agent's HTTP API listens: address and port, TLS, limits, and whether
    exec is allowed (with its token)."""

    address: str = DEFAULT_ADDRESS
    port: int = DEFAULT_PORT
    """0 picks a free port (see ``KubeletServer.port``)."""
    enable_exec: bool = False
    exec_token: str = ""
    log_dir: str | None = None
    """The directory ``/logs/`` serves; None answers 404."""
    max_body_bytes: int = MAX_BODY_BYTES
    request_timeout: float = 30.0
    """The time a client has to send a request's head (an idle keep-alive connection, its next
    request), then again to send its body, each in all rather than per read; also the socket
    timeout for writing a response."""
    workers: int = 16
    """Requests answered at once (a client that sends nothing holds no worker)."""
    max_connections: int = 1024
    """Open connections; past it a new one is answered 503 at once."""
    max_follow_streams: int = 8
    """``follow=true`` log streams open at once, in all (each holds a worker)."""
    max_follow_per_container: int = 2
    """``follow=true`` log streams open at once on one container."""
    tls_cert_file: str | None = None
    """With ``tls_private_key_file``: serve HTTPS with this certificate (chain), PEM."""
    tls_private_key_file: str | None = None

    def __attrs_post_init__(self) -> None:
        if (self.tls_cert_file is None) != (self.tls_private_key_file is None):
            raise ValueError("TLS needs both tls_cert_file and tls_private_key_file")
        if self.enable_exec and not self.exec_token:
            raise ValueError("exec needs a token: set exec_token when enable_exec is true")
        if self.max_follow_streams >= self.workers:
            raise ValueError("max_follow_streams must leave workers free for other requests")


def exec_command(query: dict[str, list[str]], body: bytes, content_type: str) -> list[str]:
    """The command of an exec request: ``?cmd=`` (one shell-quoted string, or one ``cmd`` per
    argument) or a JSON body ``{"command": [...]}`` / ``{"cmd": "..."}``."""
    command: list[str] = []
    if body.strip():
        if "json" not in content_type and content_type not in ("", "text/plain"):
            raise HTTPError(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE, f"body must be JSON, got {content_type!r}"
            )
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError) as error:
            raise HTTPError(HTTPStatus.BAD_REQUEST, f"body is not valid JSON: {error}") from None
        except RecursionError:
            raise HTTPError(
                HTTPStatus.BAD_REQUEST, "body is not valid JSON: nested too deep"
            ) from None
        if not isinstance(payload, dict):
            raise HTTPError(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
        raw = payload.get("command", payload.get("cmd"))
        if isinstance(raw, str):
            command = _split(raw)
        elif isinstance(raw, list) and all(isinstance(part, str) for part in raw):
            command = list(raw)
        elif raw is not None:
            raise HTTPError(
                HTTPStatus.BAD_REQUEST, "command: must be a list of strings or a string"
            )
    if not command:
        values = query.get("cmd", [])
        command = _split(values[0]) if len(values) == 1 else list(values)
    if not command or not command[0]:
        raise HTTPError(HTTPStatus.BAD_REQUEST, "cmd: a command is required")
    return command


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as error:
        raise HTTPError(HTTPStatus.BAD_REQUEST, f"cmd: {error}") from None


# --- health ------------------------------------------------------------------------------


def health_check_text(name: str, problem: str) -> tuple[bool, str]:
    """One check's answer (``/healthz/<name>``), as the kubelet gives it."""
    if not problem:
        return True, "ok\n"
    return False, f"internal server error: {name} {_one_line(problem)}\n"


def healthz_text(checks: list[tuple[str, str]], *, verbose: bool) -> tuple[bool, str]:
    """``/healthz``: ``ok``, or one ``[+]``/``[-]`` line per check (always when one fails),
    and unlike the kubelet, which withholds it, the reason of each failing check."""
    ok = not any(problem for _, problem in checks)
    if ok and not verbose:
        return True, "ok\n"
    lines = [
        f"[-]{name} {_one_line(problem)}" if problem else f"[+]{name} ok"
        for name, problem in checks
    ]
    lines.append("healthz check passed" if ok else "healthz check failed")
    return ok, "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- node log files -----------------------------------------------------------------------


def resolve_log_path(root: str, relative: str) -> Path:
    """The file or directory ``relative`` names under ``root``; raises ``HTTPError`` for ``..``,
    an absolute path, a NUL byte, a symlink that leads outside ``root`` or a missing file."""
    if "\0" in relative:
        raise HTTPError(HTTPStatus.BAD_REQUEST, "path: NUL byte")
    if len(relative) > MAX_LOG_PATH or any(len(p) > MAX_LOG_NAME for p in relative.split("/")):
        raise HTTPError(
            HTTPStatus.BAD_REQUEST,
            f"path: longer than {MAX_LOG_PATH} characters or a name longer than {MAX_LOG_NAME}",
        )
    if relative.startswith("/") or relative.startswith("\\"):
        raise HTTPError(HTTPStatus.FORBIDDEN, "path: absolute paths are not allowed")
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if ".." in parts or any(part.startswith("..\\") or "\\..\\" in part for part in parts):
        raise HTTPError(HTTPStatus.FORBIDDEN, "path: '..' is not allowed")
    base = Path(os.path.realpath(root))
    try:
        target = Path(os.path.realpath(base.joinpath(*parts)))
        if target != base and base not in target.parents:
            raise HTTPError(HTTPStatus.FORBIDDEN, "path: leads outside the log directory")
        if not target.exists():
            raise HTTPError(HTTPStatus.NOT_FOUND, f"no log file {relative!r}")
    except OSError as error:  # a name the file system cannot take (too long, ...)
        raise HTTPError(HTTPStatus.BAD_REQUEST, f"path: {error.strerror or error}") from None
    return target


def list_directory(path: Path) -> str:
    lines = []
    for child in sorted(path.iterdir(), key=lambda p: p.name):
        try:
            is_dir = stat.S_ISDIR(child.stat().st_mode)
        except OSError:
            continue
        lines.append(child.name + ("/" if is_dir else ""))
    return "".join(line + "\n" for line in lines)


# --- the handler --------------------------------------------------------------------------


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


Route = Callable[["_Handler", list[str], dict[str, list[str]]], None]


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


class _Handler(BaseHTTPRequestHandler):
    """Answers exactly one request; the server hands a kept-alive connection back to its
    selector until the next one arrives."""

    protocol_version = "HTTP/1.1"
    server_version = "kubecore"
    server: _Server  # type: ignore[assignment]

    def __init__(
        self, sock: socket.socket, address: Any, server: _Server, reader: RequestReader
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
            query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
            segments = split.path.split("/")[1:]
            self._route(split.path, segments, query)
        except HTTPError as error:
            self._fail(error)
        except BadParameter as error:
            self._fail(error_for(error))
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:
            logger.exception("request %s %s failed", self.command, self.path)
            self._fail(HTTPError(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error (see the log)"))

    def _route(self, path: str, segments: list[str], query: dict[str, list[str]]) -> None:
        head = segments[0] if segments else ""
        api = self.server.api
        if api is not None and head in api.heads:
            api.handle(self, segments, query)
            return
        routes: dict[str, tuple[str, Route]] = {
            "healthz": ("GET", _Handler._healthz),
            "pods": ("GET", _Handler._pods),
            "containerLogs": ("GET", _Handler._container_logs),
            "run": ("POST", _Handler._run),
            "logs": ("GET", _Handler._logs),
            "metrics": ("GET", _Handler._metrics),
            "stats": ("GET", _Handler._stats),
        }
        if head not in routes:
            raise HTTPError(HTTPStatus.NOT_FOUND, f"no such path {path!r}")
        method, route = routes[head]
        allowed = {method, "HEAD"} if method == "GET" else {method}
        if self.command not in allowed:
            raise HTTPError(
                HTTPStatus.METHOD_NOT_ALLOWED,
                f"{self.command} is not allowed on {path}; use {method}",
                {"Allow": ", ".join(sorted(allowed))},
            )
        if head != "run":
            self._refuse_body()
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

    # --- endpoints

    def _healthz(self, rest: list[str], query: dict[str, list[str]]) -> None:
        try:
            checks = self.server.kubelet.health_checks()
        except Exception as error:
            checks = [("healthz", f"failed: {error}")]
        if rest and rest != [""]:
            name = urllib.parse.unquote("/".join(rest))
            found = [problem for check, problem in checks if check == name]
            if not found:
                raise HTTPError(HTTPStatus.NOT_FOUND, f"no health check {name!r}")
            ok, text = health_check_text(name, found[0])
        else:
            ok, text = healthz_text(checks, verbose="verbose" in query)
        code = HTTPStatus.OK if ok else HTTPStatus.INTERNAL_SERVER_ERROR
        self._send_bytes(code, text.encode(), TEXT_TYPE)

    def _pods(self, rest: list[str], query: dict[str, list[str]]) -> None:
        kubelet = self.server.kubelet
        if not rest or rest == [""]:
            items = [pod_to_dict(pod) for pod in kubelet.pods()]
            self._send_json({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
            return
        if len(rest) != 2 or not all(rest):
            raise HTTPError(HTTPStatus.NOT_FOUND, "use /pods/{namespace}/{name}")
        pod = kubelet.get_pod(rest[0], rest[1])
        if pod is None:
            raise HTTPError(HTTPStatus.NOT_FOUND, f"pod {rest[0]}/{rest[1]} not found")
        self._send_json(pod_to_dict(pod))

    def _target(self, rest: list[str], usage: str) -> tuple[str, str, str]:
        if len(rest) != 3 or not all(rest):
            raise HTTPError(HTTPStatus.NOT_FOUND, f"use {usage}")
        namespace, pod_name, container = rest
        pod = self.server.kubelet.get_pod(namespace, pod_name)
        if pod is None:
            raise HTTPError(HTTPStatus.NOT_FOUND, f"pod {namespace}/{pod_name} not found")
        names = {c.name for c in pod.spec.containers + pod.spec.init_containers}
        if container not in names:
            raise HTTPError(
                HTTPStatus.NOT_FOUND,
                f"container {container!r} not found in pod {namespace}/{pod_name}",
            )
        return namespace, pod_name, container

    def _container_logs(self, rest: list[str], query: dict[str, list[str]]) -> None:
        namespace, pod, container = self._target(
            rest, "/containerLogs/{namespace}/{pod}/{container}"
        )
        try:
            options = parse_log_options(query)
        except KubecoreError as error:
            raise error_for(error) from None
        if options.follow:
            with self.server.follow_slot((namespace, pod, container)):
                self._send_logs(namespace, pod, container, options)
        else:
            self._send_logs(namespace, pod, container, options)

    def _send_logs(self, namespace: str, pod: str, container: str, options: LogOptions) -> None:
        try:
            lines = iter(
                self.server.kubelet.container_logs(namespace, pod, container, **options.kwargs())
            )
            # The first read may fail (no container yet): fail before the headers go out.
            first = next(lines, b"")
        except KubecoreError as error:
            raise error_for(error) from None
        self._stream(first, lines, TEXT_TYPE)

    def _run(self, rest: list[str], query: dict[str, list[str]]) -> None:
        config = self.server.config
        if not config.enable_exec:
            raise HTTPError(HTTPStatus.FORBIDDEN, "exec is disabled on this node")
        require_bearer(self.headers.get("Authorization") or "", config.exec_token)
        body = self._read_body()
        namespace, pod, container = self._target(rest, "/run/{namespace}/{pod}/{container}")
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        command = exec_command(query, body, content_type)
        timeout = query_seconds(query, "timeout", 10.0, MAX_EXEC_TIMEOUT)
        logger.info(
            "exec in %s/%s/%s: %s",
            namespace,
            pod,
            container,
            shlex.join(command),
            extra={"namespace": namespace, "pod": pod, "container": container},
        )
        try:
            result = self.server.kubelet.exec(namespace, pod, container, command, timeout=timeout)
        except KubecoreError as error:
            raise error_for(error) from None
        self._send_json(
            {
                "exitCode": result.exit_code,
                "stdout": result.stdout.decode("utf-8", "replace"),
                "stderr": result.stderr.decode("utf-8", "replace"),
            }
        )

    def _logs(self, rest: list[str], query: dict[str, list[str]]) -> None:
        root = self.server.config.log_dir
        if root is None:
            raise HTTPError(HTTPStatus.NOT_FOUND, "node logs are not served by this node")
        # Take the raw path so that '//etc' (an absolute path) is seen as such.
        raw = urllib.parse.urlsplit(self.path).path
        relative = urllib.parse.unquote(raw[len("/logs") :])
        if relative == "":
            raise HTTPError(HTTPStatus.MOVED_PERMANENTLY, "use /logs/", {"Location": "/logs/"})
        target = resolve_log_path(root, relative[1:])
        if target.is_dir():
            self._send_bytes(HTTPStatus.OK, list_directory(target).encode(), TEXT_TYPE)
            return
        try:
            # Non-blocking: opening a FIFO must not wait for a writer; it is refused below.
            fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as error:
            raise HTTPError(
                HTTPStatus.FORBIDDEN, f"cannot read {relative[1:]!r}: {error.strerror}"
            ) from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise HTTPError(HTTPStatus.FORBIDDEN, f"{relative[1:]!r} is not a regular file")
        os.set_blocking(fd, True)
        with open(fd, "rb") as handle:
            size = info.st_size
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", TEXT_TYPE)
            self.send_header("Content-Length", str(size))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if self.command == "HEAD":
                return
            remaining = size
            while remaining > 0:
                block = handle.read(min(65536, remaining))
                if not block:
                    break
                self.wfile.write(block)
                remaining -= len(block)
            if remaining:  # the file shrank: the declared length cannot be met
                self.close_connection = True

    def _metrics(self, rest: list[str], query: dict[str, list[str]]) -> None:
        metrics = self.server.kubelet.metrics
        renders = {
            "": metrics.render,
            "probes": metrics.render_probes,
            "resource": metrics.render_resource,
        }
        render = renders.get("/".join(rest))
        if render is None:
            raise HTTPError(HTTPStatus.NOT_FOUND, f"no such path {self.path!r}")
        self._send_bytes(HTTPStatus.OK, render(), CONTENT_TYPE_LATEST)

    def _stats(self, rest: list[str], query: dict[str, list[str]]) -> None:
        if rest != ["summary"]:
            raise HTTPError(HTTPStatus.NOT_FOUND, "use /stats/summary")
        try:
            summary = self.server.kubelet.stats_summary()
        except KubecoreError as error:
            raise error_for(error) from None
        self._send_json(summary)


class _Server:
    """What the handler sees as ``self.server``, on a ``BoundedServer``."""

    def __init__(
        self, kubelet: ServedKubelet, config: ServerConfig, api: KubeApi | None = None
    ) -> None:
        self.kubelet = kubelet
        self.config = config
        self.api = api
        self.stopping = threading.Event()
        self._follows: dict[tuple[str, str, str], int] = {}
        self._follows_lock = threading.Lock()
        limits = Limits(
            workers=config.workers,
            max_connections=config.max_connections,
            head_timeout=config.request_timeout,
            body_timeout=config.request_timeout,
            max_body_bytes=config.max_body_bytes,
        )
        if config.tls_cert_file and config.tls_private_key_file:
            from kubecore._api.server import TLSBoundedServer, tls_context

            context = tls_context(config.tls_cert_file, config.tls_private_key_file)
            self.bounded: BoundedServer = TLSBoundedServer(
                config.address, config.port, self._handle, limits, context, self._admit
            )
        else:
            self.bounded = BoundedServer(
                config.address, config.port, self._handle, limits, self._admit
            )
        self.server_address = self.bounded.server_address

    def _handle(self, sock: socket.socket, address: Any, reader: RequestReader) -> bool:
        handler = _Handler(sock, address, self, reader)
        return not handler.close_connection

    def _admit(self, head: RequestHead, sock: socket.socket) -> bool:
        """Whether a request's body may be read: only an authenticated request's. The others
        are answered (401, 403, 404, 405) from their head, as the handler checks the token
        before it reads a body."""
        path = urllib.parse.urlsplit(head.target).path
        first = path.split("/")[1] if path.count("/") else ""
        authorization = head.header("authorization")
        if self.api is not None and first in self.api.heads:
            tls = isinstance(sock, ssl.SSLSocket)
            return self.api.authenticated(authorization, head.method, tls)
        if first == "run" and self.config.enable_exec:
            return check_bearer(authorization, self.config.exec_token) is Credentials.VALID
        return False

    @contextlib.contextmanager
    def follow_slot(self, container: tuple[str, str, str]) -> Iterator[None]:
        """Hold one of the few ``follow`` streams (each keeps a worker busy), or answer 429."""
        config = self.config
        with self._follows_lock:
            total = sum(self._follows.values())
            here = self._follows.get(container, 0)
            if total >= config.max_follow_streams or here >= config.max_follow_per_container:
                limit = (
                    f"{config.max_follow_per_container} on one container"
                    if here >= config.max_follow_per_container
                    else f"{config.max_follow_streams} in all"
                )
                raise HTTPError(
                    HTTPStatus.TOO_MANY_REQUESTS,
                    f"too many log streams being followed (at most {limit})",
                    {"Retry-After": "5"},
                )
            self._follows[container] = here + 1
        try:
            yield
        finally:
            with self._follows_lock:
                left = self._follows[container] - 1
                if left:
                    self._follows[container] = left
                else:
                    del self._follows[container]


class KubeletServer:
    """The kubelet HTTP API for one agent. ``start()`` serves in a background thread; ``stop()``
    closes the listening socket and ends open log streams. Also a context manager."""

    def __init__(
        self,
        kubelet: ServedKubelet,
        config: ServerConfig | None = None,
        *,
        api: KubeApi | None = None,
    ) -> None:
        self._config = config or ServerConfig()
        self._server = _Server(kubelet, self._config, api)
        self._thread: threading.Thread | None = None

    @property
    def config(self) -> ServerConfig:
        return self._config

    @property
    def address(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = self.address
        if ":" in host:
            host = f"[{host}]"
        scheme = "https" if self._config.tls_cert_file else "http"
        return f"{scheme}://{host}:{self.port}"

    def start(self) -> KubeletServer:
        if self._thread is not None:
            raise RuntimeError("the server is already running")
        self._thread = threading.Thread(
            target=self._server.bounded.serve_forever, name="kubecore-http", daemon=True
        )
        self._thread.start()
        logger.info("kubelet API listening on %s", self.url, extra={"url": self.url})
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._server.stopping.set()
        if self._thread is not None:
            self._server.bounded.shutdown(timeout)
            self._thread.join(timeout)
            self._thread = None
        self._server.bounded.server_close()

    def __enter__(self) -> KubeletServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(
    kubelet: ServedKubelet,
    *,
    address: str = DEFAULT_ADDRESS,
    port: int = DEFAULT_PORT,
    enable_exec: bool = False,
    exec_token: str = "",
    log_dir: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    request_timeout: float = 30.0,
) -> KubeletServer:
    """Start the kubelet HTTP API for ``kubelet`` and return the running server."""
    config = ServerConfig(
        address=address,
        port=port,
        enable_exec=enable_exec,
        exec_token=exec_token,
        log_dir=log_dir,
        max_body_bytes=max_body_bytes,
        request_timeout=request_timeout,
    )
    return KubeletServer(kubelet, config).start()
