"""The status room: a pod's status computed from what was observed, its termination messages,
the rejection status of a refused pod, and the start-duration metric."""

from __future__ import annotations

import logging

import attrs

from kubecore._contract.errors import ContainerRuntimeError
from kubecore._contract.observed import ObservedPod, container_name, restart_count
from kubecore._contract.protocols import ContainerRuntime, EventRecorder
from kubecore._contract.values import Event, EventType, RuntimeState
from kubecore._model.rejection import Rejection
from kubecore._model.v1 import Pod, PodStatus
from kubecore._observability.events import pod_reference
from kubecore._observability.metrics import Metrics
from kubecore._planner.actions import PodActions, PodHistory
from kubecore._status.compute import compute_pod_status
from kubecore._util.timefmt import rfc3339
from kubecore._volumes.pod_dirs import VolumeManager

logger = logging.getLogger(__name__)


@attrs.define(eq=False)
class PodStatusRecord:
    """One pod's published status and what it was computed with (owned by the pod's worker)."""

    first_seen: float
    status: PodStatus | None = None
    start_reported: bool = False
    messages: dict[str, str] = attrs.field(factory=dict)
    """Termination messages by container id (read once: a dead container's file is final)."""


FALLBACK_LOG_LINES = 80
FALLBACK_LOG_BYTES = 2048


def log_tail_message(lines: list[bytes]) -> str:
    """The last ``FALLBACK_LOG_LINES`` lines, cut to their last ``FALLBACK_LOG_BYTES`` bytes."""
    text = b"".join(lines[-FALLBACK_LOG_LINES:])[-FALLBACK_LOG_BYTES:]
    return text.decode(errors="replace")


def _falling_back_to_logs(pod: Pod) -> frozenset[str]:
    spec = pod.spec
    return frozenset(
        c.name
        for c in (*spec.init_containers, *spec.containers, *spec.ephemeral_containers)
        if c.termination_message_policy == "FallbackToLogsOnError"
    )


def rejected_status(rejection: Rejection, now: float) -> PodStatus:
    return PodStatus(
        phase="Failed", reason=rejection.reason, message=rejection.message, start_time=rfc3339(now)
    )


class StatusManager:
    def __init__(
        self,
        runtime: ContainerRuntime,
        volumes: VolumeManager,
        recorder: EventRecorder,
        metrics: Metrics,
        *,
        host_ip: str,
    ) -> None:
        self._runtime = runtime
        self._volumes = volumes
        self._recorder = recorder
        self._metrics = metrics
        self._host_ip = host_ip
        self._runtime_name_cache = ""

    def runtime_name(self) -> str:
        if not self._runtime_name_cache:
            try:
                self._runtime_name_cache = self._runtime.version().runtime_name or "kubecore"
            except ContainerRuntimeError:
                return "kubecore"
        return self._runtime_name_cache

    def termination_messages(
        self, record: PodStatusRecord, pod: Pod, observed: ObservedPod
    ) -> dict[str, str]:
        """The termination message of each dead container (read once: a dead container's file
        and log are final); under ``FallbackToLogsOnError`` the tail of a failed container's
        log stands in for an empty file."""
        messages = record.messages
        fallback: frozenset[str] | None = None
        for c in observed.containers:
            if c.state is RuntimeState.EXITED and c.id not in messages:
                name = container_name(c)
                message = self._volumes.read_termination_message(pod.uid, name, restart_count(c))
                if not message and c.exit_code != 0:
                    if fallback is None:
                        fallback = _falling_back_to_logs(pod)
                    if name in fallback:
                        message = self._log_tail(c.id)
                messages[c.id] = message
        if len(messages) > len(observed.containers):
            ids = {c.id for c in observed.containers}
            record.messages = messages = {k: v for k, v in messages.items() if k in ids}
        return {k: v for k, v in messages.items() if v}

    def _log_tail(self, container_id: str) -> str:
        """The last lines of a container's log, as the kubelet's fallback message."""
        try:
            lines = list(self._runtime.logs(container_id, tail=FALLBACK_LOG_LINES))
        except ContainerRuntimeError as exc:
            logger.debug("no log for the termination message of %s: %s", container_id, exc)
            return ""
        return log_tail_message(lines)

    def update(
        self,
        record: PodStatusRecord,
        pod: Pod,
        observed: ObservedPod,
        history: PodHistory,
        actions: PodActions | None,
        now: float,
    ) -> None:
        """Compute and publish the pod's status into ``record``; the first time every container
        runs, observe the pod's start duration."""
        status = compute_pod_status(
            pod,
            observed,
            history,
            actions,
            now,
            previous=record.status,
            termination_messages=self.termination_messages(record, pod, observed),
            runtime_name=self.runtime_name(),
            host_ip=self._host_ip,
        )
        record.status = status
        if (
            not record.start_reported
            and status.container_statuses
            and all(cs.state.running is not None for cs in status.container_statuses)
        ):
            record.start_reported = True
            self._metrics.pod_start_duration.observe(max(0.0, now - record.first_seen))

    def report_rejection(self, pod: Pod, rejection: Rejection, now: float) -> PodStatus:
        meta = pod.metadata
        logger.warning(
            "rejected pod %s/%s: %s", meta.namespace, meta.name, rejection.message,
            extra={"pod": pod.full_name},
        )  # fmt: skip
        self._recorder.record(
            Event(
                pod_reference(meta.namespace, meta.name, meta.uid),
                EventType.WARNING,
                rejection.reason,
                rejection.message,
                now,
            )
        )
        return rejected_status(rejection, now)
