"""Kubernetes events the agent records, their reasons (``EventReason.PULLED_IMAGE`` is
``Pulled``, ...) and the recorders that keep, log or fan them out."""

from kubecore._contract.protocols import EventRecorder
from kubecore._contract.values import Event, EventType, ObjectReference
from kubecore._observability.events import (
    EventReason,
    FanoutRecorder,
    LoggingRecorder,
    MemoryRecorder,
)
from kubecore._util.exports import publish as _publish

__all__ = [
    "Event",
    "EventReason",
    "EventRecorder",
    "EventType",
    "FanoutRecorder",
    "LoggingRecorder",
    "MemoryRecorder",
    "ObjectReference",
]

_publish(__all__, globals(), __name__)
