"""The kubelet's own ``/exec/{namespace}/{pod}/{container}`` and ``/attach/{namespace}/{pod}/
{container}`` (WebSocket; off unless ``enable_exec``, with the ``/run`` token): the sessions of
``kubecore._streaming.remotecommand``, on the container the agent runs for that pod."""

from __future__ import annotations

from http import HTTPStatus

from kubecore._apimachinery.rules import HTTPError, require_bearer
from kubecore._contract.streaming import StreamSession
from kubecore._http.handler import Handler
from kubecore._streaming.remotecommand import (
    open_stream,
    serve_remote_command,
    stream_options,
)


def exec_session(handler: Handler, rest: list[str], query: dict[str, list[str]]) -> None:
    _serve(handler, rest, query, "exec")


def attach(handler: Handler, rest: list[str], query: dict[str, list[str]]) -> None:
    _serve(handler, rest, query, "attach")


def _serve(handler: Handler, rest: list[str], query: dict[str, list[str]], what: str) -> None:
    config = handler.server.config
    if not config.enable_exec:
        raise HTTPError(HTTPStatus.FORBIDDEN, f"{what} is disabled on this node")
    require_bearer(handler.headers.get("Authorization") or "", config.exec_token)
    if len(rest) != 3 or not all(rest):
        raise HTTPError(HTTPStatus.NOT_FOUND, f"use /{what}/{{namespace}}/{{pod}}/{{container}}")
    namespace, pod_name, container = rest
    if handler.server.kubelet.get_pod(namespace, pod_name) is None:
        raise HTTPError(HTTPStatus.NOT_FOUND, f'pods "{pod_name}" not found')
    options = stream_options(query, is_exec=what == "exec")
    streams = handler.server.kubelet.streams
    target = (namespace, pod_name, container)

    def open_session() -> StreamSession:
        return open_stream(streams, target, options, what)

    serve_remote_command(handler, handler.server, options, open_session, what=what)
