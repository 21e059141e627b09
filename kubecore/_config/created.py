"""When the node first received each pod, kept on disk, so that a pod's ``creationTimestamp``
(and the AGE ``kubectl get pods`` shows) stays the same across restarts of the agent.

One rule, applied where every source's pods meet (``PodConfig``): a pod its source gives no
creation time (a manifest file's, a URL's, an embedder's) gets the time the agent first received
it, remembered by uid in ``<root-dir>/pod-creation-times.json`` until its source removes the pod
(a pod removed and added again is a new pod); a time the source gives is kept as it is (the
API's own pods have theirs, in the API's store). A file that cannot be read or written is logged
once and the times are kept in memory: ages may then restart with the agent, nothing else is
affected.

Not covered: the entries of a source that is no longer configured after a restart stay in the
file (one short line a pod).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import attrs

from kubecore._model.v1 import Pod
from kubecore._util.files import replace_file
from kubecore._util.timefmt import parse_time, rfc3339

logger = logging.getLogger(__name__)

CREATION_TIMES_FILE = "pod-creation-times.json"
"""The file under the agent's root directory."""


class CreationTimes:
    """The creation time of each pod received without one, by uid (``path``: where they are
    kept; None: in memory only)."""

    def __init__(self, path: str | os.PathLike[str] | None, now: Callable[[], float]) -> None:
        self._path = Path(path) if path is not None else None
        self._now = now
        self._warned = False
        self._times: dict[str, str] = self._load()

    def stamp(self, pods: Iterable[Pod]) -> list[Pod]:
        """``pods``, each without a creation time given the one it was first received at."""
        out: list[Pod] = []
        added = False
        for pod in pods:
            meta = pod.metadata
            if meta.creation_timestamp or not meta.uid:
                out.append(pod)
                continue
            created = self._times.get(meta.uid)
            if created is None:
                created = self._times[meta.uid] = rfc3339(self._now())
                added = True
            out.append(attrs.evolve(pod, metadata=attrs.evolve(meta, creation_timestamp=created)))
        if added:
            self._save()
        return out

    def forget(self, uids: Iterable[str]) -> None:
        """The pods ``uids`` were removed by their source: a pod added again is a new one."""
        gone = [uid for uid in uids if uid in self._times]
        for uid in gone:
            del self._times[uid]
        if gone:
            self._save()

    def _load(self) -> dict[str, str]:
        if self._path is None:
            return {}
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            self._warn(f"cannot be read ({error})")
            return {}
        if not isinstance(data, dict):
            self._warn("does not hold a JSON object")
            return {}
        return {
            uid: stamp
            for uid, stamp in data.items()
            if isinstance(uid, str) and isinstance(stamp, str) and parse_time(stamp) is not None
        }

    def _save(self) -> None:
        if self._path is None:
            return
        data = json.dumps(self._times, indent=0, sort_keys=True).encode() + b"\n"
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(self._path, data)
        except OSError as error:
            self._warn(f"cannot be written ({error.strerror or error})")

    def _warn(self, why: str) -> None:
        level = logging.DEBUG if self._warned else logging.WARNING
        self._warned = True
        logger.log(
            level,
            "the pods' creation times file %s %s: they are kept in memory (AGE may restart "
            "with the agent)",
            self._path,
            why,
        )
