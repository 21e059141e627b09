"""One injectable clock. Logic never calls ``time.time()`` or ``time.sleep()`` directly."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (wall time, used for timestamps and ages)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (used for intervals and deadlines)."""
        ...

    def sleep(self, seconds: float) -> None: ...

    def wait(self, event: threading.Event, timeout: float) -> bool:
        """Wait for ``event`` up to ``timeout`` seconds; True if it was set."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, event: threading.Event, timeout: float) -> bool:
        return event.wait(max(0.0, timeout))


class ManualClock:
    """Virtual time for tests: it moves only when ``advance`` is called.

    ``sleep`` and ``wait`` return at once after advancing the clock by the time asked for, so
    code that sleeps runs instantly and deterministically in a single thread. Timers scheduled
    with ``call_at`` fire (in the advancing thread) when the clock passes them.
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._start = start
        self._elapsed = 0.0
        self._lock = threading.RLock()
        self._timers: list[tuple[float, int, object]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        with self._lock:
            return self._start + self._elapsed

    def monotonic(self) -> float:
        with self._lock:
            return self._elapsed

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot go back")
        with self._lock:
            target = self._elapsed + seconds
            due = []
            while self._timers and self._timers[0][0] <= target:
                when, _, callback = heapq.heappop(self._timers)
                due.append((when, callback))
            self._elapsed = target
        for _, callback in due:
            callback()  # type: ignore[operator]

    def call_at(self, monotonic_deadline: float, callback: object) -> None:
        """Run ``callback()`` when the clock is advanced to (or past) the deadline."""
        with self._lock:
            heapq.heappush(self._timers, (monotonic_deadline, next(self._seq), callback))

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.advance(seconds)

    def wait(self, event: threading.Event, timeout: float) -> bool:
        if event.is_set():
            return True
        self.sleep(timeout)
        return event.is_set()
