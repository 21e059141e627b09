"""The status sink: what the agent sees of its pods written back to etcd, and its node kept there
on a lease."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Protocol

import attrs

from kubecore import ChangeSubscription, Kubelet, Pod, SubscriptionClosed
from kubecore.runtime import SystemClock
from kubecore.server import TokenBucket, node_document
from kubecore.v1 import PodStatus
from kubecore_etcd._client import MAX_TXN_OPS, EtcdClient, EtcdUnavailable
from kubecore_etcd._encoding import document_digest, document_head, encode_json, with_status
from kubecore_etcd._keys import DEFAULT_PREFIX, node_key, status_key, status_prefix

logger = logging.getLogger(__name__)

DEFAULT_LEASE_TTL = 40
"""Seconds the node key's lease lives unless kept alive: a dead agent's node goes after it."""
DEFAULT_LEASE_REFRESH = 10.0
"""Seconds between the keep-alives of the node key's lease."""


class PodReport(Protocol):
    """What the sink reads of each of ``Kubelet.views.pod_reports()``."""

    @property
    def pod(self) -> Pod: ...

    @property
    def status(self) -> PodStatus | None: ...

    @property
    def first_seen(self) -> float: ...

    def as_pod(self) -> Pod: ...

    def reported_status(self) -> PodStatus: ...


@attrs.define
class SinkStats:
    """What the status sink has done since it started: its writes, transactions, failures and
    lease keep-alives (read by its metrics)."""

    puts: int = 0
    deletes: int = 0
    transactions: int = 0
    failures: int = 0
    keepalives: int = 0


class EtcdStatusSink:
    """Writes what the agent sees back to etcd, on a thread of its own.

    It subscribes to the agent's pod changes (``Kubelet.subscribe``): when one comes (and
    until the agent's sources have all reported) it reads ``kubelet.views.pod_reports()`` and queues
    the status document of each pod whose document changed since it was last written (one
    pending write per pod: the latest), and a delete of the status key of each pod that is gone
    (once the agent's sources have all reported, so a starting agent does not wipe statuses it
    has not rebuilt yet). A quiet node costs no pod reads; the node key is looked at every
    ``interval`` seconds. Pending writes
    go out in transactions of up to ``batch`` operations, at most ``qps`` transactions a second
    with bursts of ``burst``. A failed transaction stays pending and is retried: while etcd is
    down nothing is lost but intermediate states, and the latest status lands when it is back.

    It also keeps ``<prefix>/nodes/<node>`` on a lease of ``lease_ttl`` seconds refreshed every
    ``lease_refresh`` seconds (a new lease and a rewrite when the old one expired), and rewrites
    the node document when it changes (readiness from ``kubelet.views.healthz()``).
    """

    def __init__(
        self,
        kubelet: Kubelet,
        client: EtcdClient,
        node: str | None = None,
        *,
        prefix: str = DEFAULT_PREFIX,
        interval: float = 1.0,
        qps: float = 5.0,
        burst: int = 10,
        batch: int = MAX_TXN_OPS,
        lease_ttl: int = DEFAULT_LEASE_TTL,
        lease_refresh: float = DEFAULT_LEASE_REFRESH,
        revoke_on_close: bool = True,
    ) -> None:
        self._kubelet = kubelet
        self._client = client
        self._node = node or kubelet.config.node_name
        self._prefix = prefix
        self._status_prefix = status_prefix(prefix, self._node)
        self._interval = interval
        self._limiter = TokenBucket(qps, burst, SystemClock())
        self._batch = max(1, min(batch, MAX_TXN_OPS))
        self._lease_ttl = lease_ttl
        self._lease_refresh = lease_refresh
        self._revoke_on_close = revoke_on_close
        self._seen: dict[str, tuple[Pod, PodStatus | None]] = {}
        """Status key -> the desired pod and status object (the agent's own, not copies) last
        turned into a document: while both are the same objects the document is not made
        again."""
        self._written: dict[str, bytes] | None = None
        """Status key -> the digest (``document_digest``) of the document it holds; None until
        the existing keys were read. Digests, not documents: a node holds one per pod."""
        self._heads: dict[str, tuple[Pod, float, bytes]] = {}
        """Status key -> the desired pod, its first-seen time and the head of its document
        (``document_head``), kept while the pod is Pending: its status is about to change
        again, and only the status is encoded then."""
        self._pending: dict[str, bytes | None] = {}
        """Status key -> the document to write (None: delete), latest only."""
        self._lease_id = 0
        self._lease_due = 0.0
        self._node_written = b""
        self._node_health: tuple[bool, str] | None = None
        """The (ready, reason) the last node document was made from."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._changes: ChangeSubscription | None = None
        self._stale = True
        """Pods may have changed since the last look (a change came, or a look failed)."""
        self.stats = SinkStats()

    @property
    def node(self) -> str:
        """The node whose pods' status and Node document it writes."""
        return self._node

    @property
    def pending(self) -> int:
        """How many pods' status wait to be written."""
        with self._lock:
            return len(self._pending)

    @property
    def lease_id(self) -> int:
        """The id of the lease the node key lives on (0 before it is granted)."""
        return self._lease_id

    def start(self) -> None:
        """Start writing on a background thread; ``RuntimeError`` if it is already running."""
        if self._thread is not None:
            raise RuntimeError("the etcd status sink is already running")
        self._stop.clear()
        self._changes = self._kubelet.subscribe(events=False, initial=False, maxsize=64)
        self._stale = True
        self._thread = threading.Thread(target=self._loop, name="kubecore-etcd-status", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._changes is not None:
            self._changes.close()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self._client.config.timeout * 2)
        if self._revoke_on_close and self._lease_id:
            lease, self._lease_id = self._lease_id, 0
            try:
                self._client.run(lambda client: client.revoke_lease(lease))
            except Exception:
                logger.debug("revoking the node lease failed", exc_info=True)

    def _loop(self) -> None:
        changes = self._changes
        assert changes is not None
        while not self._stop.is_set():
            try:
                self._round()
            except Exception:
                logger.exception("writing status to etcd failed")
            try:
                if changes.get(self._interval) is not None:
                    self._stale = True
                    while changes.get(0) is not None:  # one look for all that came
                        pass
            except SubscriptionClosed:
                return

    def _round(self) -> None:
        """``sync_once``, with the pods looked at only when they may have changed."""
        try:
            self._keep_node()
        except EtcdUnavailable as error:
            self.stats.failures += 1
            logger.warning("etcd: keeping the node key failed: %s", error)
        if self._stale or self._written is None or not self._kubelet.sources_ready():
            self._stale = False
            if not self._queue_changes():
                self._stale = True
        self._flush()

    def sync_once(self) -> bool:
        """One round: node lease, status diff, as many transactions as the rate allows.
        True when nothing is left pending."""
        try:
            self._keep_node()
        except EtcdUnavailable as error:
            self.stats.failures += 1
            logger.warning("etcd: keeping the node key failed: %s", error)
        self._queue_changes()
        return self._flush()

    # --- status ---------------------------------------------------------------------------

    def _queue_changes(self) -> bool:
        """Queue what changed; False when the status keys could not be read first."""
        if self._written is None:
            try:
                existing, _ = self._client.get_prefix(self._status_prefix)
            except EtcdUnavailable as error:
                self.stats.failures += 1
                logger.warning("etcd: reading the status keys failed: %s", error)
                return False
            self._written = {key: document_digest(value) for key, value in existing.items()}
        reports = self._kubelet.views.pod_reports()
        ready = self._kubelet.sources_ready()
        current: set[str] = set()
        with self._lock:
            for report in reports:
                meta = report.pod.metadata
                key = status_key(self._prefix, self._node, meta.namespace, meta.name)
                current.add(key)
                seen = self._seen.get(key)
                if (
                    seen is not None
                    and seen[0] is report.pod
                    and seen[1] is report.status
                    and key in self._written
                ):
                    continue
                document = self._document(key, report)
                self._seen[key] = (report.pod, report.status)
                if self._written.get(key) == document_digest(document):
                    self._pending.pop(key, None)
                else:
                    self._pending[key] = document
            for key in self._seen.keys() - current:
                del self._seen[key]
                self._heads.pop(key, None)
            if ready:
                for key in self._written.keys() - current:
                    self._pending[key] = None
        return True

    def _document(self, key: str, report: PodReport) -> bytes:
        head = self._heads.get(key)
        if head is None or head[0] is not report.pod or head[1] != report.first_seen:
            head = (report.pod, report.first_seen, document_head(report.as_pod()))
        status = report.reported_status()
        if status.phase == "Pending":
            self._heads[key] = head
        else:
            self._heads.pop(key, None)
        return with_status(head[2], status)

    def _flush(self) -> bool:
        while True:
            with self._lock:
                if not self._pending:
                    return True
                batch = list(self._pending.items())[: self._batch]
            if not self._limiter.try_acquire():
                return False
            try:
                self._write(batch)
            except EtcdUnavailable as error:
                self.stats.failures += 1
                logger.warning("etcd: writing %d statuses failed: %s", len(batch), error)
                return False
            assert self._written is not None
            with self._lock:
                for key, document in batch:
                    if self._pending.get(key, b"") == document:
                        del self._pending[key]
                    if document is None:
                        self._written.pop(key, None)
                    else:
                        self._written[key] = document_digest(document)

    def _write(self, batch: list[tuple[str, bytes | None]]) -> None:
        async def op(client: Any) -> None:
            tx = client.transactions
            ops = [
                tx.delete(key.encode()) if document is None else tx.put(key.encode(), document)
                for key, document in batch
            ]
            await client.transaction(compare=[], success=ops, failure=[])

        self._client.run(op)
        self.stats.transactions += 1
        self.stats.puts += sum(1 for _, document in batch if document is not None)
        self.stats.deletes += sum(1 for _, document in batch if document is None)

    # --- the node and its lease -----------------------------------------------------------

    def _keep_node(self) -> None:
        health = self._kubelet.views.healthz()
        now = time.monotonic()
        refresh = bool(self._lease_id) and now >= self._lease_due
        if refresh:
            if self._refresh_lease():
                self._lease_due = now + self._lease_refresh
            else:
                logger.warning("etcd: the node lease of %s expired; granting a new one", self._node)
                self._lease_id = 0
        if not self._lease_id:
            self._lease_id = self._grant_lease()
            self._lease_due = now + self._lease_refresh
            self._node_written = b""
        if not refresh and self._node_written and health == self._node_health:
            return  # the rest of the document (versions, capacity) is checked at each refresh
        ready, reason = self._node_health = health
        document = encode_json(node_document(self._kubelet, self._node, ready=ready, reason=reason))
        if document != self._node_written:
            self._client.put(node_key(self._prefix, self._node), document, lease=self._lease_id)
            self._node_written = document

    def _grant_lease(self) -> int:
        async def op(client: Any) -> int:
            lease = await client.lease(self._lease_ttl)
            return int(lease.id)

        return self._client.run(op)

    def _refresh_lease(self) -> bool:
        """Keep the lease alive; False when it has expired."""
        lease_id = self._lease_id

        async def op(client: Any) -> int:
            reply = await client.refresh_lease(lease_id)
            return int(reply.TTL) if reply is not None else 0

        ttl = self._client.run(op)
        self.stats.keepalives += 1
        return ttl > 0
