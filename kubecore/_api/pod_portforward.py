"""``pods/<name>/portforward``: ``kubectl port-forward`` over the node's API, a session on the
pod's ready sandbox (``kubecore._streaming.portforward_http``). It needs the API's token
whatever the method (a session reaches into the pod), and an upgrade (WebSocket or SPDY)."""

from __future__ import annotations

from kubecore._api.errors import bad_request
from kubecore._api.request import Exchange
from kubecore._apimachinery.rules import Query
from kubecore._streaming.portforward_http import (
    PortForwarding,
    connector,
    serve_port_forward,
    wants_port_forward,
)


def serve_pod_port_forward(
    exchange: Exchange, query: Query, streams: PortForwarding, namespace: str, name: str
) -> None:
    if not wants_port_forward(exchange.headers):
        raise bad_request(
            "pods/portforward needs an upgrade: a WebSocket (SPDY/3.1+portforward.k8s.io, "
            "v4.channel.k8s.io, ...) "
            "or Upgrade: SPDY/3.1"
        )
    connect = connector(streams, namespace, name)
    serve_port_forward(exchange, connect, f"{namespace}/{name}", exchange.server, query)
