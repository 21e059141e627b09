"""Driving pod sources: polling them on a clock and handing every update to the agent."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from kubecore._config.base import PodSource
from kubecore._config.updates import PodUpdate
from kubecore._util.clock import Clock, SystemClock

logger = logging.getLogger(__name__)


MAX_UPDATES_PER_POLL = 1000


class SourcePoller:
    """Polls sources on a clock and passes every update to ``sink``.

    ``poll_once()`` runs one round (what tests and ``--once`` use); ``start()`` runs rounds every
    ``tick`` seconds in a daemon thread until ``stop()``. A sink or source that raises is logged and
    the round goes on with the next source.
    """

    def __init__(
        self,
        sources: Sequence[PodSource],
        sink: Callable[[PodUpdate], None],
        *,
        clock: Clock | None = None,
        tick: float = 1.0,
    ) -> None:
        names = [source.name for source in sources]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"two sources share the name(s) {', '.join(duplicated)}")
        self._sources = tuple(sources)
        self._sink = sink
        self._clock: Clock = clock or SystemClock()
        self._tick = tick
        self._stopping = threading.Event()
        self._wakeup = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def sources(self) -> tuple[PodSource, ...]:
        """The sources it polls, in order."""
        return self._sources

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the sources it polls, in order."""
        return tuple(source.name for source in self._sources)

    def poll_once(self) -> int:
        """Poll every source once; return how many updates were delivered."""
        delivered = 0
        for source in self._sources:
            for _ in range(MAX_UPDATES_PER_POLL):
                try:
                    update = source.poll(self._clock.monotonic())
                except Exception:
                    logger.exception("pod source %s failed", source.name)
                    break
                if update is None:
                    break
                try:
                    self._sink(update)
                except Exception:
                    logger.exception("delivering an update from %s failed", source.name)
                delivered += 1
        return delivered

    def start(self) -> None:
        """Start each source that has a ``start`` (a file watch, say) and poll them all on a
        background thread, every ``tick`` seconds and whenever a source says it changed. Raises
        ``RuntimeError`` if it is already running."""
        if self._thread is not None:
            raise RuntimeError("the source poller is already running")
        self._stopping.clear()
        for source in self._sources:
            notify_changes = getattr(source, "notify_changes", None)
            if callable(notify_changes):
                notify_changes(self.wake)
            start = getattr(source, "start", None)
            if callable(start):
                start()
        self._thread = threading.Thread(target=self._run, name="kubecore-sources", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Poll now (a source saw a change), not at the next tick."""
        self._wakeup.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop polling (waiting up to ``timeout`` seconds for the thread) and close each source
        that has a ``close``. Stopping a poller that is not running only closes the sources."""
        self._stopping.set()
        self._wakeup.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        for source in self._sources:
            close = getattr(source, "close", None)
            if callable(close):
                close()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wakeup.clear()
            self.poll_once()
            self._clock.wait(self._wakeup, self._tick)
