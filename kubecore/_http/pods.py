"""``/pods`` (the desired pods with their status, as a v1 ``PodList``), ``/pods/{namespace}/
{name}`` (one pod) and ``/containerLogs/{namespace}/{pod}/{container}``: the container's output,
with the kubelet's query (``previous``, ``sinceSeconds``, ``sinceTime``, ``limitBytes``,
``timestamps``, ``tailLines``, ``follow``; ``kubecore._observability.logs``); ``follow`` streams
until the client goes away or the container stops. A query the container cannot answer
(``previous`` with no terminated instance, a container waiting to start) is a 400 that says
so."""

from __future__ import annotations

from http import HTTPStatus

from kubecore._apimachinery.rules import HTTPError, error_for
from kubecore._contract.errors import KubecoreError
from kubecore._http.handler import TEXT_TYPE, Handler
from kubecore._manifest import pod_to_dict
from kubecore._observability.logs import LogOptions, parse_log_options


def pods(handler: Handler, rest: list[str], query: dict[str, list[str]]) -> None:
    kubelet = handler.server.kubelet
    if not rest or rest == [""]:
        items = [pod_to_dict(pod) for pod in kubelet.pods()]
        handler._send_json({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
        return
    if len(rest) != 2 or not all(rest):
        raise HTTPError(HTTPStatus.NOT_FOUND, "use /pods/{namespace}/{name}")
    pod = kubelet.get_pod(rest[0], rest[1])
    if pod is None:
        raise HTTPError(HTTPStatus.NOT_FOUND, f"pod {rest[0]}/{rest[1]} not found")
    handler._send_json(pod_to_dict(pod))


def target(handler: Handler, rest: list[str], usage: str) -> tuple[str, str, str]:
    """The (namespace, pod, container) the path names; a 404 when it names none on the node."""
    if len(rest) != 3 or not all(rest):
        raise HTTPError(HTTPStatus.NOT_FOUND, f"use {usage}")
    namespace, pod_name, container = rest
    pod = handler.server.kubelet.get_pod(namespace, pod_name)
    if pod is None:
        raise HTTPError(HTTPStatus.NOT_FOUND, f"pod {namespace}/{pod_name} not found")
    names = {c.name for c in pod.spec.containers + pod.spec.init_containers}
    if container not in names:
        raise HTTPError(
            HTTPStatus.NOT_FOUND,
            f"container {container!r} not found in pod {namespace}/{pod_name}",
        )
    return namespace, pod_name, container


def container_logs(handler: Handler, rest: list[str], query: dict[str, list[str]]) -> None:
    container = target(handler, rest, "/containerLogs/{namespace}/{pod}/{container}")
    try:
        options = parse_log_options(query)
    except KubecoreError as error:
        raise error_for(error) from None
    if options.follow:
        authorization = handler.headers.get("Authorization") or ""
        with handler.server.follow_slot(container, authorization):
            _send_logs(handler, container, options)
    else:
        _send_logs(handler, container, options)


def _send_logs(handler: Handler, container: tuple[str, str, str], options: LogOptions) -> None:
    try:
        lines = iter(handler.server.kubelet.streams.logs(*container, **options.kwargs()))
        # The first read may fail (no container yet): fail before the headers go out.
        first = next(lines, b"")
    except KubecoreError as error:
        raise error_for(error) from None
    handler._stream(first, lines, TEXT_TYPE)
