"""A run of failures in a row (the runtime not answering a relist): how long to wait before the
next try, which failures to log, and how the run ended.

Pure bookkeeping on the caller's clock readings: the wait starts at ``initial`` and doubles up
to ``cap`` (``_backoff.next_backoff``); failures 1, 2, 4, 8, ... of the run are logged, and
one at least every ``log_every`` seconds in between; the first answer ends the run, which is
then reported once.
"""

from __future__ import annotations

import math

import attrs

from kubecore._planner.actions import BackoffEntry
from kubecore._planner.backoff import next_backoff

RELIST_BACKOFF_INITIAL = 0.5
RELIST_BACKOFF_MAX = 30.0
OUTAGE_LOG_EVERY = 60.0


@attrs.frozen
class OutageEnd:
    """A run of failures that an answer ended."""

    failures: int
    seconds: float
    """From the first failure of the run to the answer."""

    def describe(self) -> str:
        """How the run went, for a log line: ``after 3 failed tries over 1.5s``."""
        tries = "try" if self.failures == 1 else "tries"
        return f"after {self.failures} failed {tries} over {self.seconds:.1f}s"


def logs_failure(failures: int, since_logged: float, log_every: float) -> bool:
    """Is failure number ``failures`` of a run logged, ``since_logged`` seconds after the last
    one logged? The 1st, 2nd, 4th, 8th, ... are, and one at least every ``log_every``."""
    return failures & (failures - 1) == 0 or since_logged >= log_every


@attrs.define
class Outage:
    """The current run of failures (none: ``failures == 0``). Not thread-safe: one caller."""

    initial: float = RELIST_BACKOFF_INITIAL
    cap: float = RELIST_BACKOFF_MAX
    log_every: float = OUTAGE_LOG_EVERY
    failures: int = 0
    started: float = 0.0
    """When the run's first failure happened."""
    _logged_at: float = -math.inf
    _backoff: BackoffEntry | None = None

    def __attrs_post_init__(self) -> None:
        if not 0 < self.initial <= self.cap:
            raise ValueError(
                f"a back-off needs 0 < initial <= cap, got initial={self.initial} cap={self.cap}"
            )

    def fail(self, now: float) -> bool:
        """A try failed at ``now``; True if this failure is to be logged."""
        if self.failures == 0:
            self.started = now
        self.failures += 1
        self._backoff = next_backoff(
            self._backoff, now, initial=self.initial, cap=self.cap, reset_after=math.inf
        )
        if logs_failure(self.failures, now - self._logged_at, self.log_every):
            self._logged_at = now
            return True
        return False

    @property
    def delay(self) -> float:
        """Seconds to wait after the last failure before the next try (0: no run)."""
        return self._backoff.delay if self._backoff is not None and self.failures else 0.0

    def answer(self, now: float) -> OutageEnd | None:
        """A try succeeded at ``now``: the run it ends (None: there was none)."""
        if not self.failures:
            return None
        ended = OutageEnd(self.failures, max(0.0, now - self.started))
        self.failures = 0
        self._backoff = None
        self._logged_at = -math.inf
        return ended
