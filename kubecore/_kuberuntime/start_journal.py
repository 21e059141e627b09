"""The container starts an agent has begun and not seen end, one empty file each (named by the
container id) under ``<root-dir>/starting``: an agent killed in a start leaves its file, and the
next agent on the root dir knows that instance's start was cut off (containerd then fails the
start with exit 128 without ever running it: an interrupted start, not a crash to count)."""

from __future__ import annotations

import contextlib
import os
import threading

STARTING_DIR = "starting"


def interrupted_starts(root_dir: str) -> frozenset[str]:
    """The ids of the starts an earlier process began and never ended (read only: nothing is
    made when the journal is not there)."""
    try:
        names = os.listdir(os.path.join(root_dir, STARTING_DIR))
    except FileNotFoundError:
        return frozenset()
    return frozenset(name for name in names if not name.startswith("."))


class StartJournal:
    """``begin`` and ``end`` around each start; ``interrupted`` the ids an earlier process left
    (until ``end`` forgets one). Thread-safe."""

    def __init__(self, root_dir: str) -> None:
        self._dir = os.path.join(root_dir, STARTING_DIR)
        os.makedirs(self._dir, exist_ok=True)
        self._lock = threading.Lock()
        self._interrupted = interrupted_starts(root_dir)

    @property
    def interrupted(self) -> frozenset[str]:
        with self._lock:
            return self._interrupted

    def begin(self, container_id: str) -> None:
        with open(self._path(container_id), "w"):
            pass

    def end(self, container_id: str) -> None:
        """The start returned (or the instance is gone): its file goes."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(container_id))
        with self._lock:
            if container_id in self._interrupted:
                self._interrupted = self._interrupted - {container_id}

    def _path(self, container_id: str) -> str:
        if not container_id or os.sep in container_id or container_id.startswith("."):
            raise ValueError(f"not a container id: {container_id!r}")
        return os.path.join(self._dir, container_id)
