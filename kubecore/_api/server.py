"""The node's Kubernetes API: ``KubeApi`` authenticates and routes each request under
``/version``, ``/api``, ``/apis`` and ``/openapi`` (served by the kubelet HTTP server,
``kubecore._http.server``), and ``attach_api`` builds it for an agent, its store read back.

Pods written over the API belong to one in-process source (a ``StaticSource`` named
``kube-apiserver``); pods of other sources (manifest files, a URL) are read-only here and a write
to one is refused with 403, as the API server refuses to change a static pod's mirror pod. Every
change written over the API is on disk (``kubecore._api.store``, under ``<root-dir>/api``) before
it is applied and answered, and ``attach_api`` reads the store back as the source's first state.
"""

from __future__ import annotations

import logging
import os
import ssl
from http import HTTPStatus
from typing import Any

import attrs

from kubecore._api import metrics_api
from kubecore._api.auth import Gate, is_loopback, read_token_file
from kubecore._api.discovery import (
    API_GROUPS,
    API_HEADS,
    API_RESOURCES,
    api_versions,
    serves,
    version,
)
from kubecore._api.ephemeral import SUBRESOURCE as EPHEMERAL
from kubecore._api.ephemeral import EphemeralContainers
from kubecore._api.errors import ApiError, not_allowed
from kubecore._api.events import EventsAndNamespaces
from kubecore._api.kubelet import ApiKubelet
from kubecore._api.nodes import NodeReads
from kubecore._api.objects import OBJECT_RESOURCES, ObjectResource
from kubecore._api.openapi import openapi_document
from kubecore._api.pod_portforward import serve_pod_port_forward
from kubecore._api.pod_resize import SUBRESOURCE as RESIZE
from kubecore._api.pod_resize import PodResize
from kubecore._api.pod_streams import REMOTE_COMMANDS, serve_pod_stream
from kubecore._api.pods import PodResource
from kubecore._api.registry import Registry
from kubecore._api.request import JSON_TYPE, READS, Exchange, Request, send_json
from kubecore._api.resources import Resource
from kubecore._api.storage import Storage
from kubecore._api.store import STORE_DIR, ApiStore, StoredState
from kubecore._apimachinery.rules import HTTPError, error_for
from kubecore._config.static import StaticSource
from kubecore._config.updates import SourceName
from kubecore._contract.errors import BadParameter

logger = logging.getLogger(__name__)

API_SOURCE_NAME: str = SourceName.KUBE_APISERVER.value
NODE_WRITES = ("PATCH", "PUT")
"""How the Node is written (its ``spec.unschedulable`` only: ``kubectl cordon``)."""


@attrs.frozen
class ApiServerConfig:
    """How the Kubernetes API is served (``attach_api``); TLS is ``ServerConfig``'s, as the whole
    port is served over it."""

    token_file: str | None = None
    """A file holding the bearer token every request (but ``/healthz``, ``/livez``,
    ``/readyz``) must carry, reads too unless ``anonymous_reads`` (``kubecore._api.auth``)."""
    anonymous_reads: bool = False
    """Let reads of the read-only endpoints (the API's GETs, ``/pods``, ``/containerLogs``,
    ``/logs/``, ``/stats``, ``/metrics``) pass without the token."""
    source_name: str = API_SOURCE_NAME
    """The source that owns pods created over the API."""


class KubeApi:
    """The Kubernetes API of one node; ``handle`` answers one request (see the module doc)."""

    heads = API_HEADS

    def __init__(
        self,
        kubelet: ApiKubelet,
        source: StaticSource,
        *,
        token: str | None,
        anonymous_reads: bool,
        store: ApiStore | None = None,
    ) -> None:
        self.kubelet = kubelet
        self.metrics = metrics_api.MetricsApi(kubelet)
        self.source = source
        objects = [
            ObjectResource(kind, kubelet.views.objects, source, kubelet.clock.now)
            for kind in OBJECT_RESOURCES.values()
        ]
        self.storage = Storage(store, source, kubelet.update, objects)
        self.pods = PodResource(kubelet, source, self.storage)
        self.gate = Gate(token, anonymous_reads=anonymous_reads)
        resources: list[Resource[Any, Any]] = [self.pods, *objects]
        self.registries: dict[str, Registry[Any, Any]] = {
            resource.name: Registry(resource, self.storage, self.gate, kubelet.clock.now)
            for resource in resources
        }
        self.reads = EventsAndNamespaces(kubelet, self.pods)
        self.ephemeral = EphemeralContainers(self.pods, self.storage)
        self.resize = PodResize(self.pods, self.storage)
        self.nodes = NodeReads(kubelet, kubelet.clock.now(), self.pods.version)

    @property
    def store(self) -> ApiStore | None:
        """Where every change written over the API is kept (None: in memory only)."""
        return self.storage.store

    def restore(self, state: StoredState) -> None:
        """Take ``state`` (what the store holds) as the source's whole state."""
        self.storage.restore(state)
        self.pods.deletions.resume(state.deleting, self.kubelet.clock.now())

    # --- entry

    def handle(self, exchange: Exchange, segments: list[str], query: dict[str, list[str]]) -> None:
        request = Request(
            exchange.command,
            tuple(s for s in segments if s),
            query,
            exchange.headers.get("Accept") or "",
        )
        try:
            if request.method in READS:
                exchange._refuse_body()
            tls = isinstance(exchange.connection, ssl.SSLSocket)
            self.gate.authenticate(
                exchange.headers.get("Authorization") or "", request.method, tls, segments[0]
            )
            request.check_list_options()
            self._route(exchange, request)
        except (HTTPError, BadParameter) as failure:
            error = failure if isinstance(failure, HTTPError) else error_for(failure)
            # The request's body may be unread: the connection cannot serve another request.
            exchange.close_connection = True
            exchange._send_bytes(error.code, error.body(), JSON_TYPE, error.headers)

    def _route(self, exchange: Exchange, request: Request) -> None:
        if request.method in NODE_WRITES and request.segments[:3] == ("api", "v1", "nodes"):
            self._node_write(exchange, request)
            return
        s = request.segments
        registry = len(s) >= 5 and s[:3] == ("api", "v1", "namespaces") and s[4] in self.registries
        if request.method not in READS and serves(s) and not registry:
            raise not_allowed(f"{request.method} is not supported on /{'/'.join(s)}")
        if s in (("version",), ("version", "")):
            send_json(exchange, version())
        elif s == ("api",):
            send_json(exchange, api_versions(exchange.headers.get("Host") or ""))
        elif s == ("apis",):
            send_json(exchange, API_GROUPS)
        elif s == ("api", "v1"):
            send_json(exchange, API_RESOURCES)
        elif self.nodes.leases.serves(s):
            self.nodes.leases.handle(exchange, request, s[2:], self.kubelet.clock.now)
        elif s[:1] == ("openapi",):
            body, kind = openapi_document(s[1:], exchange.headers.get("Accept") or "")
            exchange._send_bytes(HTTPStatus.OK, body, kind)
        elif s[:2] == ("apis", metrics_api.GROUP):
            self.metrics.handle(exchange, request, s[2:])
        elif s[:2] == ("api", "v1") and len(s) >= 3:
            self._core(exchange, request, s[2:])
        else:
            raise ApiError(
                HTTPStatus.NOT_FOUND, "NotFound", f"the server could not find /{'/'.join(s)}"
            )

    def _core(self, exchange: Exchange, request: Request, rest: tuple[str, ...]) -> None:
        if rest == ("events",):
            self.reads.list_events(exchange, request, None)
        elif rest == ("namespaces",):
            self.reads.list_namespaces(exchange, request)
        elif rest[0] == "nodes" and len(rest) <= 2:
            self._nodes(exchange, request, rest[1:])
        elif len(rest) == 1 and rest[0] in self.registries:
            self.registries[rest[0]].handle(exchange, request, None, ())
        elif rest[0] == "namespaces" and len(rest) == 2:
            self.reads.get_namespace(exchange, rest[1])
        elif rest[0] == "namespaces" and len(rest) >= 3:
            self._namespaced(exchange, request, rest[1], rest[2:])
        else:
            raise ApiError(
                HTTPStatus.NOT_FOUND,
                "NotFound",
                f"the server could not find /api/v1/{'/'.join(rest)}",
            )

    def _nodes(self, exchange: Exchange, request: Request, name: tuple[str, ...]) -> None:
        if request.flag("watch"):
            self.nodes.watch_nodes(exchange, request, self.kubelet.clock.now)
            return
        now = self.kubelet.clock.now()
        if name:
            self.nodes.get_node(exchange, request, name[0], now)
        else:
            self.nodes.list_nodes(exchange, request, now)

    def _node_write(self, exchange: Exchange, request: Request) -> None:
        """PATCH or PUT of ``/api/v1/nodes/{name}``: its ``spec.unschedulable`` only."""
        name = request.segments[3:]
        if len(name) != 1:
            raise not_allowed(f"{request.method} is not supported on /{'/'.join(request.segments)}")
        self.nodes.write_node(exchange, request, name[0], self.kubelet.clock.now())

    def _namespaced(
        self, exchange: Exchange, request: Request, namespace: str, rest: tuple[str, ...]
    ) -> None:
        kind = rest[0]
        if kind == "events" and len(rest) == 1:
            self.reads.list_events(exchange, request, namespace)
        elif kind == "events" and len(rest) == 2:
            self.reads.get_event(exchange, namespace, rest[1])
        elif kind == "pods" and rest[2:] == (EPHEMERAL,):
            self.ephemeral.handle(exchange, request, namespace, rest[1])
        elif kind == "pods" and rest[2:] == (RESIZE,):
            self.resize.handle(exchange, request, namespace, rest[1])
        elif kind == "pods" and len(rest) == 3 and rest[2] in (*REMOTE_COMMANDS, "portforward"):
            self._remote_command(exchange, request, namespace, rest[1], rest[2])
        elif kind in self.registries:
            self.registries[kind].handle(exchange, request, namespace, rest[1:])
        else:
            raise ApiError(
                HTTPStatus.NOT_FOUND,
                "NotFound",
                f"the server could not find the requested resource ({kind} are not served)",
            )

    def _remote_command(
        self, exchange: Exchange, request: Request, namespace: str, name: str, what: str
    ) -> None:
        """``pods/<name>/exec``, ``/attach`` and ``/portforward`` (GET or POST): they reach into
        the pod, so they need the token as writes do, on loopback too."""
        if request.method not in ("GET", "POST"):
            raise not_allowed(f"{request.method} is not supported on pods/{what}")
        self.gate.require_token(
            exchange.headers.get("Authorization") or "",
            f"Unauthorized: pods/{what} needs a bearer token, as writes do"
            + ("" if self.gate.has_token else "; start the agent with --api-token-file")
            + (
                ""
                if isinstance(exchange.connection, ssl.SSLSocket)
                else "; kubectl sends its token only over HTTPS: serve TLS (--tls-cert-file, "
                "--tls-private-key-file) and use a kubeconfig with the CA and the token"
            ),
        )
        pod = self.pods.find(namespace, name)
        if what == "portforward":
            serve_pod_port_forward(exchange, request.query, self.kubelet.streams, namespace, name)
        else:
            serve_pod_stream(exchange, request, self.kubelet.streams, pod, what)


def attach_api(
    kubelet: ApiKubelet, config: ApiServerConfig, *, address: str, tls: bool = False
) -> KubeApi:
    """The Kubernetes API for ``kubelet``, served on ``address``: its in-process source delivers
    straight to the agent, and reports at once what the API's store under
    ``<root-dir>/api`` holds (nothing on a new root directory): the pods, ConfigMaps and Secrets
    written over the API before a restart, with their uids and creation times, so their
    containers are adopted, not replaced. Call it before ``kubelet.start()``. Pass the result to
    ``KubeletServer(..., api=...)``; ``tls`` says whether that server has a certificate.
    Raises ``ValueError`` for a non-loopback address without a token file or without TLS, and
    ``OSError`` for an unreadable token file. Off loopback, ``config.anonymous_reads`` is
    logged as a warning: anyone who reaches the port reads the pods, their logs and metrics."""
    token = read_token_file(config.token_file) if config.token_file else None
    loopback = is_loopback(address)
    if not loopback and token is None:
        raise ValueError(
            f"serving the Kubernetes API on {address} needs --api-token-file "
            "(only 127.0.0.1 / ::1 may be read without a token)"
        )
    if not loopback and not tls:
        raise ValueError(
            f"serving the Kubernetes API on {address} needs --tls-cert-file and "
            "--tls-private-key-file (a token must not cross the network in clear text)"
        )
    store = ApiStore(os.path.join(kubelet.root_dir, STORE_DIR))
    source = StaticSource(name=config.source_name, sink=kubelet.update)  # silent until restored
    if config.anonymous_reads and not loopback:
        logger.warning(
            "anonymous reads are served on %s: anyone who reaches it reads the pods (their "
            "environment too), container and node logs, stats and metrics without a token",
            address,
        )
    api = KubeApi(kubelet, source, token=token, anonymous_reads=config.anonymous_reads, store=store)
    api.restore(store.load())
    return api
