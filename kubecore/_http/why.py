"""``/why/{namespace}/{name}``: why the pod is where it is (``Kubelet.explain``), as JSON."""

from __future__ import annotations

from http import HTTPStatus

from kubecore._apimachinery.rules import HTTPError
from kubecore._http.handler import Handler


def why(handler: Handler, rest: list[str], query: dict[str, list[str]]) -> None:
    if len(rest) != 2 or not all(rest):
        raise HTTPError(HTTPStatus.NOT_FOUND, "use /why/{namespace}/{name}")
    kubelet = handler.server.kubelet
    pod = kubelet.get_pod(rest[0], rest[1])
    document = kubelet.explain(pod.uid) if pod is not None else None
    if document is None:
        raise HTTPError(HTTPStatus.NOT_FOUND, f"pod {rest[0]}/{rest[1]} not found")
    handler._send_json(document)
