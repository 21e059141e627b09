"""Container log queries, as the kubelet answers them (one implementation for the agent's
``/containerLogs`` and the API's ``pods/{name}/log``).

``LogOptions`` is Kubernetes' ``PodLogOptions`` read from a query string; ``log_container_id``
picks the instance whose log a query reads from the pod's status, with the kubelet's answers
when there is none (``previous`` with no terminated instance, a container waiting to start);
``limited`` cuts a stream after ``limitBytes``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import attrs

from kubecore._apimachinery.rules import query_flag, query_int, query_value
from kubecore._contract.errors import BadParameter, LogRequestError
from kubecore._model.v1 import ContainerStatus, Pod
from kubecore._util.timefmt import parse_rfc3339

MAX_TAIL_LINES = 100_000


@attrs.frozen
class LogOptions:
    """What a log query asks for (Kubernetes' ``PodLogOptions``)."""

    previous: bool = False
    """The last terminated instance instead of the current one."""
    since_seconds: int | None = None
    since_time: float | None = None
    """Only lines from this time (seconds since the epoch) on."""
    limit_bytes: int | None = None
    timestamps: bool = False
    tail_lines: int | None = None
    follow: bool = False

    def since(self, now: float) -> float | None:
        if self.since_seconds is not None:
            return now - self.since_seconds
        return self.since_time

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``Kubelet.streams.logs`` for this query."""
        return {
            "tail": self.tail_lines,
            "follow": self.follow,
            "timestamps": self.timestamps,
            "previous": self.previous,
            "since_seconds": self.since_seconds,
            "since_time": self.since_time,
            "limit_bytes": self.limit_bytes,
        }


def parse_since_time(text: str, name: str = "sinceTime") -> float:
    """An RFC 3339 time in seconds since the epoch (``LogRequestError`` naming ``name`` if it
    is not one)."""
    try:
        return parse_rfc3339(text)
    except ValueError as error:
        raise LogRequestError(f"{name}: {error}") from None


def parse_log_options(query: Mapping[str, Sequence[str]]) -> LogOptions:
    """The options of a query string, checked as the API server checks ``PodLogOptions``;
    ``LogRequestError`` naming the first option that cannot be taken."""
    try:
        tail = query_int(query, "tailLines", 0)
        since_seconds = query_int(query, "sinceSeconds", 1)
        limit_bytes = query_int(query, "limitBytes", 1)
        previous = query_flag(query, "previous")
        timestamps = query_flag(query, "timestamps")
        follow = query_flag(query, "follow")
    except BadParameter as error:
        raise LogRequestError(str(error)) from None
    if tail is not None and tail > MAX_TAIL_LINES:
        raise LogRequestError(f"tailLines: at most {MAX_TAIL_LINES}")
    since_text = query_value(query, "sinceTime")
    if since_seconds is not None and since_text:
        raise LogRequestError("at most one of sinceTime or sinceSeconds may be specified")
    return LogOptions(
        previous=previous,
        since_seconds=since_seconds,
        since_time=parse_since_time(since_text) if since_text else None,
        limit_bytes=limit_bytes,
        timestamps=timestamps,
        tail_lines=tail,
        follow=follow,
    )


def _runtime_id(container_id: str) -> str:
    """``docker://abc`` -> ``abc``: the id the runtime knows."""
    return container_id.partition("://")[2] or container_id


def container_status_of(pod: Pod, container: str) -> ContainerStatus | None:
    status = pod.status
    if status is None:
        return None
    statuses = status.container_statuses + status.init_container_statuses
    for cs in statuses + status.ephemeral_container_statuses:
        if cs.name == container:
            return cs
    return None


def log_container_id(pod: Pod, container: str, *, previous: bool) -> str:
    """The runtime id of the instance a log query reads, from the pod's status, as the
    kubelet picks it; ``LogRequestError`` saying why when there is none."""
    # Quoted as the kubelet quotes them (Go's %q).
    where = f'container "{container}" in pod "{pod.metadata.name}"'
    cs = container_status_of(pod, container)
    if cs is None:
        raise LogRequestError(f"{where} is waiting to start - no logs yet")
    state, last = cs.state, cs.last_state.terminated
    if previous:
        if last is None or not last.container_id:
            raise LogRequestError(f"previous terminated {where} not found")
        return _runtime_id(last.container_id)
    if state.running is not None and cs.container_id:
        return _runtime_id(cs.container_id)
    if state.terminated is not None:
        found = state.terminated.container_id or (last.container_id if last else "")
        if not found:
            raise LogRequestError(f"{where} is terminated")
        return _runtime_id(found)
    if last is not None:
        if not last.container_id:
            raise LogRequestError(f"{where} is terminated")
        return _runtime_id(last.container_id)
    if state.waiting is not None:
        reason = {
            "ErrImagePull": "image can't be pulled",
            "ImagePullBackOff": "trying and failing to pull image",
        }.get(state.waiting.reason, state.waiting.reason)
        raise LogRequestError(f"{where} is waiting to start: {reason}")
    raise LogRequestError(f"{where} is waiting to start - no logs yet")


def limited(stream: Iterator[bytes], limit: int | None) -> Iterator[bytes]:
    """The stream's chunks, cut after ``limit`` bytes; closes the stream at the end."""
    try:
        left = limit
        for chunk in stream:
            if left is not None:
                chunk = chunk[:left]
                left -= len(chunk)
            yield chunk
            if left is not None and left <= 0:
                return
    finally:
        close = getattr(stream, "close", None)
        if callable(close):
            close()


class LogReader(Protocol):
    """What answers a container log query (``kubecore.Kubelet.streams.logs``)."""

    def logs(
        self,
        namespace: str,
        pod_name: str,
        container: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        timestamps: bool = False,
        previous: bool = False,
        since_seconds: int | None = None,
        since_time: float | None = None,
        limit_bytes: int | None = None,
    ) -> Iterator[bytes]: ...
