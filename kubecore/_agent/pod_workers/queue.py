"""Pod workers: at most one sync of a pod at a time, and a newer request is never lost.

A pod's state is changed only by its worker (the sync runs under the pod's busy mark); other
threads do not touch it: they post to the ``Inbox`` and wake the loop.

Each pod UID has at most one sync running. A request that arrives while the pod is busy is kept in
the pod's single pending slot (a newer request replaces an older pending one: the newest wins) and
runs as soon as the current sync ends. Syncs run on a bounded thread pool, or in the caller's thread
(``inline=True``), which is what virtual-time tests and ``Kubelet.sync`` use.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


class PodWorkers(Generic[T]):
    def __init__(
        self,
        sync: Callable[[str, T], None],
        *,
        max_workers: int = 8,
        on_replaced: Callable[[str], None] | None = None,
        name: str = "kubecore-pod-worker",
    ) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._sync = sync
        self._on_replaced = on_replaced
        self._max_workers = max_workers
        self._name = name
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._busy: set[str] = set()
        self._pending: dict[str, T] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False
        self.replaced = 0
        """How many pending requests a newer one replaced before they ran."""

    def dispatch(self, uid: str, item: T, *, inline: bool = False) -> bool:
        """Sync ``uid`` with ``item``: now (inline), on the pool, or after the running sync.

        Returns True if the request started (inline: ran) now, False if it was queued behind a
        running sync of the same pod (or dropped because the workers are shut down).
        """
        with self._lock:
            if self._closed:
                logger.debug("pod workers closed; dropping work for %s", uid)
                return False
            if uid in self._busy:
                if uid in self._pending:
                    self.replaced += 1
                    if self._on_replaced is not None:
                        self._on_replaced(uid)
                self._pending[uid] = item
                return False
            self._busy.add(uid)
            if not inline:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(
                        max_workers=self._max_workers, thread_name_prefix=self._name
                    )
                self._pool.submit(self._run, uid, item)
                return True
        self._run(uid, item)
        return True

    def _run(self, uid: str, item: T) -> None:
        # Bounded: each pass consumes one pending item, and a new one needs a new dispatch.
        while True:
            try:
                self._sync(uid, item)
            except Exception:
                logger.exception("pod worker for %s failed", uid)
            with self._lock:
                if uid in self._pending and not self._closed:
                    item = self._pending.pop(uid)
                    continue
                self._pending.pop(uid, None)
                self._busy.discard(uid)
                self._idle.notify_all()
                return

    def is_busy(self, uid: str) -> bool:
        with self._lock:
            return uid in self._busy

    @property
    def busy_count(self) -> int:
        with self._lock:
            return len(self._busy)

    @property
    def closed(self) -> bool:
        """``shutdown`` was called and not undone by ``reopen``: work is refused."""
        return self._closed

    def wait_idle(self, timeout: float) -> bool:
        """Wait (real time) until no sync runs or is pending; True if that happened in time."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._busy, timeout=timeout)

    def shutdown(self, timeout: float = 10.0) -> bool:
        """Drop pending requests, let running syncs finish (up to ``timeout``), stop the pool."""
        with self._lock:
            self._closed = True
            self._pending.clear()
        drained = self.wait_idle(timeout)
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=drained, cancel_futures=True)
        return drained

    def reopen(self) -> None:
        """Accept work again after ``shutdown``."""
        with self._lock:
            self._closed = False


class Inbox:
    """Messages to pod workers from other threads (runtime events, probe results): the UIDs of
    pods that must be synced at the next pass whatever their snapshot entry says. The pass takes
    them all at once (one lock per pass, none per pod), so a message posted after the take is
    seen by the next pass; the poster wakes the loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._uids: set[str] = set()

    def post(self, uid: str) -> None:
        with self._lock:
            self._uids.add(uid)

    def take(self) -> AbstractSet[str]:
        if not self._uids:  # a racy peek is fine: a post after it is taken by the next pass
            return _NOTHING
        with self._lock:
            uids, self._uids = self._uids, set()
        return uids


_NOTHING: frozenset[str] = frozenset()
