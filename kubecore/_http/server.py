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
* ``/exec/{namespace}/{pod}/{container}`` and ``/attach/{namespace}/{pod}/{container}``
  (WebSocket, off unless ``enable_exec``, with the ``/run`` token): ``kubectl exec`` and
  ``attach`` sessions, ``?command=...`` repeated, ``input``/``stdin``, ``output``/``stdout``,
  ``error``/``stderr``, ``tty`` (``kubecore._streaming.remotecommand``); at most
  ``max_stream_sessions`` at once.
* ``/portForward/{namespace}/{pod}`` (GET: WebSocket, POST: SPDY upgrade; off unless
  ``enable_exec``, with its token): ``kubectl port-forward``'s session
  (``kubecore._http.port_forward``).
* ``/logs/`` and ``/logs/{path}``: node log files under ``log_dir``, never outside it, and only
  those every user of the node may read (``kubecore._http.node_logs``).
* ``/metrics`` (the kubelet's ``kubelet_*`` metrics and kubecore's own), ``/metrics/probes``
  (``prober_*``), ``/metrics/resource`` (node, pod and container CPU and memory): Prometheus text.
* ``/stats/summary``: the Summary API document (node, pods, containers, volumes).
* ``/why/{namespace}/{name}``: why the pod is where it is (``Kubelet.explain``).
* ``/version``, ``/api``, ``/apis``, ``/openapi``: the node's Kubernetes API for ``kubectl``, when
  ``KubeletServer`` is given one (``kubecore._api.server.attach_api``).

With ``tls_cert_file`` and ``tls_private_key_file`` every endpoint is served over TLS.

With the Kubernetes API's token, every endpoint but ``/healthz`` needs it, reads too unless
anonymous reads are allowed; a plain-HTTP request must name the node in ``Host``
(``kubecore._api.auth``, checked before the query or the body is read).

Errors are answered as a v1 ``Status`` JSON object with a reason, never with a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, NoReturn

from kubecore._api.auth import OPEN_GATE, Gate
from kubecore._apimachinery.rules import Credentials, HTTPError, check_bearer
from kubecore._http.budget import Budget
from kubecore._http.config import ServedKubelet, ServerConfig
from kubecore._http.handler import Handler, Route
from kubecore._http.health import healthz
from kubecore._http.metrics import metrics, stats
from kubecore._http.node_logs import node_logs
from kubecore._http.pods import container_logs, pods
from kubecore._http.port_forward import port_forward
from kubecore._http.run import run
from kubecore._http.serving import (
    DEFAULT_ADDRESS,
    DEFAULT_PORT,
    BoundedServer,
    Limits,
    RequestHead,
    RequestReader,
)
from kubecore._http.streams import attach, exec_session
from kubecore._http.why import why
from kubecore._manifest.documents import MAX_DOCUMENT_BYTES

if TYPE_CHECKING:
    from kubecore._api.server import KubeApi
    from kubecore._streaming.remotecommand import Live

__all__ = ["KubeletServer", "ServerConfig", "serve"]

logger = logging.getLogger(__name__)

ROUTES: Mapping[str, tuple[str, Route]] = {
    "healthz": ("GET", healthz),
    "pods": ("GET", pods),
    "containerLogs": ("GET", container_logs),
    "run": ("POST", run),
    "exec": ("GET", exec_session),
    "attach": ("GET", attach),
    "portForward": ("GET|POST", port_forward),
    "logs": ("GET", node_logs),
    "metrics": ("GET", metrics),
    "stats": ("GET", stats),
    "why": ("GET", why),
}
"""The kubelet's endpoints by the path's first segment, each with the method it answers (or
the methods, separated by ``|``)."""


class _Server:
    """What the handler sees as ``self.server`` (``kubecore._http.handler.Site``), on a
    ``BoundedServer``."""

    routes = ROUTES

    def __init__(
        self, kubelet: ServedKubelet, config: ServerConfig, api: KubeApi | None = None
    ) -> None:
        self.kubelet = kubelet
        self.config = config
        self.api = api
        self.gate: Gate = api.gate if api is not None else OPEN_GATE
        node = api.pods.node_name if api is not None else ""
        self.host_names: tuple[str, ...] = (config.address, node)
        self.stopping = threading.Event()
        self._follows: dict[tuple[str, str, str], int] = {}
        self._follows_lock = threading.Lock()
        self._follow_budget = Budget(config.max_follow_streams, config.max_anonymous_follows)
        self._watch_budget = Budget(config.max_watches, config.max_anonymous_watches)
        self._streams: list[Live] = []
        limits = Limits(
            workers=config.workers,
            max_connections=config.max_connections,
            max_connections_per_client=config.max_connections_per_client,
            health_reserve=config.health_connections,
            head_timeout=config.request_timeout,
            body_timeout=config.request_timeout,
            max_body_bytes=config.max_body_bytes,
        )
        if config.tls_cert_file and config.tls_private_key_file:
            from kubecore._http.tls import TLSBoundedServer, tls_context

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
        handler = Handler(sock, address, self, reader)
        return not handler.close_connection

    def _admit(self, head: RequestHead, sock: socket.socket) -> bool:
        """Whether a request's body may be read: only an authenticated request's. The others
        are answered (401, 403, 404, 405) from their head, as the handler checks the token
        before it reads a body."""
        path = urllib.parse.urlsplit(head.target).path
        first = path.split("/")[1] if path.count("/") else ""
        authorization = head.header("authorization")
        if self.api is not None and first in self.api.heads:
            return self.gate.authenticated(authorization, head.method, first)
        if first in ("run", "exec", "attach") and self.config.enable_exec:
            return check_bearer(authorization, self.config.exec_token) is Credentials.VALID
        return False

    def carries_token(self, authorization: str) -> bool:
        """Whether an ``Authorization`` header carries a token this node accepts: the exec
        token, or the API's (asked as for a write, which anonymous reads never let through)."""
        if self.config.exec_token and (
            check_bearer(authorization, self.config.exec_token) is Credentials.VALID
        ):
            return True
        return self.gate.has_token and self.gate.authenticated(authorization, "POST")

    @contextlib.contextmanager
    def follow_slot(self, container: tuple[str, str, str], authorization: str) -> Iterator[None]:
        """Hold one of the few ``follow`` streams (each keeps a worker busy), or answer 429;
        requests without a token share only ``max_anonymous_follows`` of them."""
        config = self.config
        anonymous = not self.carries_token(authorization)
        with self._follows_lock:
            here = self._follows.get(container, 0)
            if here >= config.max_follow_per_container:
                _too_many(
                    "log streams being followed"
                    f" (at most {config.max_follow_per_container} on one container)"
                )
            refused = self._follow_budget.take(anonymous)
            if refused:
                _too_many(f"log streams being followed ({refused})")
            self._follows[container] = here + 1
        try:
            yield
        finally:
            with self._follows_lock:
                self._follow_budget.give_back(anonymous)
                left = self._follows[container] - 1
                if left:
                    self._follows[container] = left
                else:
                    del self._follows[container]

    @contextlib.contextmanager
    def watch_slot(self, authorization: str) -> Iterator[None]:
        """Hold one of the few watches (each keeps a worker busy), or answer 429; requests
        without a token share only ``max_anonymous_watches`` of them."""
        anonymous = not self.carries_token(authorization)
        with self._follows_lock:
            refused = self._watch_budget.take(anonymous)
        if refused:
            _too_many(f"watches ({refused})")
        try:
            yield
        finally:
            with self._follows_lock:
                self._watch_budget.give_back(anonymous)

    @contextlib.contextmanager
    def stream_slot(self, live: Live) -> Iterator[None]:
        """Hold one of the few exec/attach sessions (each keeps a worker busy), or answer 429
        (503 once the server is stopping); ``end_streams`` ends ``live`` while it is held."""
        limit = self.config.max_stream_sessions
        with self._follows_lock:
            if self.stopping.is_set():
                raise HTTPError(HTTPStatus.SERVICE_UNAVAILABLE, "the server is stopping")
            if len(self._streams) >= limit:
                raise HTTPError(
                    HTTPStatus.TOO_MANY_REQUESTS,
                    f"too many exec, attach and port-forward sessions (at most {limit} at once)",
                    {"Retry-After": "5"},
                )
            self._streams.append(live)
        try:
            yield
        finally:
            with self._follows_lock:
                self._streams.remove(live)

    def end_streams(self) -> None:
        """End every live exec/attach session (the server is stopping)."""
        with self._follows_lock:
            live = list(self._streams)
        for session in live:
            session.end()


def _too_many(what: str) -> NoReturn:
    raise HTTPError(HTTPStatus.TOO_MANY_REQUESTS, f"too many {what}", {"Retry-After": "5"})


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
        """The configuration it was made with."""
        return self._config

    @property
    def address(self) -> str:
        """The address it listens on."""
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        """The port it listens on (the one the system chose when ``port`` was 0)."""
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """Its base URL: ``http://`` or ``https://`` (with TLS), the address and the port."""
        host = self.address
        if ":" in host:
            host = f"[{host}]"
        scheme = "https" if self._config.tls_cert_file else "http"
        return f"{scheme}://{host}:{self.port}"

    def start(self) -> KubeletServer:
        """Serve on a background thread; returns the server. Raises ``RuntimeError`` if it is
        already serving."""
        if self._thread is not None:
            raise RuntimeError("the server is already running")
        self._thread = threading.Thread(
            target=self._server.bounded.serve_forever, name="kubecore-http", daemon=True
        )
        self._thread.start()
        logger.info("kubelet API listening on %s", self.url, extra={"url": self.url})
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving: end the open streams and wait up to ``timeout`` seconds for the requests
        in flight (idempotent)."""
        self._server.stopping.set()
        self._server.end_streams()
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
    max_body_bytes: int = MAX_DOCUMENT_BYTES,
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
