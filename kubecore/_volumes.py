"""Pod directories on the node: emptyDir volumes, termination-message files, orphan teardown.

Layout under the agent's root dir (as the kubelet's)::

    <root>/.kubecore.lock                                   held by the agent using the root dir
    <root>/pods/<uid>/.node                                 the node name that made the directory
    <root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<volume>
    <root>/pods/<uid>/containers/<container>/<restart>/termination-log

One agent process uses a root dir at a time (an exclusive ``flock`` on the lock file, taken before
the first change; agents in one process, such as a harness restarting its agent, share it), and an
agent removes only the pod directories made for its own node name.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import stat
import threading
from collections.abc import Iterable, Mapping

from kubecore._errors import RootDirInUse
from kubecore._model import Pod
from kubecore._security import fs_group

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


LOCK_FILE = ".kubecore.lock"
NODE_FILE = ".node"

_held_lock = threading.Lock()
_held: dict[str, tuple[int, int]] = {}
"""Root dir -> (lock file descriptor, users in this process). A ``flock`` belongs to the process's
open file, so agents of one process share the one taken."""


def acquire_root_dir(root_dir: str, node_name: str) -> None:
    """Take the root dir's lock for this process (shared by agents of this process); raises
    ``RootDirInUse`` naming the holder when another process has it."""
    path = os.path.join(root_dir, LOCK_FILE)
    with _held_lock:
        held = _held.get(root_dir)
        if held is not None:
            _held[root_dir] = (held[0], held[1] + 1)
            return
        _make_dirs(root_dir)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.pread(fd, 256, 0).decode(errors="replace").strip() or "unknown pid"
            finally:
                os.close(fd)
            raise RootDirInUse(root_dir, holder) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}, node {node_name}\n".encode(), 0)
        except OSError as error:  # a full disk: the lock holds, only the holder's name is lost
            logger.warning("could not write the holder into %s: %s", path, error)
        _held[root_dir] = (fd, 1)


def release_root_dir(root_dir: str) -> None:
    """Give back one use of the lock; the last user of this process unlocks it."""
    with _held_lock:
        held = _held.get(root_dir)
        if held is None:
            return
        fd, users = held
        if users > 1:
            _held[root_dir] = (fd, users - 1)
            return
        del _held[root_dir]
        os.close(fd)  # closing the only descriptor releases the flock


_GROUP_DIR_BITS = stat.S_IRGRP | stat.S_IWGRP | stat.S_IXGRP | stat.S_ISGID


def set_volume_ownership(path: str, gid: int, *, on_root_mismatch: bool = False) -> None:
    """Give a volume's files to the pod's fsGroup, as the kubelet does: group ``gid``, group
    read-write (and search on directories), and setgid directories so new files join the group.
    ``on_root_mismatch`` (fsGroupChangePolicy ``OnRootMismatch``): nothing is walked when the
    volume's root already has that group and those bits."""
    if on_root_mismatch:
        info = os.stat(path)
        if info.st_gid == gid and info.st_mode & _GROUP_DIR_BITS == _GROUP_DIR_BITS:
            return
    for root, dirs, files in os.walk(path):
        _share_with_group(root, gid, directory=True)
        for name in dirs:
            _share_with_group(os.path.join(root, name), gid, directory=True)
        for name in files:
            _share_with_group(os.path.join(root, name), gid, directory=False)


def _share_with_group(path: str, gid: int, *, directory: bool) -> None:
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return
    if info.st_gid != gid:
        os.chown(path, -1, gid)
    extra = stat.S_IRGRP | stat.S_IWGRP
    if directory:
        extra |= stat.S_IXGRP | stat.S_ISGID
    elif info.st_mode & stat.S_IXUSR:
        extra |= stat.S_IXGRP
    mode = stat.S_IMODE(info.st_mode)
    if mode | extra != mode:
        os.chmod(path, mode | extra)


class VolumeManager:
    def __init__(self, root_dir: str, node_name: str = "") -> None:
        self.root_dir = os.path.abspath(root_dir)
        self.pods_dir = os.path.join(self.root_dir, "pods")
        self.node_name = node_name
        self._locked = False
        self._marked: set[str] = set()
        """Pod directories this manager has marked with its node name (or found marked)."""

    def acquire(self) -> None:
        """Take the root dir for this agent (``RootDirInUse`` if another process has it).
        Done before the first change; call it early to fail fast."""
        if not self._locked:
            acquire_root_dir(self.root_dir, self.node_name)
            self._locked = True

    def release(self) -> None:
        if self._locked:
            self._locked = False
            release_root_dir(self.root_dir)

    def _claim(self, uid: str) -> str:
        """The pod's directory, made and marked with this node's name on first use."""
        path = self.pod_dir(uid)
        if uid in self._marked:
            return path
        self.acquire()
        _make_dirs(path)
        marker = os.path.join(path, NODE_FILE)
        try:
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass
        else:
            try:
                os.write(fd, self.node_name.encode())
            finally:
                os.close(fd)
        self._marked.add(uid)
        return path

    def _owner(self, uid: str) -> str | None:
        """The node name that made the pod's directory (None: made before directories were
        marked, taken as this node's)."""
        try:
            with open(os.path.join(self.pods_dir, uid, NODE_FILE), "rb") as f:
                return f.read(256).decode(errors="replace")
        except OSError:
            return None

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
        if pod.spec.volumes:
            self._claim(pod.uid)
        gid = fs_group(pod)
        pod_sc = pod.spec.security_context
        on_root_mismatch = pod_sc is not None and pod_sc.fs_group_change_policy == "OnRootMismatch"
        for volume in pod.spec.volumes:
            if volume.host_path is not None:
                paths[volume.name] = volume.host_path.path
            else:
                # emptyDir is also the default for a volume naming no source
                path = self.empty_dir_path(pod.uid, volume.name)
                _make_dirs(path)
                if gid is not None:
                    set_volume_ownership(path, gid, on_root_mismatch=on_root_mismatch)
                paths[volume.name] = path
        return paths

    def prepare_termination_log(self, uid: str, container: str, restart_count: int) -> str:
        """Create an empty termination-message file for one run of a container; return its path."""
        self._claim(uid)
        path = self.termination_log_path(uid, container, restart_count)
        _make_dirs(os.path.dirname(path))
        os.close(os.open(path, _CREATE_EMPTY, 0o666))
        os.chmod(path, 0o666)  # past the umask: a container running as any user writes it
        return path

    def read_termination_message(self, uid: str, container: str, restart_count: int) -> str:
        """What the container wrote to its termination-message file ('' if nothing)."""
        try:
            with open(self.termination_log_path(uid, container, restart_count), "rb") as f:
                return f.read(_MAX_MESSAGE).decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def prune_container_dirs(self, uid: str, keep: Iterable[tuple[str, int]]) -> int:
        """Remove the pod's ``containers/<name>/<restart>`` directories (termination messages)
        of container instances no longer on the node (``keep``: the (name, restart count) of
        those that are). Returns how many were removed."""
        base = os.path.join(self.pod_dir(uid), "containers")
        wanted = {(name, str(restart)) for name, restart in keep}
        removed = 0
        try:
            names = os.listdir(base)
        except FileNotFoundError:
            return 0
        for name in names:
            container_dir = os.path.join(base, name)
            try:
                runs = os.listdir(container_dir)
            except (NotADirectoryError, FileNotFoundError):
                continue
            for run in runs:
                if (name, run) in wanted:
                    continue
                shutil.rmtree(os.path.join(container_dir, run), ignore_errors=True)
                removed += 1
            if not os.listdir(container_dir):
                os.rmdir(container_dir)
        return removed

    def pod_dirs(self) -> list[str]:
        """UIDs that have a directory under ``<root>/pods``."""
        try:
            return sorted(e.name for e in os.scandir(self.pods_dir) if e.is_dir())
        except FileNotFoundError:
            return []

    def cleanup_orphans(self, keep: Iterable[str] | Mapping[str, object]) -> list[str]:
        """Remove the directories of pods not in ``keep`` (desired, or still with containers)
        that this node made. hostPath volumes are never under the pod directory, so they are
        never touched. Returns the UIDs removed.
        """
        keep_set = set(keep)
        removed: list[str] = []
        for uid in self.pod_dirs():
            if uid in keep_set:
                continue
            owner = self._owner(uid)
            if owner is not None and owner != self.node_name:
                continue
            self.acquire()
            try:
                shutil.rmtree(os.path.join(self.pods_dir, uid))
            except OSError as exc:
                logger.warning("could not remove orphaned pod directory %s: %s", uid, exc)
                continue
            logger.info("removed orphaned volumes of pod %s", uid)
            self._marked.discard(uid)
            removed.append(uid)
        return removed
