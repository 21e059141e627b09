"""The reasons of the events the agent records, and the default recorders: to the log, to an
in-memory ring, and to several at once."""

from __future__ import annotations

import collections
import enum
import functools
import logging
import sys
import threading
from collections.abc import Iterable
from typing import Any

from kubecore._contract.protocols import EventRecorder
from kubecore._contract.values import Event, EventType, ObjectReference
from kubecore._observability.event_log import AggregatedEvent
from kubecore._util.timefmt import rfc3339, rfc3339_micro

logger = logging.getLogger(__name__)


class EventReason(enum.StrEnum):
    """The reason of each event the agent records, named as the kubelet names them
    (``pkg/kubelet/events/event.go``, unless noted). Several names share a value as they do
    there (``Failed``, ``BackOff``): the name says which step failed, the value is what a
    reader sees. Events of a rejected pod carry the admission's reason (``OutOfcpu``,
    ``HostPortConflict``, ...) instead."""

    # container events
    CREATED_CONTAINER = "Created"
    STARTED_CONTAINER = "Started"
    FAILED_TO_CREATE_CONTAINER = "Failed"
    FAILED_TO_START_CONTAINER = "Failed"
    KILLING_CONTAINER = "Killing"
    BACK_OFF_START_CONTAINER = "BackOff"
    # image events
    PULLING_IMAGE = "Pulling"
    PULLED_IMAGE = "Pulled"
    FAILED_TO_PULL_IMAGE = "Failed"
    ERR_IMAGE_NEVER_PULL_POLICY = "ErrImageNeverPull"
    BACK_OFF_PULL_IMAGE = "BackOff"
    # pod events
    FAILED_MOUNT_VOLUME = "FailedMount"
    SANDBOX_CHANGED = "SandboxChanged"
    FAILED_CREATE_POD_SANDBOX = "FailedCreatePodSandBox"
    # probes and lifecycle hooks
    CONTAINER_UNHEALTHY = "Unhealthy"
    FAILED_POST_START_HOOK = "FailedPostStartHook"
    FAILED_PRE_STOP_HOOK = "FailedPreStopHook"
    # recorded by the kubelet with reasons written elsewhere
    INVALID_ENVIRONMENT_VARIABLE_NAMES = "InvalidEnvironmentVariableNames"  # kubelet_pods.go
    DEADLINE_EXCEEDED = "DeadlineExceeded"  # active_deadline.go
    EVICTED = "Evicted"  # eviction/helpers.go


@functools.lru_cache(maxsize=256)  # a container's events come in a burst: one object for them
def pod_reference(
    namespace: str, name: str, uid: str = "", container: str = "", *, init: bool = False
) -> ObjectReference:
    """The object an event is about: the pod, or one of its containers (by field path)."""
    field_path = ""
    if container:
        # Interned: every event of every pod's container of that name shares one string.
        field_path = sys.intern(f"spec.{'initContainers' if init else 'containers'}{{{container}}}")
    return ObjectReference(
        kind="Pod", namespace=namespace, name=name, uid=uid, field_path=field_path
    )


class LoggingRecorder:
    """Writes each event to the ``logging`` module (warnings at WARNING, the rest at INFO)."""

    def __init__(self, log: logging.Logger | None = None) -> None:
        self._log = log or logger

    def record(self, event: Event) -> None:
        ref = event.involved_object
        level = logging.WARNING if event.type is EventType.WARNING else logging.INFO
        where = f"{ref.namespace}/{ref.name}"
        if ref.field_path:
            where += f" {ref.field_path}"
        self._log.log(
            level,
            "%s %s: %s",
            where,
            event.reason,
            event.message,
            extra={"event_reason": event.reason, "pod": f"{ref.namespace}/{ref.name}"},
        )


class MemoryRecorder:
    """Keeps the newest ``max_size`` events in memory (thread-safe)."""

    def __init__(self, max_size: int = 1000) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self._events: collections.deque[Event] = collections.deque(maxlen=max_size)
        self._lock = threading.Lock()

    @property
    def max_size(self) -> int:
        """How many events it keeps (the oldest go first)."""
        return self._events.maxlen or 0

    def record(self, event: Event) -> None:
        with self._lock:
            self._events.append(event)

    def events(
        self,
        *,
        namespace: str | None = None,
        name: str | None = None,
        reason: str | None = None,
    ) -> list[Event]:
        """Events oldest first, optionally only those of one pod and/or one reason."""
        with self._lock:
            events = list(self._events)
        return [
            e
            for e in events
            if (namespace is None or e.involved_object.namespace == namespace)
            and (name is None or e.involved_object.name == name)
            and (reason is None or e.reason == reason)
        ]

    def reasons(self, *, namespace: str | None = None, name: str | None = None) -> list[str]:
        """The reasons of the events kept, oldest first, of one object if ``namespace`` or ``name``
        are given."""
        return [e.reason for e in self.events(namespace=namespace, name=name)]

    def clear(self) -> None:
        """Forget every event kept."""
        with self._lock:
            self._events.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)


class FanoutRecorder:
    """Sends each event to every recorder; one failing recorder never stops the others."""

    def __init__(self, recorders: Iterable[EventRecorder]) -> None:
        self.recorders = tuple(recorders)

    def record(self, event: Event) -> None:
        for recorder in self.recorders:
            try:
                recorder.record(event)
            except Exception:
                logger.exception("event recorder %r failed", recorder)


EVENT_COMPONENT = "kubelet"
"""The component v1 Events name as their source and reporter, as the kubelet's do (``kubectl
describe`` shows it in the FROM column)."""


def v1_event(event: Event, *, node: str, name: str, stamp: str) -> dict[str, Any]:
    """The one v1 ``Event`` document of one of the agent's events, wherever it is served or
    stored (the node's API, etcd); ``stamp`` is its time in RFC 3339."""
    ref = event.involved_object
    involved: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": ref.kind,
        "namespace": ref.namespace,
        "name": ref.name,
    }
    if ref.uid:
        involved["uid"] = ref.uid
    if ref.field_path:
        involved["fieldPath"] = ref.field_path
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": name,
            "namespace": ref.namespace or "default",
            "creationTimestamp": stamp,
        },
        "involvedObject": involved,
        "reason": event.reason,
        "message": event.message,
        "source": {"component": EVENT_COMPONENT, "host": node},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "type": str(event.type),
        "reportingComponent": EVENT_COMPONENT,
        "reportingInstance": node,
    }


def aggregated_v1_event(entry: AggregatedEvent, *, node: str) -> dict[str, Any]:
    """The v1 ``Event`` document of one aggregated event (``EventLog``): its newest
    occurrence's ``v1_event`` with the aggregate's ``count``, ``firstTimestamp``,
    ``lastTimestamp``, ``resourceVersion`` and, for a repeated event, the ``series``
    (``count``, ``lastObservedTime``) that events.k8s.io readers and ``kubectl describe`` read."""
    body = v1_event(entry.event, node=node, name=entry.name, stamp=rfc3339(entry.first_timestamp))
    body["metadata"]["resourceVersion"] = str(entry.version)
    body["count"] = entry.count
    body["lastTimestamp"] = rfc3339(entry.last_timestamp)
    if entry.count > 1:
        # As client-go's tools/events writes a repeated event: the occurrences so far and when
        # the newest was seen.
        body["series"] = {
            "count": entry.count,
            "lastObservedTime": rfc3339_micro(entry.last_timestamp),
        }
    return body
