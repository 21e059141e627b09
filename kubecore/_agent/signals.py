"""How the agent's rooms reach its sync loop from any thread: ask for a pass, post a message for a
pod's worker, report a sync's outcome, read the pass's generation, stop syncing.

The rooms are built before the loop that runs them (``kubecore._agent.wiring``), so they hold this
small object rather than the loop itself."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Protocol

from kubecore._agent.pod_workers.queue import Inbox
from kubecore._agent.pod_workers.room import Outcome


class ChangeListener(Protocol):
    """Who learns that pods may have changed (``kubecore._agent.changes.ChangeFeed``)."""

    def pods_changed(self, uids: Iterable[str]) -> None: ...

    def all_changed(self) -> None: ...


class Signals:
    """The messages between the rooms and the sync loop (thread-safe)."""

    def __init__(self) -> None:
        self.wake = threading.Event()
        """Set: the loop passes now rather than at its next relist."""
        self.stop = threading.Event()
        """Set: the loop ends after its current pass."""
        self.resume = threading.Event()
        """Ends a back-off wait early (``stop``)."""
        self.inbox = Inbox()
        """UIDs of pods to sync at the next pass, posted by other threads."""
        self.generation = 0
        """The number of the newest pass."""
        self.looping = False
        """The background loop has been started and not stopped."""
        self.changes: ChangeListener | None = None
        """Told of every published status and every new set of desired pods."""
        self._outcomes: list[Outcome] = []
        self._outcomes_lock = threading.Lock()

    def post(self, uid: str) -> None:
        """A message for the pod's worker from another thread: sync it at the next pass."""
        self.inbox.post(uid)
        self.wake.set()

    def current_generation(self) -> int:
        return self.generation

    def wake_loop(self) -> None:
        """Ask the background loop (if started) for a pass soon."""
        if self.looping:
            self.wake.set()

    def halt(self) -> None:
        """Stop syncing (another agent took this node name): the loop ends, containers stay."""
        self.stop.set()
        self.wake.set()
        self.resume.set()

    def pods_changed(self, uids: Iterable[str]) -> None:
        """These pods' workers published a status."""
        if self.changes is not None:
            self.changes.pods_changed(uids)

    def desired_changed(self) -> None:
        """The desired pods were taken again (pods may have come or gone)."""
        if self.changes is not None:
            self.changes.all_changed()

    def report(self, outcome: Outcome) -> None:
        """A pod sync's line for the report of the pass."""
        with self._outcomes_lock:
            self._outcomes.append(outcome)

    def take_outcomes(self) -> list[Outcome]:
        """The lines reported since the last take (or the pass began)."""
        with self._outcomes_lock:
            outcomes, self._outcomes = self._outcomes, []
        return outcomes
