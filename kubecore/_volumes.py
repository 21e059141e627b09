"""Pod directories on the node: emptyDir volumes, termination-message files, orphan teardown.

Layout under the agent's root dir (as the kubelet's)::

    <root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<volume>
    <root>/pods/<uid>/containers/<container>/<restart>/termination-log
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable, Mapping

from kubecore._model import Pod

logger = logging.getLogger(__name__)

EMPTY_DIR_PLUGIN = "kubernetes.io~empty-dir"
_MAX_MESSAGE = 4096


_CREATE_EMPTY = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def _make_dirs(path: str) -> None:
    """``os.makedirs(path, exist_ok=True)`` with the leaf tried first: one ``mkdir`` per directory
    made and none of makedirs' ``stat`` of each parent (pod directories are made in bulk)."""
    try:
        os.mkdir(path)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
    except FileNotFoundError:
        parent = os.path.dirname(path)
        if not parent or parent == path:
            raise
        _make_dirs(parent)
        try:
            os.mkdir(path)
        except FileExistsError:
            if not os.path.isdir(path):
                raise


class VolumeManager:
    def __init__(self, root_dir: str) -> None:
        self.root_dir = os.path.abspath(root_dir)
        self.pods_dir = os.path.join(self.root_dir, "pods")

    def pod_dir(self, uid: str) -> str:
        if not uid or "/" in uid or uid in (".", ".."):
            raise ValueError(f"bad pod uid {uid!r}")
        return os.path.join(self.pods_dir, uid)

    def empty_dir_path(self, uid: str, volume: str) -> str:
        return os.path.join(self.pod_dir(uid), "volumes", EMPTY_DIR_PLUGIN, volume)

    def termination_log_path(self, uid: str, container: str, restart_count: int) -> str:
        return os.path.join(
            self.pod_dir(uid), "containers", container, str(restart_count), "termination-log"
        )

    def setup(self, pod: Pod) -> dict[str, str]:
        """Create the pod's volumes; return the host path of each volume by name.

        emptyDir lives under the pod's directory; hostPath is used as given (a missing hostPath
        directory is left for the runtime to report, as Kubernetes' default type does).
        """
        paths: dict[str, str] = {}
        for volume in pod.spec.volumes:
            if volume.host_path is not None:
                paths[volume.name] = volume.host_path.path
            else:
                # emptyDir is also the default for a volume naming no source
                path = self.empty_dir_path(pod.uid, volume.name)
                _make_dirs(path)
                paths[volume.name] = path
        return paths

    def prepare_termination_log(self, uid: str, container: str, restart_count: int) -> str:
        """Create an empty termination-message file for one run of a container; return its path."""
        path = self.termination_log_path(uid, container, restart_count)
        _make_dirs(os.path.dirname(path))
        os.close(os.open(path, _CREATE_EMPTY, 0o666))
        return path

    def read_termination_message(self, uid: str, container: str, restart_count: int) -> str:
        """What the container wrote to its termination-message file ('' if nothing)."""
        try:
            with open(self.termination_log_path(uid, container, restart_count), "rb") as f:
                return f.read(_MAX_MESSAGE).decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def pod_dirs(self) -> list[str]:
        """UIDs that have a directory under ``<root>/pods``."""
        try:
            return sorted(e.name for e in os.scandir(self.pods_dir) if e.is_dir())
        except FileNotFoundError:
            return []

    def cleanup_orphans(self, keep: Iterable[str] | Mapping[str, object]) -> list[str]:
        """Remove the directories of pods not in ``keep`` (desired, or still with containers).

        hostPath volumes are never under the pod directory, so they are never touched.
        Returns the UIDs removed.
        """
        keep_set = set(keep)
        removed: list[str] = []
        for uid in self.pod_dirs():
            if uid in keep_set:
                continue
            try:
                shutil.rmtree(os.path.join(self.pods_dir, uid))
            except OSError as exc:
                logger.warning("could not remove orphaned pod directory %s: %s", uid, exc)
                continue
            logger.info("removed orphaned volumes of pod %s", uid)
            removed.append(uid)
        return removed
