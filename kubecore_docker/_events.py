"""The engine's event stream, on its own client and thread, as ``RuntimeEvent`` calls."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubecore.runtime import MANAGED_LABEL, RuntimeEvent, backoff_delay
from kubecore_docker._client import DockerConnection
from kubecore_docker._convert import event_from

log = logging.getLogger(__name__)

EventKey = tuple[int, str, str]


def logs_failure(failures: int, since_logged: float, log_every: float) -> bool:
    """Is failure number ``failures`` in a row logged, ``since_logged`` seconds after the last one
    logged? The 1st, 2nd, 4th, 8th, ... are, and one at least every ``log_every`` seconds."""
    return failures & (failures - 1) == 0 or since_logged >= log_every


def since_argument(time_nano: int) -> str:
    """The ``since`` the API takes: ``seconds.nanoseconds``."""
    return f"{time_nano // 1_000_000_000}.{time_nano % 1_000_000_000:09d}"


class EventWatcher:
    """Streams ``events(filters={"label": MANAGED_LABEL})``; after a disconnect it subscribes again
    from the last event's time (dropping the repeats), for as long as it is open.

    The delay between tries starts at ``initial_backoff`` and doubles with each failure in a
    row, up to ``max_backoff``; a stream that stayed up ``healthy_after`` seconds starts the
    count over (one that ends sooner, as with an engine accepting and dropping connections,
    counts as a failure). Failures are logged at a falling rate (the 1st, 2nd, 4th, 8th ... in a
    row, and at least once a minute), a subscription after failures once. The agent's relists see
    every change meanwhile, only later. ``close`` ends the stream and the thread.
    """

    def __init__(
        self,
        connection: DockerConnection,
        handler: Callable[[RuntimeEvent], None],
        *,
        initial_backoff: float = 0.2,
        max_backoff: float = 30.0,
        healthy_after: float = 30.0,
        log_every: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < initial_backoff <= max_backoff:
            raise ValueError(
                "the event stream back-off needs 0 < initial_backoff <= max_backoff, got"
                f" initial_backoff={initial_backoff} max_backoff={max_backoff}"
            )
        self._connection = connection
        self._handler = handler
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._healthy_after = healthy_after
        self._log_every = log_every
        self._monotonic = monotonic
        self._closed = threading.Event()
        self._connected = threading.Event()
        self._lock = threading.Lock()
        self._stream: Any = None
        self._client: Any = None
        self._last_nano = 0
        self._seen_at_last: set[EventKey] = set()
        self.reconnects = 0
        """Subscriptions tried again after a failure or a disconnect."""
        self.failures = 0
        """Failures in a row (0 once a stream has stayed up ``healthy_after`` seconds)."""
        self.subscriptions = 0
        """Streams opened."""
        self._thread = threading.Thread(
            target=self._run, name="kubecore-docker-events", daemon=True
        )

    def start(self) -> EventWatcher:
        """Start reading the engine's events on a background thread; returns the watcher."""
        self._thread.start()
        return self

    def wait_connected(self, timeout: float) -> bool:
        """True once the stream is subscribed (tests use it to avoid racing the first event)."""
        return self._connected.wait(timeout)

    @property
    def alive(self) -> bool:
        """Whether its thread still reads events."""
        return self._thread.is_alive()

    def close(self) -> None:
        self._closed.set()
        self._drop_stream()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5.0)

    def interrupt(self) -> None:
        """Cut the current stream as a disconnect would (it is then resubscribed)."""
        self._drop_stream()

    def _drop_stream(self) -> None:
        with self._lock:
            stream, client = self._stream, self._client
            self._stream = self._client = None
        for closeable in (stream, client):
            if closeable is not None:
                try:
                    closeable.close()
                except Exception:
                    log.debug("closing the event stream failed", exc_info=True)

    def _subscribe(self) -> Any:
        client = self._connection.stream_client()
        kwargs: dict[str, Any] = {
            "decode": True,
            "filters": {"label": [MANAGED_LABEL], "type": ["container"]},
        }
        if self._last_nano:
            kwargs["since"] = since_argument(self._last_nano)
        try:
            stream = client.events(**kwargs)
        except BaseException:
            client.close()
            raise
        with self._lock:
            self._stream, self._client = stream, client
        if self._closed.is_set():
            self._drop_stream()
        return stream

    def _run(self) -> None:
        started = 0.0  # the first failure of the current run
        logged_at = -math.inf
        while not self._closed.is_set():
            connected_at: float | None = None
            problem = "ended"
            try:
                stream = self._subscribe()
                connected_at = self._monotonic()
                self.subscriptions += 1
                self._connected.set()
                if self.failures:
                    log.warning(
                        "docker event stream subscribed again after %d failure(s) over %.1fs",
                        self.failures,
                        connected_at - started,
                    )
                for message in stream:
                    self._deliver(message)
                    if self._closed.is_set():
                        break
            except Exception as error:
                problem = f"failed: {error}"
            finally:
                self._drop_stream()
            if self._closed.is_set():
                break
            now = self._monotonic()
            if connected_at is not None and now - connected_at >= self._healthy_after:
                self.failures = 0
            if not self.failures:
                started = now
            self.failures += 1
            delay = backoff_delay(self.failures, self._initial_backoff, self._max_backoff)
            if logs_failure(self.failures, now - logged_at, self._log_every):
                logged_at = now
                log.warning(
                    "docker event stream %s (%d in a row over %.1fs); subscribing again in %.1fs"
                    " (fewer of these are logged)",
                    problem,
                    self.failures,
                    now - started,
                    delay,
                    extra={"failures": self.failures},
                )
            self.reconnects += 1
            self._closed.wait(delay)

    def _deliver(self, message: Mapping[str, Any]) -> None:
        nano = message.get("timeNano")
        if isinstance(nano, int):
            actor = message.get("Actor") or {}
            key = (nano, str(actor.get("ID") or ""), str(message.get("Action") or ""))
            if nano < self._last_nano or key in self._seen_at_last:
                return
            if nano > self._last_nano:
                self._last_nano = nano
                self._seen_at_last = set()
            self._seen_at_last.add(key)
        event = event_from(message)
        if event is None:
            return
        try:
            self._handler(event)
        except Exception:
            log.exception("runtime event handler failed for %s", event)
