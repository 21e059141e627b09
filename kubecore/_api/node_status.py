"""The Node's conditions as the kubelet reports them, and its heartbeat (the node Lease).

``NodeConditions`` turns each reading of the agent (healthy or not, ``healthz``) and of the host
(the eviction manager's pressure conditions, ``kubecore._housekeeping.eviction``) into the
four conditions the kubelet reports — MemoryPressure, DiskPressure, PIDPressure, Ready — with
its reasons and messages. A condition's ``lastTransitionTime`` moves only when its status
flips; ``lastHeartbeatTime`` is the time of the last status report, which the kubelet makes when
something changed, else every ``NODE_STATUS_REPORT_FREQUENCY``. A pressure condition stays True
for ``EVICTION_PRESSURE_TRANSITION_PERIOD`` after its threshold was last crossed (the kubelet's
``--eviction-pressure-transition-period``), so that it does not flap.

Each condition's status and ``lastTransitionTime`` are kept across restarts of the agent
(``ConditionsFile``, ``<root-dir>/node-conditions.json``): a condition whose status is the same
after a restart keeps its transition time, and the event of its status is recorded again with
its first date (``describe node`` shows ``NodeReady`` as old as the node's readiness, not the
restart's time).

The readings are taken when the Node is read (each read of the API; cheap: ``/proc`` and
``statvfs``), not by a timer of their own: a flip no client read in between is seen at the
next read.

``Heartbeat`` is the node Lease's ``renewTime``: renewed every ``LEASE_RENEW_INTERVAL`` while
the agent runs (as the kubelet renews it every quarter of ``leaseDurationSeconds``), left as it
was when the agent stops."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from kubecore._housekeeping.eviction import (
    DISK_PRESSURE,
    MEMORY_PRESSURE,
    PID_PRESSURE,
    HostReader,
    Summary,
    Threshold,
    pressure_conditions,
)
from kubecore._util.files import read_own_file, replace_file
from kubecore._util.timefmt import rfc3339

logger = logging.getLogger(__name__)

NODE_STATUS_REPORT_FREQUENCY = 300.0
"""Seconds between two status reports when nothing changed (the kubelet's default, 5 min)."""
EVICTION_PRESSURE_TRANSITION_PERIOD = 300.0
"""Seconds a pressure condition stays True after its threshold was last crossed (5 min)."""
LEASE_DURATION_SECONDS = 40
"""The node Lease's ``leaseDurationSeconds`` (the kubelet's ``nodeLeaseDurationSeconds``)."""
LEASE_RENEW_INTERVAL = LEASE_DURATION_SECONDS / 4
"""Seconds between two renewals of the node Lease (10 s, as the kubelet renews it)."""
READY = "Ready"
CONDITIONS_FILE = "node-conditions.json"
"""Where the conditions' statuses and transition times are kept, in the root directory."""

_WORDS: Mapping[str, tuple[tuple[str, str], tuple[str, str]]] = {
    MEMORY_PRESSURE: (
        ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
    ),
    DISK_PRESSURE: (
        ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("KubeletHasDiskPressure", "kubelet has disk pressure"),
    ),
    PID_PRESSURE: (
        ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
    ),
}
"""Each pressure condition's (reason, message) when False, then when True (the kubelet's)."""
CONDITION_ORDER = (MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE, READY)
NODE_EVENTS: Mapping[tuple[str, str], str] = {
    (MEMORY_PRESSURE, "False"): "NodeHasSufficientMemory",
    (MEMORY_PRESSURE, "True"): "NodeHasInsufficientMemory",
    (DISK_PRESSURE, "False"): "NodeHasNoDiskPressure",
    (DISK_PRESSURE, "True"): "NodeHasDiskPressure",
    (PID_PRESSURE, "False"): "NodeHasSufficientPID",
    (PID_PRESSURE, "True"): "NodeHasInsufficientPID",
    (READY, "True"): "NodeReady",
    (READY, "False"): "NodeNotReady",
}
"""The event the kubelet records when a condition takes a status (``Node n status is now:
NodeReady``)."""


@attrs.frozen
class Reading:
    """What one condition says now: status ("True"/"False"), reason, message."""

    status: str
    reason: str
    message: str


def ready_reading(healthy: bool, problem: str) -> Reading:
    if healthy:
        return Reading("True", "KubeletReady", "kubelet is posting ready status")
    return Reading("False", "KubeletNotReady", problem or "kubelet is not ready")


def pressure_reading(condition: str, under: bool, thresholds: list[str]) -> Reading:
    (calm_reason, calm), (pressed_reason, pressed) = _WORDS[condition]
    if not under:
        return Reading("False", calm_reason, calm)
    if thresholds:
        pressed = f"{pressed} (eviction threshold crossed: {', '.join(thresholds)})"
    return Reading("True", pressed_reason, pressed)


@attrs.define
class _Kept:
    reading: Reading
    transition: float


class ConditionsFile:
    """Each condition's (status, transition time) at ``<root_dir>/node-conditions.json``
    (mode 0600, replaced whole). What cannot be read is logged and taken as never written."""

    def __init__(self, root_dir: str) -> None:
        self.path = os.path.join(os.path.abspath(root_dir), CONDITIONS_FILE)

    def load(self) -> dict[str, tuple[str, float]]:
        try:
            raw, _ = read_own_file(self.path)
        except FileNotFoundError:
            return {}
        except OSError as error:
            logger.warning("the node's conditions cannot be read (%s): dated anew", error)
            return {}
        try:
            document = json.loads(raw.decode("utf-8"))
            return {
                condition: (str(kept["status"]), float(kept["lastTransitionTime"]))
                for condition, kept in document.items()
                if condition in CONDITION_ORDER
            }
        except (UnicodeDecodeError, ValueError, TypeError, KeyError, AttributeError) as error:
            logger.warning("the node's conditions in %s are not readable (%r)", self.path, error)
            return {}

    def save(self, kept: Mapping[str, tuple[str, float]]) -> None:
        document = {c: {"status": s, "lastTransitionTime": t} for c, (s, t) in kept.items()}
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            replace_file(self.path, json.dumps(document, sort_keys=True).encode() + b"\n")
        except OSError as error:
            logger.warning("cannot keep the node's conditions (%s): a restart dates them", error)


class NodeConditions:
    """The Node's conditions across readings (see the module doc). ``host`` is the host's
    reader and ``thresholds`` the hard eviction thresholds; ``health()`` is (healthy, why
    not)."""

    def __init__(
        self,
        host: HostReader,
        thresholds: Mapping[str, Threshold],
        health: Callable[[], tuple[bool, str]],
        *,
        report_frequency: float = NODE_STATUS_REPORT_FREQUENCY,
        transition_period: float = EVICTION_PRESSURE_TRANSITION_PERIOD,
        on_status: Callable[[str, float], None] = lambda reason, now: None,
        kept: ConditionsFile | None = None,
    ) -> None:
        self.host = host
        self.thresholds = dict(thresholds)
        self._health = health
        self.report_frequency = report_frequency
        self.transition_period = transition_period
        self._on_status = on_status
        """Called with the event reason (``NODE_EVENTS``) of each status a condition takes."""
        self._lock = threading.Lock()
        self._file = kept
        """Where the statuses and transitions are kept across restarts (None: not kept)."""
        self._kept: dict[str, _Kept] = {}
        self._heartbeat = 0.0
        self._last_crossed: dict[str, tuple[float, list[str]]] = {}
        for condition, (status, transition) in (kept.load() if kept else {}).items():
            if (condition, status) in NODE_EVENTS:
                self._kept[condition] = _Kept(Reading(status, "", ""), transition)
                on_status(NODE_EVENTS[condition, status], transition)

    def readings(self, now: float) -> dict[str, Reading]:
        """Each condition's reading now (pressure held through the transition period)."""
        healthy, problem = self._health()
        over = pressure_conditions(Summary(node=self.host()), self.thresholds)
        for condition, thresholds in over.items():
            self._last_crossed[condition] = (now, thresholds)
        out: dict[str, Reading] = {}
        for condition in (MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE):
            last = self._last_crossed.get(condition)
            if last is None or (condition not in over and now - last[0] >= self.transition_period):
                self._last_crossed.pop(condition, None)  # relieved for good
                out[condition] = pressure_reading(condition, False, [])
            else:
                out[condition] = pressure_reading(condition, True, last[1])
        out[READY] = ready_reading(healthy, problem)
        return out

    def conditions(self, now: float) -> list[dict[str, Any]]:
        """The v1 ``NodeCondition`` list now, in the kubelet's order."""
        with self._lock:
            readings = self.readings(now)
            changed = any(
                self._kept.get(c) is None or self._kept[c].reading != r for c, r in readings.items()
            )
            if changed or now - self._heartbeat >= self.report_frequency:
                self._heartbeat = now
            flipped = False
            for condition, reading in readings.items():
                kept = self._kept.get(condition)
                if kept is None or kept.reading.status != reading.status:
                    self._kept[condition] = _Kept(reading, now)
                    self._on_status(NODE_EVENTS[condition, reading.status], now)
                    flipped = True
                else:
                    kept.reading = reading
            if flipped and self._file is not None:
                self._file.save(
                    {c: (k.reading.status, k.transition) for c, k in self._kept.items()}
                )
            return [self._condition(c) for c in CONDITION_ORDER]

    def _condition(self, condition: str) -> dict[str, Any]:
        kept = self._kept[condition]
        return {
            "type": condition,
            "status": kept.reading.status,
            "lastHeartbeatTime": rfc3339(self._heartbeat),
            "lastTransitionTime": rfc3339(kept.transition),
            "reason": kept.reading.reason,
            "message": kept.reading.message,
        }


class Heartbeat:
    """The node Lease's renewals: one each ``interval`` while ``alive()`` (the agent runs),
    counted from ``start``; none while it does not."""

    def __init__(
        self, start: float, alive: Callable[[], bool], interval: float = LEASE_RENEW_INTERVAL
    ) -> None:
        self.renewed = start
        self._alive = alive
        self.interval = interval
        self._lock = threading.Lock()

    def renew_time(self, now: float) -> float:
        """When the Lease was last renewed, as of ``now``."""
        with self._lock:
            if self._alive() and now - self.renewed >= self.interval:
                self.renewed += self.interval * ((now - self.renewed) // self.interval)
            return self.renewed
