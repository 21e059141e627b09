"""The watch of manifest paths: inotify (through ``watchfiles``; its polling where inotify cannot be
used) reports a change of a manifest at once, so the file source polls without waiting for its
interval."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from kubecore._config.listing import watched_directories

logger = logging.getLogger(__name__)

_WATCH_DEBOUNCE_MS = 50
"""watchfiles gathers the events of this many milliseconds into one batch."""
_WATCH_READY_MS = 500
"""watchfiles says it has nothing to report after this long: the first time, the watch is known
to be in place (``ManifestWatch.wait``)."""
_WATCH_POLL_MS = 250
"""The period of watchfiles' own polling, used where inotify cannot be (a full watch table, a
file system without notifications)."""


class ManifestWatch:
    """Watches ``roots`` in a daemon thread and calls ``on_change`` (from that thread) when a file
    of theirs changes. Without ``watchfiles`` it logs that the paths are polled, and ends."""

    def __init__(
        self, roots: Sequence[Path], interval: float, on_change: Callable[[], None]
    ) -> None:
        self._roots = tuple(roots)
        self._absolute_roots = tuple(Path(os.path.abspath(root)) for root in self._roots)
        self._interval = interval
        self._on_change = on_change
        self._stop = threading.Event()
        self._watching = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._watching.clear()
        self._thread = threading.Thread(
            target=self._run, name="kubecore-manifest-watch", daemon=True
        )
        self._thread.start()

    def wait(self, timeout: float) -> bool:
        """Wait (real time) until the watch is in place: a change from now on is reported."""
        return self._watching.wait(timeout)

    def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(5.0)

    def _run(self) -> None:
        try:
            import watchfiles
        except ImportError:
            logger.info(
                "watchfiles is not installed: manifests are polled every %gs", self._interval
            )
            return
        if logging.getLogger("watchfiles").level == logging.NOTSET:
            # it logs every batch of changes at INFO: the source logs what the changes do
            logging.getLogger("watchfiles").setLevel(logging.WARNING)
        directories = watched_directories(self._roots)
        for force_polling in (None, True):  # inotify (watchfiles' choice), then its polling
            try:
                for changes in watchfiles.watch(
                    *directories,
                    watch_filter=None,
                    debounce=_WATCH_DEBOUNCE_MS,
                    step=10,
                    stop_event=self._stop,
                    raise_interrupt=False,
                    force_polling=force_polling,
                    poll_delay_ms=_WATCH_POLL_MS,
                    recursive=False,
                    ignore_permission_denied=True,
                    rust_timeout=_WATCH_READY_MS,
                    yield_on_timeout=True,  # the first (empty) batch: the watch is in place
                ):
                    self._watching.set()
                    if any(self._concerns(Path(path)) for _, path in changes):
                        self._on_change()
                return
            except Exception as error:  # no inotify here, a watch limit, a root gone
                logger.warning(
                    "watching manifests %s failed (%s): %s",
                    ", ".join(str(d) for d in directories),
                    error,
                    "polling them"
                    if force_polling is None
                    else f"checking every {self._interval:g}s",
                )

    def _concerns(self, path: Path) -> bool:
        changed = Path(os.path.abspath(path))
        return any(root in (changed, changed.parent) for root in self._absolute_roots)
