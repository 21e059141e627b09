"""``pods/<name>/log``: a container's output over the API, with the query ``kubectl logs``
sends (``container``, ``tailLines``, ``follow``, ``previous``, ``sinceSeconds``, ``sinceTime``,
``timestamps``, ``limitBytes``; ``kubecore._observability.logs``)."""

from __future__ import annotations

from typing import Any

from kubecore._api.errors import bad_request
from kubecore._api.request import TEXT_TYPE, Exchange, Request
from kubecore._apimachinery.rules import error_for
from kubecore._contract.errors import KubecoreError
from kubecore._observability.logs import LogOptions, LogReader, parse_log_options


def serve_log(
    exchange: Exchange, request: Request, streams: LogReader, pod: dict[str, Any]
) -> None:
    """Answer ``pods/<name>/log`` for ``pod`` (as the API shows it)."""
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    container = request.param("container") or _only_container(pod)
    spec = pod.get("spec") or {}
    kinds = ("containers", "initContainers", "ephemeralContainers")
    names = [c["name"] for kind in kinds for c in spec.get(kind, [])]
    if container not in names:
        raise bad_request(f"container {container} is not valid for pod {name}")
    try:
        options = parse_log_options(request.query)
    except KubecoreError as error:
        raise error_for(error) from None
    if not options.follow:
        _send_log(exchange, streams, (namespace, name, container), options)
        return
    # The slot is taken before the runtime's stream is opened: a refused follow opens none.
    authorization = exchange.headers.get("Authorization") or ""
    with exchange.server.follow_slot((namespace, name, container), authorization):
        _send_log(exchange, streams, (namespace, name, container), options)


def _send_log(
    exchange: Exchange, streams: LogReader, target: tuple[str, str, str], options: LogOptions
) -> None:
    try:
        lines = iter(streams.logs(*target, **options.kwargs()))
        # The first read may fail: fail before the headers go out.
        first = next(lines, b"")
    except KubecoreError as error:
        raise error_for(error) from None
    exchange._stream(first, lines, TEXT_TYPE)


def _only_container(pod: dict[str, Any]) -> str:
    containers: list[str] = [c["name"] for c in (pod.get("spec") or {}).get("containers", [])]
    if len(containers) == 1:
        return containers[0]
    name = pod["metadata"]["name"]
    raise bad_request(
        f"a container name must be specified for pod {name}, choose one of: "
        f"[{' '.join(containers)}]"
    )
