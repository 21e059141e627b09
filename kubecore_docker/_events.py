"""The engine's event stream, on its own client and thread, as ``RuntimeEvent`` calls."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kubecore import RuntimeEvent
from kubecore.labels import MANAGED_LABEL
from kubecore_docker._client import DockerConnection
from kubecore_docker._convert import event_from

log = logging.getLogger(__name__)

EventKey = tuple[int, str, str]


def since_argument(time_nano: int) -> str:
    """The ``since`` the API takes: ``seconds.nanoseconds``."""
    return f"{time_nano // 1_000_000_000}.{time_nano % 1_000_000_000:09d}"


class EventWatcher:
    """Streams ``events(filters={"label": MANAGED_LABEL})``; after a disconnect it subscribes again
    from the last event's time (dropping the repeats) with a bounded, growing delay.

    Give up after ``max_retries`` failed connections in a row (the agent's periodic relist still
    sees every change, only later). ``close`` ends the stream and the thread.
    """

    def __init__(
        self,
        connection: DockerConnection,
        handler: Callable[[RuntimeEvent], None],
        *,
        max_retries: int = 8,
        initial_backoff: float = 0.2,
        max_backoff: float = 5.0,
    ) -> None:
        self._connection = connection
        self._handler = handler
        self._max_retries = max_retries
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._closed = threading.Event()
        self._connected = threading.Event()
        self._lock = threading.Lock()
        self._stream: Any = None
        self._client: Any = None
        self._last_nano = 0
        self._seen_at_last: set[EventKey] = set()
        self.reconnects = 0
        self._thread = threading.Thread(
            target=self._run, name="kubecore-docker-events", daemon=True
        )

    def start(self) -> EventWatcher:
        self._thread.start()
        return self

    def wait_connected(self, timeout: float) -> bool:
        """True once the stream is subscribed (tests use it to avoid racing the first event)."""
        return self._connected.wait(timeout)

    @property
    def alive(self) -> bool:
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
        failures = 0
        while not self._closed.is_set():
            try:
                stream = self._subscribe()
                self._connected.set()
                failures = 0
                for message in stream:
                    self._deliver(message)
                    if self._closed.is_set():
                        break
            except Exception as error:
                if self._closed.is_set():
                    break
                failures += 1
                log.warning(
                    "docker event stream failed (%d/%d): %s",
                    failures,
                    self._max_retries,
                    error,
                    extra={"failures": failures},
                )
            finally:
                self._drop_stream()
            if self._closed.is_set():
                break
            if failures > self._max_retries:
                log.error("docker event stream gave up after %d failures", failures)
                break
            self.reconnects += 1
            delay = min(self._max_backoff, self._initial_backoff * (2 ** max(0, failures - 1)))
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
