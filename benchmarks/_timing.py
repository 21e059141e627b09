"""A runtime proxy that counts every call at the runtime seam and notes when container starts
return (the moment a container is running)."""

from __future__ import annotations

import functools
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

from kubecore import ContainerRuntime


class WatchedRuntime:
    """Wraps a runtime: ``calls`` counts each method called through ``proxy()`` by name, and
    every successful ``start_container`` is noted with ``perf_counter``. ``run_sandbox`` is not a
    container start: only app (and init) containers count.

    The proxy sits between the agent and the runtime, so it sees exactly the agent's calls
    (the fake's own call log is bounded, and the Docker runtime has none).
    """

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self._cond = threading.Condition()
        self._calls: Counter[str] = Counter()
        self.total = 0
        self.starts: list[tuple[str, float]] = []

    def proxy(self) -> ContainerRuntime:
        return cast(ContainerRuntime, _Proxy(self))

    def called(self, op: str) -> None:
        with self._cond:
            self._calls[op] += 1
            self.total += 1

    def calls(self) -> Counter[str]:
        with self._cond:
            return Counter(self._calls)

    def started(self, container_id: str) -> None:
        with self._cond:
            self.starts.append((container_id, time.perf_counter()))
            self._cond.notify_all()

    def start_count(self) -> int:
        with self._cond:
            return len(self.starts)

    def wait_for_start(self, count: int, timeout: float) -> float | None:
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
    def __init__(self, watch: WatchedRuntime) -> None:
        self._watch = watch
        self._methods: dict[str, Callable[..., Any]] = {}

    def start_container(self, container_id: str) -> None:
        self._watch.called("start_container")
        self._watch.runtime.start_container(container_id)
        self._watch.started(container_id)

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._watch.runtime, name)
        if name.startswith("_") or not callable(target):
            return target
        cached = self._methods.get(name)
        if cached is not None:
            return cached
        watch = self._watch

        @functools.wraps(target)
        def method(*args: Any, **kwargs: Any) -> Any:
            watch.called(name)
            return getattr(watch.runtime, name)(*args, **kwargs)

        self._methods[name] = method
        return method
