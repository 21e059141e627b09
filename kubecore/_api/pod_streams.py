"""``pods/<name>/exec`` and ``pods/<name>/attach``: ``kubectl exec``, ``attach`` and ``cp``
over the API, served as sessions of ``kubecore._streaming.remotecommand`` (WebSocket). The
container is the one the query names, else the pod's ``kubectl.kubernetes.io/default-container``
annotation, else its first container; one the pod does not have is a 400, as the API server
answers it."""

from __future__ import annotations

from typing import Any

from kubecore._api.errors import bad_request
from kubecore._api.request import Exchange, Request
from kubecore._contract.streaming import StreamSession
from kubecore._streaming.remotecommand import (
    SessionOpener,
    open_stream,
    serve_remote_command,
    stream_options,
)

DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
REMOTE_COMMANDS = frozenset({"exec", "attach"})
"""The pod subresources served here."""


def default_container(pod: dict[str, Any]) -> str:
    """The container a request that names none goes to."""
    annotations = pod.get("metadata", {}).get("annotations") or {}
    named = annotations.get(DEFAULT_CONTAINER_ANNOTATION)
    if named:
        return str(named)
    containers = (pod.get("spec") or {}).get("containers") or []
    return str(containers[0]["name"]) if containers else ""


def container_names(pod: dict[str, Any]) -> list[str]:
    """Every container of the pod a session may reach: app, init and ephemeral ones."""
    spec = pod.get("spec") or {}
    kinds = ("containers", "initContainers", "ephemeralContainers")
    return [c["name"] for kind in kinds for c in spec.get(kind) or []]


def serve_pod_stream(
    exchange: Exchange, request: Request, streams: SessionOpener, pod: dict[str, Any], what: str
) -> None:
    """Answer ``pods/<name>/<what>`` for ``pod`` (as the API shows it)."""
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    options = stream_options(request.query, is_exec=what == "exec")
    container = options.container or default_container(pod)
    if container not in container_names(pod):
        raise bad_request(f"container {container} is not valid for pod {name}")
    target = (namespace, name, container)

    def open_session() -> StreamSession:
        return open_stream(streams, target, options, what)

    serve_remote_command(exchange, exchange.server, options, open_session, what=what)
