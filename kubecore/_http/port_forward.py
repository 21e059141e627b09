"""``/portForward/{namespace}/{pod}`` (GET for a WebSocket, POST for a SPDY upgrade; off unless
``enable_exec``): ``kubectl port-forward``'s session on the pod, as the kubelet serves it
(``kubecore._streaming.portforward_http``). Needs ``Authorization: Bearer <token>``, as
``/run``."""

from __future__ import annotations

from http import HTTPStatus

from kubecore._apimachinery.rules import HTTPError, require_bearer
from kubecore._http.handler import Handler
from kubecore._streaming.portforward_http import (
    connector,
    serve_port_forward,
    wants_port_forward,
)


def port_forward(handler: Handler, rest: list[str], query: dict[str, list[str]]) -> None:
    config = handler.server.config
    if not config.enable_exec:
        raise HTTPError(HTTPStatus.FORBIDDEN, "port forwarding is disabled on this node")
    require_bearer(handler.headers.get("Authorization") or "", config.exec_token)
    if len(rest) != 2 or not all(rest):
        raise HTTPError(HTTPStatus.NOT_FOUND, "use /portForward/{namespace}/{pod}")
    if not wants_port_forward(handler.headers):
        raise HTTPError(
            HTTPStatus.BAD_REQUEST,
            "port forwarding needs an upgrade: a WebSocket (SPDY/3.1+portforward.k8s.io, "
            "v4.channel.k8s.io, ...) "
            "or Upgrade: SPDY/3.1",
        )
    namespace, pod = rest
    connect = connector(handler.server.kubelet.streams, namespace, pod)
    serve_port_forward(handler, connect, f"{namespace}/{pod}", handler.server, query)
