"""The events the runtime manager records about a pod and its containers, stamped with the
clock's time (a recorder that fails is logged, never raised to the sync)."""

from __future__ import annotations

import logging
import sys

from kubecore._contract.protocols import EventRecorder
from kubecore._contract.values import Event, EventType, ObjectReference
from kubecore._model.v1 import Pod
from kubecore._observability.events import pod_reference
from kubecore._util.clock import Clock

logger = logging.getLogger(__name__)


class PodEvents:
    """Records events about pods through one recorder, at the clock's time."""

    def __init__(self, recorder: EventRecorder, clock: Clock) -> None:
        self.recorder = recorder
        self.clock = clock

    def record(
        self,
        pod: Pod,
        type_: EventType,
        reason: str,
        message: str,
        container: str = "",
        *,
        init: bool = False,
    ) -> None:
        """An event about ``pod`` (or one of its containers)."""
        meta = pod.metadata
        ref = pod_reference(meta.namespace, meta.name, meta.uid, container, init=init)
        # The same few messages recur for every pod (kept in the event ring): held once.
        self.record_about(ref, type_, reason, sys.intern(message))

    def record_about(
        self, ref: ObjectReference, type_: EventType, reason: str, message: str
    ) -> None:
        """An event about ``ref`` (a pod the agent may not know by its spec)."""
        try:
            self.recorder.record(Event(ref, type_, reason, message, self.clock.now()))
        except Exception:
            logger.exception("event recorder failed")
