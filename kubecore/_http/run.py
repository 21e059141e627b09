"""``/run/{namespace}/{pod}/{container}`` (POST, off unless ``enable_exec``): runs a command
(``?cmd=...``, repeated for argv, or a JSON body ``{"command": [...]}``) and answers
``{"exitCode", "stdout", "stderr"}``. Needs ``Authorization: Bearer <token>``."""

from __future__ import annotations

import json
import logging
import shlex
from http import HTTPStatus

from kubecore._apimachinery.rules import HTTPError, error_for, query_seconds, require_bearer
from kubecore._contract.errors import KubecoreError
from kubecore._http.handler import Handler
from kubecore._http.pods import target

logger = logging.getLogger(__name__)

MAX_EXEC_TIMEOUT = 300.0


def exec_command(query: dict[str, list[str]], body: bytes, content_type: str) -> list[str]:
    """The command of an exec request: ``?cmd=`` (one shell-quoted string, or one ``cmd`` per
    argument) or a JSON body ``{"command": [...]}`` / ``{"cmd": "..."}``."""
    command = _body_command(body, content_type) if body.strip() else []
    if not command:
        values = query.get("cmd", [])
        command = _split(values[0]) if len(values) == 1 else list(values)
    if not command or not command[0]:
        raise HTTPError(HTTPStatus.BAD_REQUEST, "cmd: a command is required")
    return command


def _body_command(body: bytes, content_type: str) -> list[str]:
    if "json" not in content_type and content_type not in ("", "text/plain"):
        raise HTTPError(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE, f"body must be JSON, got {content_type!r}"
        )
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise HTTPError(HTTPStatus.BAD_REQUEST, f"body is not valid JSON: {error}") from None
    except RecursionError:
        raise HTTPError(HTTPStatus.BAD_REQUEST, "body is not valid JSON: nested too deep") from None
    if not isinstance(payload, dict):
        raise HTTPError(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
    raw = payload.get("command", payload.get("cmd"))
    if isinstance(raw, str):
        return _split(raw)
    if isinstance(raw, list) and all(isinstance(part, str) for part in raw):
        return list(raw)
    if raw is not None:
        raise HTTPError(HTTPStatus.BAD_REQUEST, "command: must be a list of strings or a string")
    return []


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as error:
        raise HTTPError(HTTPStatus.BAD_REQUEST, f"cmd: {error}") from None


def run(handler: Handler, rest: list[str], query: dict[str, list[str]]) -> None:
    config = handler.server.config
    if not config.enable_exec:
        raise HTTPError(HTTPStatus.FORBIDDEN, "exec is disabled on this node")
    require_bearer(handler.headers.get("Authorization") or "", config.exec_token)
    body = handler._read_body()
    namespace, pod, container = target(handler, rest, "/run/{namespace}/{pod}/{container}")
    content_type = (handler.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    command = exec_command(query, body, content_type)
    timeout = query_seconds(query, "timeout", 10.0, MAX_EXEC_TIMEOUT)
    logger.info(
        "exec in %s/%s/%s: %s",
        namespace,
        pod,
        container,
        shlex.join(command),
        extra={"namespace": namespace, "pod": pod, "container": container},
    )
    streams = handler.server.kubelet.streams
    try:
        result = streams.exec(namespace, pod, container, command, timeout=timeout)
    except KubecoreError as error:
        raise error_for(error) from None
    handler._send_json(
        {
            "exitCode": result.exit_code,
            "stdout": result.stdout.decode("utf-8", "replace"),
            "stderr": result.stderr.decode("utf-8", "replace"),
        }
    )
