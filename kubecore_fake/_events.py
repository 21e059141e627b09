"""The in-memory runtime's event stream: events queued while its lock is held, delivered to
every subscribed handler once it is released, in the thread that caused them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kubecore.runtime import (
    CONTAINER_NAME_LABEL,
    POD_UID_LABEL,
    Clock,
    RuntimeEvent,
    RuntimeEventType,
)
from kubecore_fake._records import ContainerRecord

logger = logging.getLogger(__name__)

Events = list[RuntimeEvent]
Handler = Callable[[RuntimeEvent], None]


class EventSubscription:
    """What ``watch_events`` returns: ``close()`` ends the delivery to its handler."""

    def __init__(self, hub: EventHub, handler: Handler) -> None:
        self._hub = hub
        self._handler = handler

    def close(self) -> None:
        self._hub.unsubscribe(self._handler)


class EventHub:
    """The handlers, and the queueing and delivery of events (only managed containers make
    any)."""

    def __init__(self, clock: Clock, lock: threading.RLock) -> None:
        self._clock = clock
        self._lock = lock
        self._handlers: list[Handler] = []

    def subscribe(self, handler: Handler) -> EventSubscription:
        with self._lock:
            self._handlers.append(handler)
        return EventSubscription(self, handler)

    def unsubscribe(self, handler: Handler) -> None:
        with self._lock:
            if handler in self._handlers:
                self._handlers.remove(handler)

    def clear(self) -> None:
        with self._lock:
            self._handlers.clear()

    def note(
        self,
        events: Events,
        kind: RuntimeEventType,
        rec: ContainerRecord,
        exit_code: int | None = None,
    ) -> None:
        """Queue an event (delivered by ``emit`` once the lock is released)."""
        if not rec.managed:
            return
        labels = rec.config.labels
        events.append(
            RuntimeEvent(
                kind,
                rec.id,
                self._clock.now(),
                pod_uid=labels.get(POD_UID_LABEL, ""),
                container_name=labels.get(CONTAINER_NAME_LABEL, rec.config.name),
                exit_code=exit_code,
            )
        )

    def emit(self, events: Events) -> None:
        if not events:
            return
        with self._lock:
            handlers = list(self._handlers)
        for event in events:
            for handler in handlers:
                try:
                    handler(event)
                except Exception:
                    logger.exception("runtime event handler failed", extra={"event": event})
        events.clear()
