"""The runtime's event stream, as the sync loop uses it: a container's death wakes its pod's
worker at once (relists alone would see it a relist later), the stream is opened again when it
ends, and a reported death is re-checked until a snapshot shows it."""

from __future__ import annotations

import logging
import threading

from kubecore._agent.outage import Outage
from kubecore._agent.signals import Signals
from kubecore._contract.errors import ContainerRuntimeError
from kubecore._contract.protocols import ContainerRuntime, Subscription
from kubecore._contract.values import RuntimeEvent, RuntimeEventType, RuntimeSnapshot, RuntimeState
from kubecore._util.clock import Clock

logger = logging.getLogger(__name__)

DEATH_CONFIRM_WINDOW = 5.0
"""Seconds a reported death is re-checked: an engine may list a container as running for a
moment after its death event (Docker does)."""


class EventStream:
    """The loop's subscription to the runtime's events, and the deaths they reported."""

    def __init__(self, runtime: ContainerRuntime, clock: Clock, signals: Signals) -> None:
        self._runtime = runtime
        self._clock = clock
        self._signals = signals
        self._lock = threading.Lock()
        self._unconfirmed_deaths: dict[str, float] = {}
        """Container id -> when its death was reported, until a snapshot shows it dead."""
        self._subscription: Subscription | None = None
        self._outage = Outage(initial=1.0)
        self._wanted = False
        """The event stream could not be opened, or ended: subscribe again when the runtime
        answers (a runtime whose ``watch_events`` returns None has none to want)."""
        self._subscribe_at = 0.0

    def subscribe(self) -> None:
        """Subscribe to the runtime's events; when that fails, relists alone see changes
        until ``keep_subscribed`` succeeds."""
        mono = self._clock.monotonic()
        try:
            subscription = self._runtime.watch_events(self._on_runtime_event)
        except ContainerRuntimeError as exc:
            self._lost(mono, f"no runtime event stream ({exc})")
            return
        ended = self._outage.answer(mono)
        if ended is not None:
            logger.warning("subscribed to the runtime's events again %s", ended.describe())
        self._wanted = False
        self._subscription = subscription
        if self._signals.stop.is_set():
            self.unsubscribe()

    def keep_subscribed(self) -> None:
        """After a pass the runtime answered: subscribe again if the event stream could not be
        opened or has ended (a subscription with an ``alive`` attribute that turned False),
        with a growing delay between tries."""
        subscription = self._subscription
        mono = self._clock.monotonic()
        if subscription is not None:
            if getattr(subscription, "alive", True):
                return
            self.unsubscribe()
            self._lost(mono, "the runtime event stream ended")
            return
        if self._wanted and mono >= self._subscribe_at:
            self.subscribe()

    def _lost(self, mono: float, why: str) -> None:
        """No event stream now: try again after a delay growing with each failure in a row."""
        self._wanted = True
        logged = self._outage.fail(mono)
        self._subscribe_at = mono + self._outage.delay
        if logged:
            logger.warning(
                "%s; relying on relists, subscribing again in %.1fs", why, self._outage.delay
            )

    def unsubscribe(self) -> None:
        """Close the subscription, if any."""
        subscription, self._subscription = self._subscription, None
        if subscription is None:
            return
        try:
            subscription.close()
        except Exception:
            logger.exception("closing the runtime event subscription failed")

    def _on_runtime_event(self, event: RuntimeEvent) -> None:
        if event.type not in (RuntimeEventType.DIED, RuntimeEventType.OOM):
            return
        with self._lock:
            self._unconfirmed_deaths[event.container_id] = self._clock.monotonic()
        self._signals.post(event.pod_uid)

    def deaths_pending(self) -> bool:
        """A reported death is not yet visible in a snapshot."""
        with self._lock:
            return bool(self._unconfirmed_deaths)

    def confirm_deaths(self, snapshot: RuntimeSnapshot, mono: float) -> None:
        """Forget the reported deaths ``snapshot`` shows (or reported too long ago)."""
        if not self._unconfirmed_deaths:
            return
        running = {c.id for c in snapshot.containers if c.state is RuntimeState.RUNNING}
        with self._lock:
            for container_id, reported in list(self._unconfirmed_deaths.items()):
                if container_id not in running or mono - reported > DEATH_CONFIRM_WINDOW:
                    del self._unconfirmed_deaths[container_id]
