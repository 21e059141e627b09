"""How the agent's rooms reach its sync loop from any thread: ask for a pass, post a message for a
pod's worker, report a sync's outcome, read the pass's generation, stop syncing.

The rooms are built before the loop that runs them (``kubecore._agent.wiring``), so they hold this
small object rather than the loop itself."""

from __future__ import annotations

import threading

from kubecore._agent.pod_workers.queue import Inbox
from kubecore._agent.pod_workers.room import Outcome


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

    def report(self, outcome: Outcome) -> None:
        """A pod sync's line for the report of the pass."""
        with self._outcomes_lock:
            self._outcomes.append(outcome)

    def take_outcomes(self) -> list[Outcome]:
        """The lines reported since the last take (or the pass began)."""
        with self._outcomes_lock:
            outcomes, self._outcomes = self._outcomes, []
        return outcomes
