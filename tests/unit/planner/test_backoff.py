"""Crash-loop / image-pull backoff: 10 s doubling to 5 min, reset after 10 min without a failure."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._planner.actions import BackoffEntry
from kubecore._planner.backoff import (
    BACKOFF_RESET,
    backoff_delay,
    backoff_resets,
    format_delay,
    in_backoff,
    next_backoff,
)


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


def test_the_reset_boundary_is_strictly_after_ten_minutes() -> None:
    assert not backoff_resets(30.0, 30.0 + BACKOFF_RESET)
    assert backoff_resets(30.0, 30.0 + BACKOFF_RESET + 0.001)
    assert backoff_resets(0.0, 5.5, reset_after=5.0) and not backoff_resets(0.0, 5.0, 5.0)


def test_a_gap_of_exactly_600_after_a_float_sum_follows_the_code() -> None:
    """The CI failure: 1.723 + 1.723 + 421.00001 + 600.0 is 600.0000000000001 past the previous
    failure, so the code resets although the gap as written is exactly 600."""
    now = 1.723 + 1.723 + 421.00001
    assert (now + 600.0) - now > 600.0
    entry = next_backoff(next_backoff(None, now - 1.0), now)
    assert next_backoff(entry, now + 600.0).delay == 10


@given(st.lists(st.floats(min_value=0, max_value=2000, allow_nan=False), min_size=1, max_size=20))
@example([1.723, 1.723, 421.00001, 600.0])
def test_delay_always_within_bounds(gaps: list[float]) -> None:
    entry = None
    now = 0.0
    for gap in gaps:
        now += gap
        previous = entry
        entry = next_backoff(entry, now)
        assert 10 <= entry.delay <= 300
        assert entry.until == now + entry.delay
        if previous is None:
            assert entry.delay == 10
        elif backoff_resets(previous.last_failure, now):
            assert gap > BACKOFF_RESET - 1e-6
            assert entry.delay == 10
        else:
            assert gap <= BACKOFF_RESET + 1e-6
            assert entry.delay == min(previous.delay * 2, 300)


def test_ci_uses_a_deterministic_hypothesis_profile() -> None:
    from hypothesis import settings

    from tests.conftest import profile_name

    assert profile_name({"CI": "true"}) == "ci"
    assert profile_name({}) == "dev"
    assert profile_name({"HYPOTHESIS_PROFILE": "ci"}) == "ci"
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.deadline is None and ci.max_examples <= 100
    assert settings.get_profile("dev").max_examples > ci.max_examples


@given(
    st.integers(min_value=1, max_value=80),
    st.floats(min_value=0.01, max_value=60),
    st.floats(min_value=60, max_value=3600),
)
def test_the_closed_form_is_the_stepped_backoff_without_a_reset(
    failures: int, initial: float, cap: float
) -> None:
    entry = None
    for step in range(failures):
        entry = next_backoff(entry, float(step), initial=initial, cap=cap, reset_after=1e18)
    assert entry is not None and backoff_delay(failures, initial, cap) == entry.delay


def test_the_url_source_and_the_docker_events_back_off_by_the_one_closed_form() -> None:
    from kubecore import runtime
    from kubecore._config import http
    from kubecore_docker import _events

    assert vars(http)["backoff_delay"] is vars(_events)["backoff_delay"] is backoff_delay
    assert runtime.backoff_delay is backoff_delay
