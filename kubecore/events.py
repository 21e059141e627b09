"""Kubernetes events the agent records, their reasons (``EventReason.PULLED_IMAGE`` is
``Pulled``, ...), the recorders that keep, log or fan them out, and the one v1 ``Event`` document
of an event (``v1_event``)."""

from kubecore._contract.runtime import Event, EventRecorder, EventType, ObjectReference
from kubecore._observability.events import (
    EVENT_COMPONENT,
    EventReason,
    FanoutRecorder,
    LoggingRecorder,
    MemoryRecorder,
    v1_event,
)
from kubecore._util.exports import publish as _publish

__all__ = [
    "EVENT_COMPONENT",
    "Event",
    "EventReason",
    "EventRecorder",
    "EventType",
    "FanoutRecorder",
    "LoggingRecorder",
    "MemoryRecorder",
    "ObjectReference",
    "v1_event",
]

_publish(__all__, globals(), __name__)
