"""The one token bucket: image pulls wait for a token, etcd status writes try again later."""

from __future__ import annotations

import pytest

from kubecore._util.clock import ManualClock
from kubecore._util.ratelimit import TokenBucket


def test_the_burst_then_the_rate_for_both_ways_of_taking() -> None:
    clock = ManualClock()
    blocking, trying = TokenBucket(5, 2, clock), TokenBucket(5, 2, clock)
    assert [blocking.acquire() for _ in range(2)] == [0.0, 0.0]
    assert [trying.try_acquire() for _ in range(2)] == [True, True]
    assert trying.try_acquire() is False
    before = clock.monotonic()
    assert blocking.acquire() == pytest.approx(0.2)  # slept on the clock for the refill
    assert clock.monotonic() - before == pytest.approx(0.2)
    assert trying.try_acquire() is True  # the same 0.2 s refilled it


def test_a_debt_left_by_acquire_is_paid_before_try_acquire_says_yes() -> None:
    clock = ManualClock()
    bucket = TokenBucket(1, 1, clock)
    bucket.acquire()
    assert bucket.acquire() == pytest.approx(1.0)  # went one token into debt, then slept it off
    assert bucket.try_acquire() is False  # the slept second paid the debt, not a new token
    clock.advance(1.0)
    assert bucket.try_acquire() is True


@pytest.mark.parametrize("qps", [0.0, -1.0])
def test_no_rate_means_no_limit_either_way(qps: float) -> None:
    clock = ManualClock()
    bucket = TokenBucket(qps, 1, clock)
    assert all(bucket.try_acquire() for _ in range(100))
    assert all(bucket.acquire() == 0.0 for _ in range(100))
    assert clock.monotonic() == 0.0


def test_a_burst_under_one_holds_one_token() -> None:
    bucket = TokenBucket(1, 0, ManualClock())
    assert [bucket.try_acquire(), bucket.try_acquire()] == [True, False]


def test_the_pull_limiter_and_the_etcd_status_sink_share_it() -> None:
    from kubecore._agent import kubelet as _kubelet
    from kubecore._kuberuntime import execute as _executor
    from kubecore_etcd import _sink

    assert _kubelet.TokenBucket is _sink.TokenBucket is TokenBucket
    assert "TokenBucket" not in vars(_executor) or _executor.TokenBucket is TokenBucket
