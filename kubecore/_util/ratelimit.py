"""The token bucket: the agent's one rate limiter (image pulls, status writes to etcd).

``TokenBucket(qps, burst, clock)`` holds at most ``burst`` tokens (at least one) and gains ``qps``
a second on ``clock.monotonic()``; it starts full. ``qps <= 0`` means no limit, as the kubelet's
``registryPullQPS: 0``. Two ways to take a token, as client-go's ``flowcontrol`` rate limiter
(``Accept`` / ``TryAccept``), on one state:

* ``acquire()`` blocks: it takes a token now, going into debt when there is none, and sleeps (on
  the clock) until the debt is paid; it returns the seconds waited.
* ``try_acquire()`` never blocks: True when a token was there (and is taken), False "try later".

A debt left by ``acquire`` is paid before ``try_acquire`` answers True again. Thread-safe.
"""

from __future__ import annotations

import threading

from kubecore._util.clock import Clock


class TokenBucket:
    """``qps`` tokens a second, at most ``burst`` saved, on ``clock`` (see the module)."""

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        self._qps = qps
        self._burst = float(max(burst, 1))
        self._clock = clock
        self._tokens = self._burst
        self._stamp = clock.monotonic()
        self._lock = threading.Lock()

    def _refill_locked(self) -> None:
        now = self._clock.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._qps)
        self._stamp = now

    def acquire(self) -> float:
        """Take a token, sleeping (on the clock) until one is there; returns the time waited."""
        if self._qps <= 0:
            return 0.0
        with self._lock:
            self._refill_locked()
            self._tokens -= 1.0
            wait = 0.0 if self._tokens >= 0 else -self._tokens / self._qps
        if wait > 0:
            self._clock.sleep(wait)
        return wait

    def try_acquire(self) -> bool:
        """Take a token if one is there now (True), else leave the bucket as it is (False)."""
        if self._qps <= 0:
            return True
        with self._lock:
            self._refill_locked()
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False
