"""What the node measures: ``/metrics`` (the kubelet's ``kubelet_*`` metrics and kubecore's
own), ``/metrics/probes`` (``prober_*``), ``/metrics/resource`` (node, pod and container CPU and
memory), all Prometheus text; and ``/stats/summary``, the Summary API document (node, pods,
containers, volumes)."""

from __future__ import annotations

from http import HTTPStatus

from prometheus_client import CONTENT_TYPE_LATEST

from kubecore._apimachinery.rules import HTTPError, error_for
from kubecore._contract.errors import KubecoreError
from kubecore._http.handler import Handler


def metrics(handler: Handler, rest: list[str], query: dict[str, list[str]]) -> None:
    measured = handler.server.kubelet.metrics
    renders = {
        "": measured.render,
        "probes": measured.render_probes,
        "resource": measured.render_resource,
    }
    render = renders.get("/".join(rest))
    if render is None:
        raise HTTPError(HTTPStatus.NOT_FOUND, f"no such path {handler.path!r}")
    handler._send_bytes(HTTPStatus.OK, render(), CONTENT_TYPE_LATEST)


def stats(handler: Handler, rest: list[str], query: dict[str, list[str]]) -> None:
    if rest != ["summary"]:
        raise HTTPError(HTTPStatus.NOT_FOUND, "use /stats/summary")
    try:
        summary = handler.server.kubelet.views.stats_summary()
    except KubecoreError as error:
        raise error_for(error) from None
    handler._send_json(summary)
