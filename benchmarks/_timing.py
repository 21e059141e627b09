"""A runtime proxy that notes when each container start returns (the moment it is running)."""

from __future__ import annotations

import threading
import time
from typing import Any, cast

from kubecore._runtime import ContainerRuntime


class StartWatch:
    """Wraps a runtime; every successful ``start_container`` is noted with ``perf_counter``.

    ``run_sandbox`` is not a container start: only app (and init) containers count.
    """

    def __init__(self, runtime: Any) -> None:
        self._runtime = runtime
        self._cond = threading.Condition()
        self.starts: list[tuple[str, float]] = []

    def proxy(self) -> ContainerRuntime:
        return cast(ContainerRuntime, _Proxy(self._runtime, self))

    def note(self, container_id: str) -> None:
        with self._cond:
            self.starts.append((container_id, time.perf_counter()))
            self._cond.notify_all()

    def count(self) -> int:
        with self._cond:
            return len(self.starts)

    def wait_for(self, count: int, timeout: float) -> float | None:
        """perf_counter time of the ``count``-th start (None if not reached in ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.starts) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            return self.starts[count - 1][1]


class _Proxy:
    def __init__(self, runtime: Any, watch: StartWatch) -> None:
        self._runtime = runtime
        self._watch = watch

    def start_container(self, container_id: str) -> None:
        self._runtime.start_container(container_id)
        self._watch.note(container_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runtime, name)
