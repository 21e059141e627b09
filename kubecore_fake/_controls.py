"""The in-memory runtime's test controls over its calls: the call log, the calls that targeted
unmanaged objects, injected failures and injected latency."""

from __future__ import annotations

import collections
import copy
import threading

from kubecore import ContainerRuntimeError

OPERATIONS = frozenset(
    {
        "version",
        "run_sandbox",
        "stop_sandbox",
        "remove_sandbox",
        "list_sandboxes",
        "sandbox_status",
        "create_container",
        "start_container",
        "stop_container",
        "update_container_resources",
        "remove_container",
        "list_containers",
        "container_status",
        "snapshot",
        "exec_sync",
        "exec_stream",
        "attach",
        "port_forward",
        "logs",
        "watch_events",
        "container_stats",
        "claim_node",
        "release_node",
        "pull",
        "image_status",
        "list_images",
        "remove_image",
        "image_fs_usage",
    }
)
"""Operation names accepted by ``fail_next``, ``add_latency`` and ``call_count`` (``*``: all)."""

Call = tuple[str, tuple[object, ...]]


class Controls:
    """The call log and what is injected into the calls to come, under the runtime's lock."""

    def __init__(self, lock: threading.RLock, max_calls: int) -> None:
        self._lock = lock
        self._failures: dict[str, list[BaseException]] = {}
        self._latency: dict[str, float] = {}
        # Bounded, so that a long-running agent on the fake does not grow without end.
        self._calls: collections.deque[Call] = collections.deque(maxlen=max_calls)
        self._unmanaged_calls: list[Call] = []

    def fail_next(self, op: str, n: int, error: BaseException | None) -> None:
        _check_op(op)
        err = error if error is not None else ContainerRuntimeError(f"injected failure in {op}")
        with self._lock:
            self._failures.setdefault(op, []).extend([err] * n)

    def add_latency(self, op: str, seconds: float) -> None:
        _check_op(op)
        with self._lock:
            if seconds <= 0:
                self._latency.pop(op, None)
            else:
                self._latency[op] = seconds

    def record(
        self, op: str, args: tuple[object, ...], *, unmanaged: bool
    ) -> tuple[float, BaseException | None]:
        """Log the call; the latency it takes first and the failure it raises then (a fresh
        copy of the one injected), if any."""
        with self._lock:
            self._calls.append((op, args))
            if unmanaged:
                self._unmanaged_calls.append((op, args))
            failure = self._pop_failure(op) or self._pop_failure("*")
            latency = self._latency.get(op, 0.0) + self._latency.get("*", 0.0)
        return latency, None if failure is None else _fresh(failure)

    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def call_count(self, op: str) -> int:
        with self._lock:
            return sum(1 for name, _ in self._calls if op in ("*", name))

    def unmanaged_calls(self) -> list[Call]:
        with self._lock:
            return list(self._unmanaged_calls)

    def _pop_failure(self, op: str) -> BaseException | None:
        queue = self._failures.get(op)
        if not queue:
            return None
        failure = queue.pop(0)
        if not queue:
            del self._failures[op]
        return failure


def _fresh(error: BaseException) -> BaseException:
    """A copy of an injected error, so that raising it again does not pile up tracebacks."""
    try:
        fresh = copy.copy(error)
    except Exception:
        return error
    fresh.__traceback__ = None
    return fresh


def _check_op(op: str) -> None:
    if op != "*" and op not in OPERATIONS:
        raise ValueError(f"unknown operation {op!r}; known: {', '.join(sorted(OPERATIONS))}")
