"""The runtime's container events (CRI ``GetContainerEvents``), when it has them: a runtime that
answers UNIMPLEMENTED (containerd before 1.7) has none, said once in the log, and the agent
relies on its relists."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubecore.runtime import RuntimeEvent
from kubecore_cri._client import CriConnection
from kubecore_cri._convert import event_from
from kubecore_cri._errors import status_code_name
from kubecore_cri._pb import api_pb2 as pb

log = logging.getLogger(__name__)

ANSWER_WAIT = 2.0
"""Seconds ``watch`` waits for a runtime to refuse the stream before taking it as open."""


class _Watch:
    """One open event stream, read on a thread of its own until closed."""

    def __init__(self, call: Any, handler: Callable[[RuntimeEvent], None]) -> None:
        self._call = call
        self._handler = handler
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cri-events", daemon=True)

    def start(self) -> _Watch:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            for response in self._call:
                if self._closed.is_set():
                    return
                event = event_from(response)
                if event is None:
                    continue
                try:
                    self._handler(event)
                except Exception:
                    log.exception("the CRI event handler failed")
        except Exception as error:
            if not self._closed.is_set():
                log.info("the CRI event stream ended (%s): relisting only", status_code_name(error))

    def close(self) -> None:
        self._closed.set()
        self._call.cancel()


class EventStream:
    """Opens event streams; remembers that the runtime has none (asked once)."""

    def __init__(self, connection: CriConnection) -> None:
        self._connection = connection
        self._unimplemented = False
        self._watches: list[_Watch] = []
        self._lock = threading.Lock()

    def watch(self, handler: Callable[[RuntimeEvent], None]) -> _Watch | None:
        if self._unimplemented:
            return None
        call = self._connection.stream("GetContainerEvents", pb.GetEventsRequest())
        refused = threading.Event()
        call.add_done_callback(lambda _call: refused.set())
        if refused.wait(ANSWER_WAIT) and status_code_name(call) == "UNIMPLEMENTED":
            self._unimplemented = True
            log.warning(
                "the CRI runtime has no container event stream (GetContainerEvents is"
                " unimplemented): relisting instead"
            )
            return None
        watch = _Watch(call, handler).start()
        with self._lock:
            self._watches.append(watch)
        return watch

    def close(self) -> None:
        with self._lock:
            watches, self._watches = self._watches, []
        for watch in watches:
            watch.close()
