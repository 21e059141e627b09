"""Kubernetes events the agent records, their reasons (``EventReason.PULLED_IMAGE`` is
``Pulled``, ...), the recorders that keep, log or fan them out, and the v1 ``Event`` document
they become (``v1_event``)."""

import typing as _typing

from kubecore._util.exports import lazy_namespace as _lazy_namespace

if _typing.TYPE_CHECKING:  # written by scripts/gen_exports.py from kubecore._util.exports.SURFACE
    from kubecore._contract.protocols import (
        EventRecorder as EventRecorder,
    )
    from kubecore._contract.values import (
        Event as Event,
    )
    from kubecore._contract.values import (
        EventType as EventType,
    )
    from kubecore._contract.values import (
        ObjectReference as ObjectReference,
    )
    from kubecore._observability.event_log import (
        AggregatedEvent as AggregatedEvent,
    )
    from kubecore._observability.event_log import (
        EventCorrelator as EventCorrelator,
    )
    from kubecore._observability.event_log import (
        EventLog as EventLog,
    )
    from kubecore._observability.events import (
        EVENT_COMPONENT as EVENT_COMPONENT,
    )
    from kubecore._observability.events import (
        EventReason as EventReason,
    )
    from kubecore._observability.events import (
        FanoutRecorder as FanoutRecorder,
    )
    from kubecore._observability.events import (
        LoggingRecorder as LoggingRecorder,
    )
    from kubecore._observability.events import (
        MemoryRecorder as MemoryRecorder,
    )
    from kubecore._observability.events import (
        aggregated_v1_event as aggregated_v1_event,
    )
    from kubecore._observability.events import (
        v1_event as v1_event,
    )

__all__, __getattr__, __dir__ = _lazy_namespace(__name__)
