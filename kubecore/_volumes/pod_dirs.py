"""Pod directories on the node: emptyDir volumes, termination-message files, orphan teardown.

Layout under the agent's root dir (as the kubelet's)::

    <root>/.kubecore.lock                                   held by the agent using the root dir
    <root>/pods/<uid>/.node                                 the node name that made the directory
    <root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<volume>
    <root>/pods/<uid>/volumes/kubernetes.io~configmap/<volume>       (atomic writer, see
    <root>/pods/<uid>/volumes/kubernetes.io~secret/<volume>           ``_atomic_writer``;
    <root>/pods/<uid>/volumes/kubernetes.io~downward-api/<volume>     the secret and projected
    <root>/pods/<uid>/volumes/kubernetes.io~projected/<volume>        plugin dirs are 0700)
    <root>/pods/<uid>/containers/<container>/<restart>/termination-log
    <root>/pods/<uid>/etc-hosts                             the pod's managed /etc/hosts
    <root>/pods/<uid>/volume-subpaths/<volume>/<container>/<index>   a subPath's bind (see
                                                            ``kubecore._volumes.subpath``)

One agent uses a root dir at a time (an exclusive ``flock`` on the lock file against other
processes, and the same rule inside one process: a harness restarting its agent stops the old one
first), and an agent removes only the pod directories made for its own node name.
"""

from __future__ import annotations

import errno
import fcntl
import gc
import logging
import os
import shutil
import stat
import threading
import weakref
from collections.abc import Iterable, Mapping

import attrs

from kubecore._contract.errors import MountFailed, RootDirInUse
from kubecore._model.v1 import Pod, Volume
from kubecore._util.host import directory_usage
from kubecore._volumes.atomic_writer import write_atomically
from kubecore._volumes.host_mounts import mount_points_under
from kubecore._volumes.sources import (
    DictObjects,
    NodeCapacity,
    ObjectLookup,
    check_host_path,
    node_capacity,
    object_payload,
)
from kubecore._volumes.subpath import (
    SUB_PATHS_DIR,
    bind_sub_path,
    open_sub_path,
    read_opened,
    release_sub_paths,
    sub_path_target,
)
from kubecore._volumes.tmpfs import mount_tmpfs, tmpfs_size, unmount_below

logger = logging.getLogger(__name__)

EMPTY_DIR_PLUGIN = "kubernetes.io~empty-dir"
"""The directory of a pod's emptyDir volumes under its volumes directory (as the kubelet's)."""
CONFIG_MAP_PLUGIN = "kubernetes.io~configmap"
SECRET_PLUGIN = "kubernetes.io~secret"
DOWNWARD_API_PLUGIN = "kubernetes.io~downward-api"
PROJECTED_PLUGIN = "kubernetes.io~projected"
_PRIVATE_PLUGINS = frozenset({SECRET_PLUGIN, PROJECTED_PLUGIN})
"""Plugin directories other host users may not enter: secret files keep the mode the pod asks
for (0644 by default, so a non-root container user can read them), and this directory is what
keeps them from the host's other users."""
_EMPTY_DIR_MODE = 0o777
"""The kubelet's mode for a disk emptyDir, so that any container user can write to it."""


@attrs.frozen
class PodVolume:
    """A pod's volume as set up on the node: what its containers' mounts bind."""

    host_path: str
    read_only: bool = False
    """Every mount of it is read-only (a persistentVolumeClaim's ``readOnly``)."""
    memory_backed: bool = False
    """An emptyDir of medium Memory whose tmpfs the runtime makes (see ``Mount.memory_backed``);
    False for one the agent mounted on the host (``VolumeManager(host_tmpfs=True)``)."""
    size_limit_bytes: int | None = None
    mode: int | None = None
    """The tmpfs root's permission bits (memory-backed only; see ``Mount.mode``)."""


def _plugin_of(volume: Volume) -> str | None:
    if volume.config_map is not None:
        return CONFIG_MAP_PLUGIN
    if volume.secret is not None:
        return SECRET_PLUGIN
    if volume.downward_api is not None:
        return DOWNWARD_API_PLUGIN
    if volume.projected is not None:
        return PROJECTED_PLUGIN
    return None


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


def _write_file(path: str, data: bytes, mode: int) -> None:
    """Write ``data`` over ``path`` in place and give it ``mode`` whatever the umask."""
    fd = os.open(path, _CREATE_EMPTY, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def empty_dir_mode(volume: Volume, gid: int | None) -> int:
    """An emptyDir's permission bits: the pod's fsGroup decides them when set (0777 with
    setgid), else the volume's ``mode``, else 0777."""
    if gid is not None:
        return _EMPTY_DIR_MODE | 0o2000
    if volume.empty_dir is not None and volume.empty_dir.mode is not None:
        return volume.empty_dir.mode
    return _EMPTY_DIR_MODE


def _make_empty_dir(path: str, gid: int | None, mode: int) -> None:
    _make_dirs(path)
    if gid is not None:
        os.chown(path, -1, gid)
    if os.stat(path).st_mode & 0o7777 != mode:
        os.chmod(path, mode)


MAX_ENV_FILE_BYTES = 1024 * 1024
"""The largest env file (``fileKeyRef``) the agent reads."""


def read_volume_file(volume_dir: str, path: str) -> str | None:
    """The text of ``path`` inside the volume at ``volume_dir`` (a container wrote it), None
    when it is not there. It is opened as a subPath is (``open_sub_path``): a path that leads
    out of the volume (a symbolic link a container made, even one swapped in meanwhile) is
    refused rather than followed, as is anything but a regular file and a file over
    ``MAX_ENV_FILE_BYTES``."""
    try:
        fd, _ = open_sub_path(volume_dir, path, make_mode=None)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except ValueError as exc:
        raise ValueError(f"{path} leads out of its volume") from exc
    try:
        data = read_opened(fd, MAX_ENV_FILE_BYTES + 1)
    except ValueError as exc:
        raise ValueError(f"{path} is {exc}") from exc
    finally:
        os.close(fd)
    if data is None:
        return None
    if len(data) > MAX_ENV_FILE_BYTES:
        raise ValueError(f"{path} is larger than {MAX_ENV_FILE_BYTES} bytes")
    return data.decode("utf-8", "replace")


def _is_disk_empty_dir(volume: Volume) -> bool:
    if volume.empty_dir is not None:
        return volume.empty_dir.medium != "Memory"
    return all(
        source is None
        for source in (
            volume.host_path,
            volume.config_map,
            volume.secret,
            volume.downward_api,
            volume.projected,
            volume.persistent_volume_claim,
            volume.image,
        )
    )


LOCK_FILE = ".kubecore.lock"
NODE_FILE = ".node"

_held_lock = threading.Lock()
_held: dict[str, tuple[int, weakref.ref[object], str]] = {}
"""Root dir -> (lock file descriptor, the one agent of this process using it, its node name).
A ``flock`` belongs to the process's open file, so the process itself must keep a second agent
out."""


def acquire_root_dir(root_dir: str, node_name: str, owner: object) -> None:
    """Take the root dir's lock for ``owner`` (idempotent for the same owner); raises
    ``RootDirInUse`` naming the holder when another process, or another agent of this process,
    has it. An agent of this process that was dropped without being closed does not keep it."""
    path = os.path.join(root_dir, LOCK_FILE)
    with _held_lock:
        held = _held.get(root_dir)
        if held is not None and held[1]() is not None and held[1]() is not owner:
            gc.collect()  # a dropped agent caught in a reference cycle is not a holder
        held = _held.get(root_dir)
        if held is not None:
            fd, holder, holder_node = held
            if holder() is not None and holder() is not owner:
                raise RootDirInUse(
                    root_dir,
                    f"another agent of this process, pid {os.getpid()}, node {holder_node}",
                )
            _held[root_dir] = (fd, weakref.ref(owner), node_name)
            return
        _make_dirs(root_dir)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder_text = os.pread(fd, 256, 0).decode(errors="replace").strip()
            finally:
                os.close(fd)
            raise RootDirInUse(root_dir, holder_text or "unknown pid") from None
        except BaseException:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}, node {node_name}\n".encode(), 0)
        except OSError as error:  # a full disk: the lock holds, only the holder's name is lost
            logger.warning("could not write the holder into %s: %s", path, error)
        _held[root_dir] = (fd, weakref.ref(owner), node_name)


def root_dir_holder(root_dir: str) -> str | None:
    """Who holds the root dir's lock (its holder line, ``pid 12, node n1``), or None when no
    process does; found without taking the lock, nor making the file (``/proc/locks``)."""
    path = os.path.join(root_dir, LOCK_FILE)
    try:
        stat = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            listed = locks.read()
    except OSError:
        return None
    device = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    held = any(
        fields[1] == "FLOCK" and fields[5] == device
        for fields in (line.split() for line in listed.splitlines())
        if len(fields) > 5 and fields[1] != "->"
    )
    if not held:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as lock:
            return lock.read(256).strip() or "unknown pid"
    except OSError:
        return "unknown pid"


def release_root_dir(root_dir: str, owner: object) -> None:
    """Give the lock back if ``owner`` holds it (closing the descriptor releases the flock)."""
    with _held_lock:
        held = _held.get(root_dir)
        if held is None or held[1]() is not owner:
            return
        del _held[root_dir]
        os.close(held[0])


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
    """The pod directories of one agent, and every volume source set up in them.

    ``objects`` serves configMap and secret volumes (none: every ConfigMap and Secret is
    missing); ``pvc_dir`` maps a persistentVolumeClaim to ``<pvc_dir>/<namespace>/<claim>``;
    ``host_tmpfs``: each emptyDir of medium Memory is a tmpfs the agent mounts on the host
    (``kubecore._volumes.tmpfs``), for a runtime that binds host paths only;
    ``bind_sub_paths`` False: a subPath is handed over as the path the agent verified, for a
    runtime that reads its mounts itself rather than by a kernel bind (``InProcessMounts``).
    """

    def __init__(
        self,
        root_dir: str,
        node_name: str = "",
        *,
        objects: ObjectLookup | None = None,
        pvc_dir: str = "",
        host_tmpfs: bool = False,
        bind_sub_paths: bool = True,
    ) -> None:
        self.host_tmpfs = host_tmpfs
        self.bind_sub_paths = bind_sub_paths
        self.root_dir = os.path.abspath(root_dir)
        self.pods_dir = os.path.join(self.root_dir, "pods")
        self.node_name = node_name
        self.objects: ObjectLookup = objects if objects is not None else DictObjects()
        self.pvc_dir = pvc_dir
        self._capacity: NodeCapacity | None = None
        self._write_lock = threading.Lock()
        """One writer at a time per volume directory: a worker's set-up and the refresh."""
        self._locked = False
        self._marked: dict[str, set[str]] = {}
        """Pod directories this manager has marked with its node name (or found marked), each
        with the names of the ``containers/<name>`` directories known to exist in it (so that
        new ones are made with one ``mkdir`` per level and no failed attempt)."""

    def acquire(self) -> None:
        """Take the root dir for this agent (``RootDirInUse`` if another process has it).
        Done before the first change; call it early to fail fast."""
        if not self._locked:
            acquire_root_dir(self.root_dir, self.node_name, self)
            self._locked = True

    def release(self) -> None:
        if self._locked:
            self._locked = False
            release_root_dir(self.root_dir, self)

    def _claim(self, uid: str) -> str:
        """The pod's directory, made and marked with this node's name on first use."""
        path = self.pod_dir(uid)
        if uid in self._marked:
            return path
        self.acquire()
        made: set[str] = set()
        try:
            os.mkdir(path)
        except FileExistsError:
            if not os.path.isdir(path):
                raise
            fresh = False
        except FileNotFoundError:
            _make_dirs(path)
            fresh = True
        else:
            fresh = True
        if fresh:
            # A new pod directory: its containers directory is made now, with no probing.
            os.mkdir(os.path.join(path, "containers"))
            made.add("")
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
        self._marked[uid] = made
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

    def volume_path(self, uid: str, plugin: str, volume: str) -> str:
        return os.path.join(self.pod_dir(uid), "volumes", plugin, volume)

    def claim_path(self, namespace: str, claim: str) -> str:
        return os.path.join(self.pvc_dir, namespace, claim)

    @property
    def capacity(self) -> NodeCapacity:
        if self._capacity is None:
            self._capacity = node_capacity(self.root_dir)
        return self._capacity

    def setup(self, pod: Pod) -> dict[str, PodVolume]:
        """Set up the pod's volumes; return each by name. Raises ``MountFailed`` for the first
        volume that cannot be set up (the caller retries at its next sync).

        The pod's ``fsGroup`` owns its emptyDir and object volumes: files and directories get
        that group, directories the setgid bit.
        """
        volumes: dict[str, PodVolume] = {}
        if pod.spec.volumes:
            self._claim(pod.uid)
        gid = fs_group(pod)
        pod_sc = pod.spec.security_context
        on_root_mismatch = pod_sc is not None and pod_sc.fs_group_change_policy == "OnRootMismatch"
        for volume in pod.spec.volumes:
            try:
                volumes[volume.name] = self._setup_one(pod, volume, gid, on_root_mismatch)
            except (ValueError, OSError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise MountFailed(volume.name, reason) from exc
        return volumes

    def _setup_one(
        self, pod: Pod, volume: Volume, gid: int | None, on_root_mismatch: bool
    ) -> PodVolume:
        if volume.host_path is not None:
            check_host_path(volume.host_path.path, volume.host_path.type)
            return PodVolume(volume.host_path.path)
        if volume.persistent_volume_claim is not None:
            claim = volume.persistent_volume_claim
            if not self.pvc_dir:
                raise ValueError(
                    f'persistentvolumeclaim "{claim.claim_name}" cannot be bound: there is no'
                    " API server (give --pvc-dir to map claims to directories)"
                )
            path = self.claim_path(pod.metadata.namespace, claim.claim_name)
            if not os.path.isdir(path):
                raise ValueError(
                    f'persistentvolumeclaim "{claim.claim_name}" has no directory {path}'
                    " (--pvc-dir maps a claim to <dir>/<namespace>/<claim>)"
                )
            return PodVolume(path, read_only=claim.read_only)
        plugin = _plugin_of(volume)
        if plugin is not None:
            path = self.volume_path(pod.uid, plugin, volume.name)
            self._write_object_volume(pod, volume, plugin, path, gid)
            return PodVolume(path)
        if volume.image is not None:
            raise ValueError("image volumes are not supported by kubecore's runtimes")
        # emptyDir is also the default for a volume naming no source
        path = self.empty_dir_path(pod.uid, volume.name)
        mode = empty_dir_mode(volume, gid)
        _make_empty_dir(path, gid, mode)
        if gid is not None:
            set_volume_ownership(path, gid, on_root_mismatch=on_root_mismatch)
        if volume.empty_dir is None or volume.empty_dir.medium != "Memory":
            return PodVolume(path)
        if self.host_tmpfs:
            mount_tmpfs(path, tmpfs_size(pod, volume), mode)
            _make_empty_dir(path, gid, mode)  # the tmpfs root: the group and bits asked for
            return PodVolume(path)
        return PodVolume(
            path, memory_backed=True, size_limit_bytes=tmpfs_size(pod, volume), mode=mode
        )

    def _write_object_volume(
        self, pod: Pod, volume: Volume, plugin: str, path: str, gid: int | None
    ) -> bool:
        payload = object_payload(pod, volume, self.objects, self.capacity)
        assert payload is not None
        plugin_dir = os.path.dirname(path)
        _make_dirs(plugin_dir)
        if plugin in _PRIVATE_PLUGINS:
            os.chmod(plugin_dir, 0o700)
        with self._write_lock:
            return write_atomically(path, payload, gid=gid)

    def refresh(self, pods: Iterable[Pod]) -> int:
        """Bring the object volumes already set up for ``pods`` up to date with their objects
        and the pods' metadata (a payload that cannot be made now keeps the last one written,
        as the kubelet's does). Returns how many volumes changed."""
        changed = 0
        for pod in pods:
            for volume in pod.spec.volumes:
                plugin = _plugin_of(volume)
                if plugin is None:
                    continue
                path = self.volume_path(pod.uid, plugin, volume.name)
                if not os.path.isdir(path):
                    continue  # not set up yet: the pod's worker does it
                gid = fs_group(pod)
                try:
                    if self._write_object_volume(pod, volume, plugin, path, gid):
                        changed += 1
                except (ValueError, OSError) as exc:
                    logger.debug("volume %s of pod %s not refreshed: %s", volume.name, pod.uid, exc)
        return changed

    def sub_path_source(
        self,
        uid: str,
        volume_name: str,
        volume: PodVolume,
        sub_path: str,
        *,
        container: str,
        index: int,
    ) -> str:
        """The host path a container's ``index``-th volumeMount, a ``subPath`` of the volume,
        binds; missing directories are made with the volume's mode. ``ValueError`` when it
        would leave the volume. The subPath is resolved once, by the agent
        (``kubecore._volumes.subpath``): a symlink inside the volume is followed now, so the
        mount keeps what it points to today (a subPath of a configMap volume is not updated,
        as in Kubernetes). On a runtime whose mounts are kernel binds the answer is a bind of
        the verified inode under the pod's directory, which a container cannot swap; one that
        cannot be made (the agent is not root) refuses the subPath."""
        mode = os.stat(volume.host_path).st_mode & 0o7777
        fd, resolved = open_sub_path(volume.host_path, sub_path, make_mode=mode)
        try:
            if not self.bind_sub_paths:
                return resolved
            self._claim(uid)
            target = sub_path_target(self.pod_dir(uid), volume_name, container, index)
            try:
                bind_sub_path(fd, target)
            except PermissionError as exc:
                raise ValueError(
                    f"cannot bind-mount it safely ({exc.strerror}): a subPath on this runtime"
                    " needs the agent to run as root (CAP_SYS_ADMIN)"
                ) from exc
            return target
        finally:
            os.close(fd)

    def empty_dir_usage(self, pod: Pod) -> dict[str, int]:
        """Disk bytes used by each of the pod's disk (not Memory) emptyDir volumes set up."""
        usage: dict[str, int] = {}
        for volume in pod.spec.volumes:
            if not _is_disk_empty_dir(volume):
                continue
            path = self.empty_dir_path(pod.uid, volume.name)
            if os.path.isdir(path):
                usage[volume.name] = directory_usage(path)[0]
        return usage

    def prepare_termination_log(self, uid: str, container: str, restart_count: int) -> str:
        """Create an empty termination-message file for one run of a container; return its path."""
        self._claim(uid)
        path = self.termination_log_path(uid, container, restart_count)
        run_dir = os.path.dirname(path)
        made = self._marked[uid]
        try:
            if "" not in made or container in made:
                raise FileNotFoundError
            os.mkdir(os.path.dirname(run_dir))
            os.mkdir(run_dir)
        except OSError:
            _make_dirs(run_dir)
        made.add(container)
        _write_file(path, b"", 0o666)  # past the umask: a container running as any user writes it
        return path

    def write_etc_hosts(self, uid: str, content: str) -> str:
        """Write the pod's managed hosts file (``<pod dir>/etc-hosts``) unless it already says
        ``content``; return its path. Written in place: running containers bind-mount it."""
        self._claim(uid)
        path = os.path.join(self.pod_dir(uid), "etc-hosts")
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == content:
                    return path
        except OSError:
            pass
        _write_file(path, content.encode(), 0o644)
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
        never touched. Its subPath binds and tmpfs mounts are unmounted first (found in the
        kernel's mount table); a directory with a mount left is kept. Returns the UIDs removed.
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
            pod_dir = os.path.join(self.pods_dir, uid)
            try:
                release_sub_paths(os.path.join(pod_dir, SUB_PATHS_DIR))
                unmount_below([os.path.join(pod_dir, "volumes", EMPTY_DIR_PLUGIN)])
                left = mount_points_under(pod_dir)
                if left:  # removing through a mount would delete what it shows
                    raise OSError(errno.EBUSY, f"still mounted: {', '.join(left)}")
                shutil.rmtree(pod_dir)
            except OSError as exc:
                logger.warning("could not remove orphaned pod directory %s: %s", uid, exc)
                continue
            logger.info("removed orphaned volumes of pod %s", uid)
            self._marked.pop(uid, None)
            removed.append(uid)
        return removed


def fs_group(pod: Pod) -> int | None:
    pod_sc = pod.spec.security_context
    return pod_sc.fs_group if pod_sc is not None else None
