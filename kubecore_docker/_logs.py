"""Container logs from the engine: a (followed) stream cut into lines."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from kubecore_docker._client import DockerConnection
from kubecore_docker._errors import Subject, engine_errors

log = logging.getLogger(__name__)


def open_logs(
    api: Any,
    connection: DockerConnection,
    container_id: str,
    *,
    tail: int | None,
    follow: bool,
    since: float | None,
    timestamps: bool,
) -> Iterator[bytes]:
    """The container's log lines; a followed log has a client of its own (no timeout), closed
    with the stream."""
    client = connection.stream_client(timeout=None) if follow else api
    kwargs: dict[str, Any] = {
        "stdout": True,
        "stderr": True,
        "stream": True,
        "timestamps": timestamps,
        "follow": follow,
        "tail": "all" if tail is None else max(0, int(tail)),
    }
    if since is not None and since > 0:
        kwargs["since"] = float(since)
    try:
        with engine_errors(Subject.CONTAINER):
            stream = client.logs(container_id, **kwargs)
    except BaseException:
        if follow:
            client.close()
        raise
    return _lines(stream, client if follow else None)


def _lines(stream: Any, own_client: Any) -> Iterator[bytes]:
    """Engine log chunks as lines ending in ``\\n``; closes the stream and its own client."""
    buffer = b""
    try:
        with engine_errors(Subject.CONTAINER):
            for chunk in stream:
                buffer += chunk
                while True:
                    newline = buffer.find(b"\n")
                    if newline < 0:
                        break
                    yield buffer[: newline + 1]
                    buffer = buffer[newline + 1 :]
        if buffer:
            yield buffer + b"\n"
    finally:
        for closeable in (stream, own_client):
            if closeable is not None:
                try:
                    closeable.close()
                except Exception:
                    log.debug("closing a log stream failed", exc_info=True)
