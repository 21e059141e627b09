"""Changes pushed to the agent's embedders: what an informer gives a Go program, for Python.

``ChangeFeed`` learns from the rooms when a pod may have changed (a worker published its
status, the desired pods were taken again) and when an event was recorded, and hands each real
change to every ``ChangeSubscription``: ``PodChange`` (ADDED, MODIFIED, DELETED, the pod as
``Kubelet.pods`` shows it) and ``EventChange``. A subscription is a bounded queue, read as an
iterator or handed to a callback on a thread of its own, so a slow consumer never blocks a
sync: once its queue is full, what it missed is dropped and it reads one ``FellBehind``
instead (as a watch's 410), after which it re-lists (``Kubelet.pods``) and goes on with the
changes from then.

Changes are found by comparing each pod's report with the one last delivered (the same objects
until a worker publishes new ones), so a pass that changes nothing delivers nothing, and each
change is delivered once, in the order the feed saw it. With no subscriber the feed does nothing
but return.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal

import attrs

from kubecore._agent.desired import PodReport
from kubecore._contract.errors import SubscriptionClosed
from kubecore._contract.values import Event
from kubecore._model.v1 import Pod

logger = logging.getLogger(__name__)

ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]
DEFAULT_QUEUE = 1024
"""How many changes a subscription holds for its consumer before it falls behind."""


@attrs.frozen
class PodChange:
    """A pod was added to the node's pods, changed (its spec or status), or left them."""

    type: ChangeType
    pod: Pod
    """As ``Kubelet.pods()`` shows it (for DELETED, as it was last shown)."""
    revision: int
    """The feed's count of changes, the same for every subscriber: pod changes come in its
    order, and so do events (an event and a pod change may pass each other)."""


@attrs.frozen
class EventChange:
    """The agent recorded an event."""

    event: Event
    revision: int


@attrs.frozen
class FellBehind:
    """The subscriber did not keep up and ``dropped`` changes were dropped: re-list the pods
    (``Kubelet.pods``); the changes after this one follow from the present."""

    dropped: int
    revision: int


Change = PodChange | EventChange | FellBehind


class ChangeSubscription:
    """One consumer's changes (``Kubelet.subscribe``): iterate it, or ``get`` one at a time;
    ``close`` it when done (it is a context manager too). Thread-safe."""

    def __init__(
        self, feed: ChangeFeed, *, pods: bool, events: bool, maxsize: int = DEFAULT_QUEUE
    ) -> None:
        if maxsize < 1:
            raise ValueError(f"a subscription's queue holds at least 1 change, not {maxsize}")
        self.pods = pods
        self.events = events
        self._feed = feed
        self._queue: queue.Queue[Change | None] = queue.Queue(maxsize + 1)
        self._maxsize = maxsize
        self._lock = threading.Lock()
        self._dropped = 0
        self._dropped_revision = 0
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called (by the consumer, or by the agent closing)."""
        return self._closed

    def get(self, timeout: float | None = None) -> Change | None:
        """The next change, waiting up to ``timeout`` seconds (None: for ever); None when none
        came in time. Raises ``SubscriptionClosed`` once closed and drained."""
        if self._closed and self._queue.empty():
            raise SubscriptionClosed("the subscription is closed")
        try:
            change = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if change is None:
            self._queue.put_nowait(None)  # for the next reader, too
            raise SubscriptionClosed("the subscription is closed")
        if self._dropped:
            with self._lock:
                self._say_dropped()  # there is room now
        return change

    def __iter__(self) -> Iterator[Change]:
        """Every change until the subscription is closed."""
        while True:
            try:
                change = self.get()
            except SubscriptionClosed:
                return
            if change is not None:
                yield change

    def close(self) -> None:
        """Stop receiving changes; a reader waiting in ``get`` or iterating ends."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._feed.unsubscribe(self)
        self._queue_end()

    def __enter__(self) -> ChangeSubscription:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- the feed's side (under the feed's lock)

    def offer(self, change: Change) -> None:
        """Queue ``change`` without waiting: a full queue drops it, and the consumer is told
        once it catches up."""
        with self._lock:
            if self._closed:
                return
            self._say_dropped()
            if self._queue.qsize() >= self._maxsize:
                self._dropped += 1
                self._dropped_revision = change.revision
                return
            self._queue.put_nowait(change)

    def _say_dropped(self) -> None:
        """Once there is room, queue what was missed (after the older changes it holds, before
        any newer one). Called with ``_lock`` held."""
        if self._dropped and not self._closed and self._queue.qsize() < self._maxsize:
            self._queue.put_nowait(FellBehind(self._dropped, self._dropped_revision))
            self._dropped = 0

    def _queue_end(self) -> None:
        # The queue keeps one place free for its end, so this never waits.
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)

    def deliver_to(self, callback: Callable[[Change], object]) -> None:
        """Hand every change to ``callback`` on a thread of this subscription's own, until it
        is closed (an exception from the callback is logged, and delivery goes on)."""

        def run() -> None:
            for change in self:
                try:
                    callback(change)
                except Exception:
                    logger.exception("a change subscriber's callback failed")

        self._thread = threading.Thread(target=run, name="kubecore-changes", daemon=True)
        self._thread.start()


@attrs.define
class _Shown:
    pod: Pod
    status: object
    rendered: Pod


class ChangeFeed:
    """The agent's changes, fanned out to subscriptions. ``lookup`` gives one pod's report and
    ``reports`` all of them (``kubecore._agent.desired.DesiredPods``)."""

    def __init__(
        self,
        lookup: Callable[[str], PodReport | None],
        reports: Callable[[], Sequence[PodReport]],
    ) -> None:
        self._lookup = lookup
        self._reports = reports
        self._lock = threading.Lock()
        """Held while pods are compared (it may wait for the desired pods' lock)."""
        self._event_lock = threading.Lock()
        """Held while an event is handed out (its recorder may hold the desired pods' lock)."""
        self._subscriptions: tuple[ChangeSubscription, ...] = ()
        self._shown: dict[str, _Shown] = {}
        self._revisions = itertools.count(1)

    def subscribe(
        self,
        *,
        pods: bool = True,
        events: bool = True,
        maxsize: int = DEFAULT_QUEUE,
        initial: bool = True,
        callback: Callable[[Change], object] | None = None,
    ) -> ChangeSubscription:
        """A new subscription; with ``initial`` its first changes are an ADDED for each pod
        the node has now (as a watch's initial events)."""
        subscription = ChangeSubscription(self, pods=pods, events=events, maxsize=maxsize)
        with self._lock:
            if not any(s.pods for s in self._subscriptions) and pods:
                self._catch_up()
            if pods and initial:
                for shown in self._shown.values():
                    revision = next(self._revisions)
                    subscription.offer(PodChange("ADDED", shown.rendered, revision))
            self._subscriptions = (*self._subscriptions, subscription)
        if callback is not None:
            subscription.deliver_to(callback)
        return subscription

    def unsubscribe(self, subscription: ChangeSubscription) -> None:
        with self._lock:
            self._subscriptions = tuple(s for s in self._subscriptions if s is not subscription)
            if not any(s.pods for s in self._subscriptions):
                self._shown = {}

    def close(self) -> None:
        """Close every subscription (the agent is closing)."""
        for subscription in self._subscriptions:
            subscription.close()

    # --- what the rooms say

    def pods_changed(self, uids: Iterable[str]) -> None:
        """These pods may have changed (a worker published their status)."""
        if not self._subscriptions:
            return
        with self._lock:
            for uid in uids:
                self._compare(uid, self._lookup(uid))

    def all_changed(self) -> None:
        """Any pod may have come, changed or gone (the desired pods were taken again)."""
        if not self._subscriptions:
            return
        with self._lock:
            reports = {report.pod.uid: report for report in self._reports()}
            for uid in [uid for uid in self._shown if uid not in reports]:
                self._compare(uid, None)
            for uid, report in reports.items():
                self._compare(uid, report)

    def record(self, event: Event) -> None:
        """An event was recorded (the feed is one of the agent's recorders)."""
        if not self._subscriptions:
            return
        with self._event_lock:
            change = EventChange(event, next(self._revisions))
            for subscription in self._subscriptions:
                if subscription.events:
                    subscription.offer(change)

    # --- under the lock

    def _catch_up(self) -> None:
        """What the node shows now, as the first pod subscriber's starting point."""
        self._shown = {
            report.pod.uid: _Shown(report.pod, report.status, report.as_pod())
            for report in self._reports()
        }

    def _compare(self, uid: str, report: PodReport | None) -> None:
        if not any(s.pods for s in self._subscriptions):
            return
        shown = self._shown.get(uid)
        if report is None:
            if shown is not None:
                del self._shown[uid]
                self._publish("DELETED", shown.rendered)
            return
        if (
            shown is not None
            and (shown.pod is report.pod or shown.pod == report.pod)
            and (shown.status is report.status or shown.status == report.status)
        ):
            shown.pod, shown.status = report.pod, report.status
            return
        rendered = report.as_pod()
        self._shown[uid] = _Shown(report.pod, report.status, rendered)
        self._publish("ADDED" if shown is None else "MODIFIED", rendered)

    def _publish(self, kind: ChangeType, pod: Pod) -> None:
        change = PodChange(kind, pod, next(self._revisions))
        for subscription in self._subscriptions:
            if subscription.pods:
                subscription.offer(change)
