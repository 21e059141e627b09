"""The node's events as its Kubernetes API serves them: aggregated as the kubelet's recorder
aggregates them before they reach the API server (client-go ``tools/record``,
``EventCorrelator``), kept in memory (bounded) with a resourceVersion for watches.

Three rules, applied in this order to each recorded event, as upstream applies them:

* **aggregation**: events of one object with the same type and reason but different messages
  are similar; once ``AGGREGATE_MAX_EVENTS`` distinct messages were seen within
  ``AGGREGATE_INTERVAL`` seconds, the next ones go to one event whose message reads
  ``(combined from similar events): <the newest message>``;
* **observation**: an event equal to an earlier one (same object and field path, type, reason,
  message; or the same combined event) updates it: ``count`` + 1, ``lastTimestamp`` moved,
  ``firstTimestamp`` and its name kept;
* **spam filter**: a token bucket per object (``SPAM_BURST`` events, then one every
  ``1 / SPAM_QPS`` seconds); an event over it is counted but not published, and the next one
  that passes carries the count.

Every cache is a bounded LRU (``CACHE_SIZE`` keys), and the log keeps the newest ``max_size``
aggregated events. Each published change (a new event, an update, an event dropped for room)
takes the next resourceVersion."""

from __future__ import annotations

import collections
import threading
from collections.abc import Hashable
from typing import Generic, TypeVar

import attrs

from kubecore._contract.values import Event, ObjectReference

AGGREGATE_MAX_EVENTS = 10
"""Distinct messages of similar events before they are combined (``defaultAggregateMaxEvents``)."""
AGGREGATE_INTERVAL = 600.0
"""Seconds similar events are remembered (``defaultAggregateIntervalInSeconds``)."""
SPAM_BURST = 25
"""Events of one object published at once before the filter holds them (``defaultSpamBurst``)."""
SPAM_QPS = 1.0 / 300.0
"""Tokens refilled per second per object (``defaultSpamQPS``)."""
CACHE_SIZE = 4096
"""Keys each of the correlator's caches keeps (``maxLruCacheEntries``)."""
COMBINED_PREFIX = "(combined from similar events): "

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Lru(Generic[K, V]):
    """A dict that forgets its least recently written key past ``size`` keys."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: collections.OrderedDict[K, V] = collections.OrderedDict()

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def _object_key(ref: ObjectReference) -> tuple[str, ...]:
    return (ref.kind, ref.namespace, ref.name, ref.uid)


def similar_key(event: Event) -> tuple[str, ...]:
    """What similar events share (upstream's ``EventAggregatorByReasonFunc``): the object
    (without its field path), the type and the reason."""
    return (*_object_key(event.involved_object), str(event.type), event.reason)


def same_key(event: Event) -> tuple[str, ...]:
    """What equal events share (upstream's ``getEventKey``): the object with its field path,
    the type, the reason and the message."""
    ref = event.involved_object
    return (*_object_key(ref), ref.field_path, str(event.type), event.reason, event.message)


@attrs.frozen
class Observation:
    """What one recorded event became: the aggregated event it updates or starts."""

    key: tuple[str, ...]
    """The aggregated event's correlation key (equal events, or the combined ones)."""
    event: Event
    """The newest occurrence, its message combined when it was aggregated."""
    count: int
    first_timestamp: float
    published: bool
    """False when the spam filter held it back (counted, not shown)."""


@attrs.define
class _Similar:
    messages: set[str]
    last: float


@attrs.define
class _Bucket:
    tokens: float
    at: float


@attrs.define
class _Seen:
    count: int
    first: float


class EventCorrelator:
    """The three rules of the module doc, over bounded caches (not thread-safe: ``EventLog``
    holds the lock)."""

    def __init__(
        self,
        *,
        max_events: int = AGGREGATE_MAX_EVENTS,
        interval: float = AGGREGATE_INTERVAL,
        burst: int = SPAM_BURST,
        qps: float = SPAM_QPS,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        self._max_events = max_events
        self._interval = interval
        self._burst = burst
        self._qps = qps
        self._similar: _Lru[tuple[str, ...], _Similar] = _Lru(cache_size)
        self._seen: _Lru[tuple[str, ...], _Seen] = _Lru(cache_size)
        self._buckets: _Lru[tuple[str, ...], _Bucket] = _Lru(cache_size)

    def correlate(self, event: Event) -> Observation:
        """The aggregated event ``event`` updates or starts (at ``event.timestamp``)."""
        key, event = self._aggregate(event)
        now = event.timestamp
        seen = self._seen.get(key)
        if seen is None:
            seen = _Seen(0, now)
        seen.count += 1
        self._seen.put(key, seen)
        return Observation(key, event, seen.count, seen.first, self._allow(event, now))

    def _aggregate(self, event: Event) -> tuple[tuple[str, ...], Event]:
        now = event.timestamp
        similar_to = similar_key(event)
        similar = self._similar.get(similar_to)
        if similar is None or now - similar.last > self._interval:
            similar = _Similar(set(), now)
        similar.messages.add(event.message)
        similar.last = now
        self._similar.put(similar_to, similar)
        if len(similar.messages) < self._max_events:
            return same_key(event), event
        similar.messages.pop()  # the set never grows past the threshold
        combined = attrs.evolve(event, message=COMBINED_PREFIX + event.message)
        return ("combined", *similar_to), combined

    def _allow(self, event: Event, now: float) -> bool:
        """The spam filter's token bucket of the event's object."""
        key = _object_key(event.involved_object)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(float(self._burst), now)
        refill = max(0.0, now - bucket.at) * self._qps
        bucket.tokens = min(float(self._burst), bucket.tokens + refill)
        bucket.at = max(bucket.at, now)
        self._buckets.put(key, bucket)
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True


@attrs.frozen
class AggregatedEvent:
    """One event as the API serves it: the newest occurrence, how often it happened, when
    first and last, its name and resourceVersion."""

    name: str
    event: Event
    count: int
    first_timestamp: float
    version: int

    @property
    def last_timestamp(self) -> float:
        """When the newest of the similar events was seen."""
        return self.event.timestamp


@attrs.frozen
class EventChange:
    """One change of the log, as a watch shows it (ADDED, MODIFIED or DELETED)."""

    version: int
    type: str
    entry: AggregatedEvent


class HistoryExpired(Exception):
    """A watch asked for changes after a version the log no longer keeps (or never handed
    out)."""


class EventLog:
    """The aggregated events of the node (an ``EventRecorder``; thread-safe): the newest
    ``max_size`` of them, and as many of their changes for watches."""

    def __init__(self, max_size: int = 1000, correlator: EventCorrelator | None = None) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self.max_size = max_size
        self._correlator = correlator or EventCorrelator()
        self._cond = threading.Condition()
        self._version = 1
        self._by_key: collections.OrderedDict[tuple[str, ...], AggregatedEvent] = (
            collections.OrderedDict()
        )
        self._names: set[str] = set()
        self._changes: collections.deque[EventChange] = collections.deque(maxlen=max_size)

    @property
    def version(self) -> int:
        """The resourceVersion of the newest change."""
        with self._cond:
            return self._version

    def record(self, event: Event) -> None:
        with self._cond:
            seen = self._correlator.correlate(event)
            if not seen.published:
                return
            old = self._by_key.pop(seen.key, None)
            name = old.name if old is not None else self._new_name(seen.event)
            self._version += 1
            entry = AggregatedEvent(
                name, seen.event, seen.count, seen.first_timestamp, self._version
            )
            self._by_key[seen.key] = entry
            self._names.add(name)
            self._changes.append(EventChange(self._version, "MODIFIED" if old else "ADDED", entry))
            while len(self._by_key) > self.max_size:
                _, dropped = self._by_key.popitem(last=False)
                self._names.discard(dropped.name)
                self._version += 1
                dropped = attrs.evolve(dropped, version=self._version)
                self._changes.append(EventChange(self._version, "DELETED", dropped))
            self._cond.notify_all()

    def _new_name(self, event: Event) -> str:
        """``<object>.<nanoseconds in hex>`` as the recorder names events, unique here."""
        stamp = int(event.timestamp * 1e9)
        while f"{event.involved_object.name}.{stamp:x}" in self._names:
            stamp += 1
        return f"{event.involved_object.name}.{stamp:x}"

    def events(
        self,
        *,
        namespace: str | None = None,
        name: str | None = None,
        reason: str | None = None,
    ) -> tuple[list[AggregatedEvent], int]:
        """The aggregated events, least recently updated first (optionally only those of one
        namespace, object ``name`` and/or reason), with the version of exactly that list."""
        with self._cond:
            entries = list(self._by_key.values())
            version = self._version
        return [
            e
            for e in entries
            if (namespace is None or e.event.involved_object.namespace == namespace)
            and (name is None or e.event.involved_object.name == name)
            and (reason is None or e.event.reason == reason)
        ], version

    def changes_after(self, version: int) -> list[EventChange]:
        """The changes since ``version``; ``HistoryExpired`` when they are no longer kept (or
        ``version`` was handed out before the agent restarted)."""
        with self._cond:
            if version > self._version:
                raise HistoryExpired(f"too large resource version: {version} ({self._version})")
            if version == self._version:
                return []
            if not self._changes or self._changes[0].version > version + 1:
                raise HistoryExpired(f"too old resource version: {version} ({self._version})")
            return [change for change in self._changes if change.version > version]

    def wait_past(self, version: int, timeout: float) -> None:
        """Return when a change newer than ``version`` is there, or after ``timeout``."""
        with self._cond:
            self._cond.wait_for(lambda: self._version > version, timeout)

    def __len__(self) -> int:
        with self._cond:
            return len(self._by_key)
