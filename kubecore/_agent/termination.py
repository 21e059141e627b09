"""Termination: a pod no longer desired keeps its spec (preStop hooks, grace period) until its
containers are gone, and its grace period can only shorten.

``Terminations`` holds one ``Termination`` per pod that left the desired set. Any thread may ask for
a shorter grace period (``request_grace``: a second delete with a shorter grace); only the pod's
worker moves it through its lifecycle (``begin`` when it starts killing, ``finish`` once the
pod's containers and sandboxes are removed). A kill reads the deadline again after each preStop
hook, so a shorter grace that arrives during a long hook shortens the stop that follows.
"""

from __future__ import annotations

import enum
import math
import threading
from collections.abc import Container

from kubecore._contract.observed import ObservedPod
from kubecore._kuberuntime.execute import Executor
from kubecore._kuberuntime.kill import time_left
from kubecore._model.v1 import Pod
from kubecore._util.clock import Clock


class PodLifecycle(enum.Enum):
    SYNCING = "syncing"
    TERMINATING = "terminating"
    TERMINATED = "terminated"


class Termination:
    """One pod's way out, with the spec it was desired with. (A pod the agent never knew, found
    on the runtime after a restart, has none: its containers carry their grace period in an
    annotation, and the executor kills it as it is.)"""

    def __init__(self, pod: Pod, grace: float = math.inf) -> None:
        self.pod = pod
        self.lifecycle = PodLifecycle.SYNCING
        """Changed only by the pod's worker."""
        self._lock = threading.Lock()
        self._grace = min(grace, float(pod.spec.termination_grace_period_seconds))
        self._deadline = math.inf

    def shorten(self, grace: float, now: float) -> bool:
        """A delete with ``grace`` seconds arrived at ``now``; True if it brings the end closer
        (a longer grace never lengthens it)."""
        with self._lock:
            if self._deadline == math.inf:
                shorter = grace < self._grace
                self._grace = min(self._grace, grace)
                return shorter
            if now + grace < self._deadline:
                self._deadline = now + grace
                return True
            return False

    def begin(self, now: float) -> None:
        """The worker starts killing: the grace period runs from now."""
        self.lifecycle = PodLifecycle.TERMINATING
        with self._lock:
            if self._deadline == math.inf:
                self._deadline = now + self._grace

    def remaining(self, now: float) -> float:
        """Seconds left of the grace period (inf: the containers' own grace periods apply)."""
        with self._lock:
            return self._deadline - now if self._deadline != math.inf else math.inf

    def finish(self) -> None:
        self.lifecycle = PodLifecycle.TERMINATED


class Terminations:
    """The pods on their way out, by UID, and the grace periods asked for before they left."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, Termination] = {}
        self._asked: dict[str, float] = {}

    def request_grace(self, uid: str, grace: float, now: float) -> Termination | None:
        """Record a delete with ``grace`` seconds; the termination when it was shortened."""
        with self._lock:
            termination = self._pods.get(uid)
            if termination is None:
                self._asked[uid] = min(grace, self._asked.get(uid, math.inf))
                return None
        return termination if termination.shorten(grace, now) else None

    def leave(self, pod: Pod) -> None:
        """``pod`` is no longer desired: keep its spec until its containers are gone."""
        with self._lock:
            if pod.uid not in self._pods:
                self._pods[pod.uid] = Termination(pod, self._asked.pop(pod.uid, math.inf))

    def cancel(self, desired: Container[str]) -> None:
        """Pods desired again before their containers went: a fresh start, nothing carried
        over (a grace asked for before the pod left is kept)."""
        if not self._pods:
            return
        with self._lock:
            for uid in [u for u in self._pods if u in desired]:
                del self._pods[uid]

    def get(self, uid: str) -> Termination | None:
        return self._pods.get(uid)

    def ongoing(self, uid: str) -> bool | None:
        """Whether the termination of ``uid`` has not finished (None: there is none)."""
        termination = self._pods.get(uid)
        return None if termination is None else termination.lifecycle is not PodLifecycle.TERMINATED

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def retain(self, present: Container[str], desired: Container[str]) -> None:
        """Forget the pods no longer on the runtime, and grace asked for pods that are gone."""
        if not (self._pods or self._asked):
            return
        with self._lock:
            for uid in [u for u in self._pods if u not in present]:
                del self._pods[uid]
            for uid in [u for u in self._asked if u not in desired and u not in present]:
                del self._asked[uid]


def kill_within(
    executor: Executor, clock: Clock, termination: Termination, observed: ObservedPod
) -> None:
    """Stop every container of a pod known by its spec within the termination's deadline
    (``Executor.kill_pod`` with the time left read again after each preStop hook)."""
    executor.kill_pod(termination.pod, observed, time_left(clock, termination))
