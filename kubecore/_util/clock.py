"""One injectable clock. Logic never calls ``time.time()`` or ``time.sleep()`` directly.

Code that needs to know how a clock behaves asks the clock (``virtual``, ``call_at``), never
its type, so a third-party clock that implements the ``Clock`` protocol works everywhere.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Protocol

import attrs


class TimerHandle(Protocol):
    """What ``Clock.call_at`` returns (``threading.Timer`` is one)."""

    def cancel(self) -> None:
        """The callback will not run (if it has not started yet)."""
        ...


class Clock(Protocol):
    """Where time comes from. Implement every member: the agent and the runtimes ask the clock
    what it can do, never check its type."""

    @property
    def virtual(self) -> bool:
        """True if time moves only when someone advances it (``sleep`` and ``wait`` return at
        once, having moved it). A loop that waits for *another thread* must then wait in real
        time: on a virtual clock nothing else would ever end the wait."""
        ...

    def now(self) -> float:
        """Seconds since the epoch (wall time, used for timestamps and ages)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (used for intervals and deadlines)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass on this clock."""
        ...

    def wait(self, event: threading.Event, timeout: float) -> bool:
        """Wait for ``event`` up to ``timeout`` seconds of this clock; True if it was set."""
        ...

    def call_at(self, monotonic_deadline: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback()`` once, when ``monotonic()`` reaches the deadline (as soon as time
        moves, if it has passed), in a thread of the clock's choosing; ``cancel()`` on the
        handle prevents it."""
        ...


def missing_clock_members(candidate: object) -> list[str]:
    """The members of the ``Clock`` protocol that ``candidate`` lacks ([]: it is a clock)."""
    members = sorted(name for name in vars(Clock) if not name.startswith("_"))
    return [name for name in members if not hasattr(candidate, name)]


@attrs.frozen
class SystemClock:
    """Real time. ``call_at`` runs each callback on a daemon timer thread. Stateless: every
    ``SystemClock()`` equals every other."""

    virtual = False

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, event: threading.Event, timeout: float) -> bool:
        return event.wait(max(0.0, timeout))

    def call_at(self, monotonic_deadline: float, callback: Callable[[], None]) -> TimerHandle:
        timer = threading.Timer(max(0.0, monotonic_deadline - time.monotonic()), callback)
        timer.daemon = True
        timer.start()
        return timer


@attrs.define(eq=False)
class _ManualTimer:
    deadline: float
    seq: int
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True

    def __lt__(self, other: _ManualTimer) -> bool:
        return (self.deadline, self.seq) < (other.deadline, other.seq)


class ManualClock:
    """Virtual time for tests: it moves only when ``advance`` is called.

    ``sleep`` returns at once after advancing the clock by the time asked for, ``wait`` after
    advancing it until the event is set or the timeout has passed, so code that sleeps runs
    instantly and deterministically in a single thread. Timers scheduled
    with ``call_at`` fire in the advancing thread, each at its own deadline: the clock reads
    the timer's deadline while its callback runs.
    """

    virtual = True

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._start = start
        self._elapsed = 0.0
        self._horizon = 0.0
        """Where the advances in progress end: concurrent advances add up, as they always did."""
        self._lock = threading.RLock()
        self._timers: list[_ManualTimer] = []
        self._seq = itertools.count()

    def __repr__(self) -> str:
        return f"ManualClock(start={self._start!r}) at {id(self):#x}, {self.monotonic()} s in"

    def now(self) -> float:
        with self._lock:
            return self._start + self._elapsed

    def monotonic(self) -> float:
        with self._lock:
            return self._elapsed

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing the timers due on the way in deadline order,
        each with the clock at its deadline; timers their callbacks schedule within the window
        fire too. If a callback raises, the clock still ends at the target and the exception
        propagates; timers not yet fired stay queued."""
        self._advance(seconds, lambda: False)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.advance(seconds)

    def wait(self, event: threading.Event, timeout: float) -> bool:
        """Advance until ``event`` is set (by a timer firing on the way) or ``timeout`` passed."""
        if event.is_set():
            return True
        if timeout > 0:
            self._advance(timeout, event.is_set)
        return event.is_set()

    def call_at(self, monotonic_deadline: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback()`` when the clock is advanced to the deadline; a deadline already
        passed fires at the next ``advance`` (even ``advance(0)``)."""
        timer = _ManualTimer(monotonic_deadline, next(self._seq), callback)
        with self._lock:
            heapq.heappush(self._timers, timer)
        return timer

    def _advance(self, seconds: float, done: Callable[[], bool]) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot go back")
        with self._lock:
            self._horizon += seconds
            target = self._horizon
        reached = target
        try:
            while (timer := self._pop_due(target)) is not None:
                timer.callback()
                if done():
                    reached = self.monotonic()
                    break
        finally:
            self._move_to(reached, target)

    def _pop_due(self, target: float) -> _ManualTimer | None:
        """The next live timer due by ``target``, with the clock moved to its deadline."""
        with self._lock:
            while self._timers and self._timers[0].deadline <= target:
                timer = heapq.heappop(self._timers)
                if not timer.cancelled:
                    self._elapsed = max(self._elapsed, timer.deadline)
                    return timer
            return None

    def _move_to(self, reached: float, target: float) -> None:
        """End an advance at ``reached``; time it did not use is given back to the horizon."""
        with self._lock:
            self._elapsed = max(self._elapsed, reached)
            if self._horizon == target:  # no other advance in progress: exactly where time is
                self._horizon = self._elapsed
            else:
                self._horizon = max(self._horizon - (target - reached), self._elapsed)
