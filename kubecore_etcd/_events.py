"""The event recorder that writes the agent's events to etcd, each on a lease so it expires."""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any

from kubecore.events import Event
from kubecore_etcd._client import MAX_TXN_OPS, EtcdClient
from kubecore_etcd._encoding import event_json
from kubecore_etcd._keys import DEFAULT_PREFIX, clean_prefix

logger = logging.getLogger(__name__)

DEFAULT_EVENT_TTL = 3600
"""Seconds an event lives in etcd (the lease it is written on), as the API server keeps one."""


class EtcdEventRecorder:
    """An ``EventRecorder`` that writes the agent's events to
    ``<prefix>/events/<namespace>/<name>.<id>``, each on a lease so that it expires by itself.

    ``record`` never blocks: it queues the event, or drops it and counts it in ``dropped`` when
    ``queue_size`` events are already waiting. A thread of its own writes the queue in
    transactions of up to ``batch`` events every ``interval`` seconds. Events share a lease that
    is replaced every tenth of ``ttl``, so each event lives between 0.9 and 1 times ``ttl``
    (Kubernetes' ``--event-ttl``, default 1 h). A failed write drops its batch (counted):
    events are best effort and must never hold the agent back.
    """

    def __init__(
        self,
        client: EtcdClient,
        node: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl: int = DEFAULT_EVENT_TTL,
        queue_size: int = 1000,
        batch: int = MAX_TXN_OPS,
        interval: float = 1.0,
    ) -> None:
        self._client = client
        self._node = node
        self._prefix = clean_prefix(prefix)
        self._ttl = ttl
        self._queue: collections.deque[Event] = collections.deque()
        self._queue_size = queue_size
        self._batch = max(1, min(batch, MAX_TXN_OPS))
        self._interval = interval
        self._lock = threading.Lock()
        self._lease_id = 0
        self._lease_until = 0.0
        self._sequence = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.written = 0
        self.dropped = 0
        """Events dropped: the queue was full, or their write failed."""

    def record(self, event: Event) -> None:
        with self._lock:
            if len(self._queue) >= self._queue_size:
                self.dropped += 1
                return
            self._queue.append(event)

    @property
    def queued(self) -> int:
        """How many events wait to be written."""
        with self._lock:
            return len(self._queue)

    def start(self) -> None:
        """Start writing the recorded events on a background thread (idempotent)."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._loop, name="kubecore-etcd-events", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self._client.config.timeout * 2)
        self.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.flush()

    def flush(self) -> int:
        """Write what is queued now; return how many events were written."""
        done = 0
        while True:
            with self._lock:
                batch = [self._queue.popleft() for _ in range(min(self._batch, len(self._queue)))]
            if not batch:
                return done
            try:
                self._write(batch)
            except Exception as error:  # best effort: never retried, never raised
                with self._lock:
                    self.dropped += len(batch)
                logger.warning("etcd: %d event(s) dropped: %s", len(batch), error)
                return done
            self.written += len(batch)
            done += len(batch)

    def _key(self, event: Event) -> str:
        self._sequence += 1
        ref = event.involved_object
        unique = f"{time.time_ns():x}{self._sequence:04x}"
        return f"{self._prefix}/events/{ref.namespace or 'default'}/{ref.name}.{unique}"

    def _lease(self) -> int:
        now = time.monotonic()
        if not self._lease_id or now >= self._lease_until:

            async def op(client: Any) -> int:
                lease = await client.lease(self._ttl)
                return int(lease.id)

            self._lease_id = self._client.run(op)
            self._lease_until = now + self._ttl / 10
        return self._lease_id

    def _write(self, batch: list[Event]) -> None:
        lease = self._lease()
        documents = []
        for event in batch:
            key = self._key(event)
            name = key.rsplit("/", 1)[1]
            documents.append((key, event_json(event, self._node, name)))

        async def op(client: Any) -> None:
            tx = client.transactions
            ops = [tx.put(key.encode(), value, lease) for key, value in documents]
            await client.transaction(compare=[], success=ops, failure=[])

        self._client.run(op)
