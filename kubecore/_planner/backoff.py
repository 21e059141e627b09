"""Crash-loop and image-pull backoff arithmetic (pure: the caller passes ``now``)."""

from __future__ import annotations

from kubecore._planner.actions import BackoffEntry

INITIAL_BACKOFF = 10.0
MAX_BACKOFF = 300.0
BACKOFF_RESET = 600.0


def backoff_resets(last_failure: float, now: float, reset_after: float = BACKOFF_RESET) -> bool:
    """True when a failure at ``now`` starts the delay over: the previous one, at
    ``last_failure``, is more than ``reset_after`` seconds old. The one place this boundary is
    decided: on floats, ``now - last_failure`` need not equal the sum of the gaps in between."""
    return now - last_failure > reset_after


def next_backoff(
    previous: BackoffEntry | None,
    now: float,
    *,
    initial: float = INITIAL_BACKOFF,
    cap: float = MAX_BACKOFF,
    reset_after: float = BACKOFF_RESET,
) -> BackoffEntry:
    """The entry after a failure at ``now``: ``initial``, doubling up to ``cap``.

    The delay starts over at ``initial`` when the previous failure is more than ``reset_after``
    seconds old (the kubelet: twice the cap, 10 minutes without a failure).
    """
    if previous is None or backoff_resets(previous.last_failure, now, reset_after):
        delay = initial
    else:
        delay = previous.delay * 2
    delay = min(delay, cap)
    return BackoffEntry(delay=delay, until=now + delay, last_failure=now)


def backoff_delay(failures: int, initial: float, cap: float) -> float:
    """The closed form of ``next_backoff`` without a reset: seconds before the next try after
    ``failures`` in a row, ``initial`` doubling up to ``cap`` (0 or fewer failures: ``initial``)."""
    return min(cap, initial * 2.0 ** min(max(0, failures - 1), 64))


def in_backoff(entry: BackoffEntry | None, now: float) -> bool:
    """True while a retry must still wait."""
    return entry is not None and now < entry.until


def format_delay(seconds: float) -> str:
    """A delay as Go prints a duration in kubelet messages: ``10s``, ``1m20s``, ``5m0s``."""
    total = round(seconds)
    minutes, secs = divmod(total, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
