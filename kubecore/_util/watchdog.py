"""A watchdog over a step that must end in time (the agent's stop): when it has not ended after
its grace, every thread's stack goes to the log, once, so that a stop that hangs says where."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import traceback
from collections.abc import Iterator

logger = logging.getLogger(__name__)


def thread_stacks() -> str:
    """Every thread's current stack, each headed by the thread's name and id."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        stack = "".join(traceback.format_stack(frame))
        parts.append(f"thread {names.get(ident, '?')} ({ident}):\n{stack}")
    return "\n".join(parts)


@contextlib.contextmanager
def stack_dump_after(grace: float, what: str) -> Iterator[None]:
    """Run the block; when it lasts more than ``grace`` seconds, log every thread's stack once
    (an error naming ``what``) and let it go on: the block decides how it ends."""
    ended = threading.Event()

    def watch() -> None:
        if not ended.wait(grace):
            logger.error(
                "%s has taken more than %gs; the stack of every thread:\n%s",
                what,
                grace,
                thread_stacks(),
            )

    watcher = threading.Thread(target=watch, name="kubecore-stop-watchdog", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        ended.set()
