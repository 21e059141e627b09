"""The probe manager: liveness, readiness and startup probes of running containers.

The manager holds each container's schedule per probe type (``due``: which probes should run now,
on the agent's clock, so virtual-time tests are deterministic) and the results cache: ``record``
applies a result, and ``states`` gives the pod's ``ProbeState`` values (keyed by runtime container
id) that the planner reads through ``PodHistory.probes``. The mapping ``states`` returns is the same
object until one of the pod's states changes. Running the probes is the prober's job
(``kubecore._prober.runner``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Literal

import attrs

from kubecore._contract.observed import container_name
from kubecore._contract.protocols import EventRecorder, HealthChecker
from kubecore._contract.values import (
    Event,
    EventType,
    ProbeOutcome,
    ProbeResult,
    ProbeTarget,
    RuntimeContainer,
)
from kubecore._model.v1 import Container, Pod, Probe
from kubecore._observability.events import EventReason, pod_reference
from kubecore._planner.actions import ProbeState

logger = logging.getLogger(__name__)

ProbeKind = Literal["liveness", "readiness", "startup"]
_TITLE = {"liveness": "Liveness", "readiness": "Readiness", "startup": "Startup"}


def unhealthy_message(kind: str, result: ProbeResult) -> str:
    """The message of the ``Unhealthy`` Warning event a result gets ('' for a success): a
    probe that failed, or one that could not run at all (``errored``, as the kubelet words it)."""
    if result.outcome is ProbeOutcome.FAILURE:
        return f"{_TITLE[kind]} probe failed: {result.message}".strip()
    if result.outcome is ProbeOutcome.UNKNOWN:
        return f"{_TITLE[kind]} probe errored: {result.message}".strip()
    return ""


_NO_STATES: Mapping[str, ProbeState] = {}


@attrs.frozen
class ProbeJob:
    pod_uid: str
    container_id: str
    container_name: str
    kind: ProbeKind
    probe: Probe
    target: ProbeTarget


@attrs.define
class _Worker:
    probe: Probe
    next_due: float
    successes: int = 0
    failures: int = 0
    passed: bool | None = None
    """The verdict once a threshold was reached; None before any."""


@attrs.define
class _ContainerProbes:
    name: str
    workers: dict[str, _Worker]
    message: str = ""

    def state(self) -> ProbeState:
        startup = self.workers.get("startup")
        started = startup is None or startup.passed is True
        liveness = self.workers.get("liveness")
        readiness = self.workers.get("readiness")
        startup_failed = startup is not None and startup.passed is False
        liveness_failed = startup_failed or (liveness is not None and liveness.passed is False)
        ready = started and (readiness is None or readiness.passed is True)
        return ProbeState(
            liveness_failed=liveness_failed,
            startup_failed=startup_failed,
            ready=ready,
            started=started,
            message=self.message,
        )


def _named_ports(container: Container) -> dict[str, int]:
    return {p.name: p.container_port for p in container.ports if p.name}


def probed_containers(pod: Pod) -> tuple[Container, ...]:
    """The containers probes apply to: the app containers and the sidecars."""
    spec = pod.spec
    sidecars = tuple(c for c in spec.init_containers if c.is_sidecar)
    return (*spec.containers, *sidecars) if sidecars else spec.containers


def has_probes(pod: Pod) -> bool:
    return any(
        c.liveness_probe or c.readiness_probe or c.startup_probe for c in probed_containers(pod)
    )


class ProbeManager:
    def __init__(self, checker: HealthChecker, recorder: EventRecorder | None = None) -> None:
        self._checker = checker
        self._recorder = recorder
        self._lock = threading.Lock()
        # pod uid -> container id -> probes of that container
        self._pods: dict[str, dict[str, _ContainerProbes]] = {}
        self._states: dict[str, Mapping[str, ProbeState]] = {}
        """The results cache: pod uid -> its containers' states, replaced whole on a change."""
        self.results: dict[tuple[str, str], int] = {}
        """Count of results by (kind, outcome)."""

    def states(self, uid: str) -> Mapping[str, ProbeState]:
        return self._states.get(uid, _NO_STATES)  # replaced whole under the lock: no lock here

    def _publish_locked(self, uid: str) -> None:
        containers = self._pods.get(uid)
        if containers:
            self._states[uid] = {cid: cp.state() for cid, cp in containers.items()}
        else:
            self._states.pop(uid, None)

    def forget(self, uid: str) -> None:
        with self._lock:
            self._pods.pop(uid, None)
            self._states.pop(uid, None)

    def knows(self, job: ProbeJob) -> bool:
        """The job's container is still probed (its pod has not left meanwhile)."""
        with self._lock:
            return job.container_id in self._pods.get(job.pod_uid, {})

    def retain(self, uids: Iterable[str]) -> None:
        keep = set(uids)
        with self._lock:
            for uid in [u for u in self._pods if u not in keep]:
                del self._pods[uid]
                self._states.pop(uid, None)

    def due(
        self, pod: Pod, running: Iterable[RuntimeContainer], pod_ip: str, now: float
    ) -> list[ProbeJob]:
        """The probes of this pod's running containers that should run now.

        Containers no longer running are forgotten; new ones get their probes, first due after
        ``initialDelaySeconds`` from the container's start. A startup probe holds the others.
        """
        specs = {c.name: c for c in probed_containers(pod)}
        jobs: list[ProbeJob] = []
        with self._lock:
            known = self._pods.get(pod.uid, {})
            current: dict[str, _ContainerProbes] = {}
            for rc in running:
                name = container_name(rc)
                spec = specs.get(name)
                if spec is None:
                    continue
                cp = known.get(rc.id)
                if cp is None:
                    cp = self._new(spec, rc)
                    if cp is None:
                        continue
                current[rc.id] = cp
                target = ProbeTarget(rc.id, pod_ip, _named_ports(spec))
                startup = cp.workers.get("startup")
                for kind, worker in cp.workers.items():
                    if kind != "startup" and startup is not None and startup.passed is not True:
                        continue
                    if kind == "startup" and worker.passed is not None:
                        continue  # done (passed or failed for good)
                    if now >= worker.next_due:
                        jobs.append(ProbeJob(pod.uid, rc.id, name, kind, worker.probe, target))  # type: ignore[arg-type]
            if current.keys() != known.keys():
                if current:
                    self._pods[pod.uid] = current
                else:
                    self._pods.pop(pod.uid, None)
                self._publish_locked(pod.uid)
        return jobs

    @staticmethod
    def _new(spec: Container, rc: RuntimeContainer) -> _ContainerProbes | None:
        started = rc.started_at if rc.started_at is not None else rc.created_at
        workers: dict[str, _Worker] = {}
        for kind, probe in (
            ("startup", spec.startup_probe),
            ("liveness", spec.liveness_probe),
            ("readiness", spec.readiness_probe),
        ):
            if probe is not None:
                workers[kind] = _Worker(probe, started + max(probe.initial_delay_seconds, 0))
        return _ContainerProbes(spec.name, workers) if workers else None

    def run(self, job: ProbeJob) -> ProbeResult:
        try:
            return self._checker.check(job.probe, job.target)
        except Exception as exc:  # a checker must not raise; be safe anyway
            logger.exception("health checker failed on %s", job.container_id)
            return ProbeResult(ProbeOutcome.UNKNOWN, str(exc))

    def record(self, pod: Pod, job: ProbeJob, result: ProbeResult, now: float) -> bool:
        """Apply a result; True if the container's ProbeState changed."""
        key = (job.kind, result.outcome.value)
        with self._lock:
            self.results[key] = self.results.get(key, 0) + 1
            cp = self._pods.get(job.pod_uid, {}).get(job.container_id)
            if cp is None:
                return False
            worker = cp.workers.get(job.kind)
            if worker is None:
                return False
            before = cp.state()
            period = max(worker.probe.period_seconds, 1)
            worker.next_due = max(worker.next_due + period, now) if worker.next_due else now
            if worker.next_due <= now:
                worker.next_due = now + period
            if result.outcome is ProbeOutcome.SUCCESS:
                worker.failures = 0
                worker.successes += 1
                threshold = 1 if job.kind != "readiness" else max(job.probe.success_threshold, 1)
                if worker.successes >= threshold:
                    worker.passed = True
            elif result.outcome is ProbeOutcome.FAILURE:
                worker.successes = 0
                worker.failures += 1
                if worker.failures >= max(job.probe.failure_threshold, 1):
                    worker.passed = False
                cp.message = unhealthy_message(job.kind, result)
            else:
                logger.debug(
                    "%s probe of %s: unknown (%s)", job.kind, job.container_id, result.message
                )
            after = cp.state()
            if after != before:
                self._publish_locked(job.pod_uid)
        warning = unhealthy_message(job.kind, result)
        if warning and self._recorder is not None:
            meta = pod.metadata
            self._recorder.record(
                Event(
                    pod_reference(meta.namespace, meta.name, meta.uid, job.container_name),
                    EventType.WARNING,
                    EventReason.CONTAINER_UNHEALTHY,
                    warning,
                    now,
                )
            )
        return after != before
