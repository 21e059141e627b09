"""Crash-loop / image-pull backoff: 10 s doubling to 5 min, reset after 10 min without a failure."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubecore._backoff import format_delay, in_backoff, next_backoff
from kubecore.planner import BackoffEntry


def test_doubles_from_ten_seconds_to_the_cap() -> None:
    entry = None
    delays = []
    now = 0.0
    for _ in range(8):
        entry = next_backoff(entry, now)
        delays.append(entry.delay)
        now = entry.until + 1  # fail again soon after each retry
    assert delays == [10, 20, 40, 80, 160, 300, 300, 300]


def test_entry_fields() -> None:
    entry = next_backoff(None, 100.0)
    assert entry == BackoffEntry(delay=10.0, until=110.0, last_failure=100.0)


def test_resets_after_ten_quiet_minutes() -> None:
    entry = next_backoff(next_backoff(None, 0.0), 30.0)
    assert entry.delay == 20
    assert next_backoff(entry, 30.0 + 600).delay == 40  # exactly 600 s: not yet
    assert next_backoff(entry, 30.0 + 601).delay == 10


def test_custom_parameters() -> None:
    entry = next_backoff(None, 0.0, initial=1.0, cap=3.0, reset_after=5.0)
    entry = next_backoff(entry, 1.0, initial=1.0, cap=3.0, reset_after=5.0)
    entry = next_backoff(entry, 2.0, initial=1.0, cap=3.0, reset_after=5.0)
    assert entry.delay == 3.0
    assert next_backoff(None, 0.0, initial=50.0, cap=3.0).delay == 3.0


def test_in_backoff_until_the_deadline() -> None:
    entry = next_backoff(None, 100.0)
    assert not in_backoff(None, 100.0)
    assert in_backoff(entry, 100.0)
    assert in_backoff(entry, 109.999)
    assert not in_backoff(entry, 110.0)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(10, "10s"), (20.0, "20s"), (80, "1m20s"), (300, "5m0s"), (3725, "1h2m5s")],
)
def test_format_delay_like_go(seconds: float, text: str) -> None:
    assert format_delay(seconds) == text


@given(st.lists(st.floats(min_value=0, max_value=2000, allow_nan=False), min_size=1, max_size=20))
def test_delay_always_within_bounds(gaps: list[float]) -> None:
    entry = None
    now = 0.0
    for gap in gaps:
        now += gap
        previous = entry
        entry = next_backoff(entry, now)
        assert 10 <= entry.delay <= 300
        assert entry.until == now + entry.delay
        if previous is not None and gap <= 600:
            assert entry.delay == min(previous.delay * 2, 300)
