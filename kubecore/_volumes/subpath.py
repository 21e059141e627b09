"""subPath mounts resolved once, safely: the CVE-2017-1002101 class fixed at its root, as the
kubelet did (``doSafeOpen``, ``doSafeMakeDir``, ``prepareSubpathTarget``).

A container can rewrite its volume at any moment (turn a directory into a symbolic link to a
host directory), so no path inside a volume may be checked and then handed to the engine, which
would resolve it again. Instead the agent opens the subPath one component at a time from the
volume's directory with ``O_NOFOLLOW``: ``..`` and absolute parts are refused, a symbolic link
is read and followed by the agent itself only while it stays inside the volume, and a missing
directory is made (``mkdirat``) only in a parent already proven inside it. The descriptor it
ends with holds the verified inode; the engine is given a bind of ``/proc/self/fd/N`` (the
kernel resolves that magic link to the inode, not to a path) on a target under the pod's
directory, which no container can reach::

    <root>/pods/<uid>/volume-subpaths/<volume>/<container>/<index of the volumeMount>

The targets are unmounted when their container is gone and before the pod's directory is
removed, found from the kernel's mount table, never from memory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections import deque

from kubecore._volumes.host_mounts import bind_mount, mount_points_under, unmount

SUB_PATHS_DIR = "volume-subpaths"
_OPEN = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40
"""Symbolic links followed in one subPath at most (the kernel's ``ELOOP`` limit)."""
_MAX_STEPS = 4096
"""Components opened in one subPath at most: a container deleting each directory the agent
makes cannot keep it busy forever."""


def sub_path_parts(sub_path: str) -> list[str]:
    """The components of a subPath as written; ``ValueError`` for an absolute one or one with
    ``..`` (validation refuses both: this is the last line, for a subPathExpr expanded)."""
    if sub_path.startswith("/"):
        raise ValueError(f"subPath {sub_path!r} must not be an absolute path")
    parts = [part for part in sub_path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"subPath {sub_path!r} must not contain '..'")
    return parts


def _inside(root: str, target: str) -> str | None:
    """An absolute link target as a path relative to the volume's ``root``, None when it is
    not under it."""
    if target == root:
        return ""
    prefix = root.rstrip("/") + "/"
    return target[len(prefix) :] if target.startswith(prefix) else None


def open_sub_path(volume_dir: str, sub_path: str, *, make_mode: int | None) -> tuple[int, str]:
    """Open ``sub_path`` inside ``volume_dir`` without ever letting the kernel follow a
    symbolic link; return the ``O_PATH`` descriptor of what it names (the caller closes it) and
    its path as resolved. Missing directories are made with ``make_mode``, each in a parent
    already opened inside the volume (None: ``FileNotFoundError`` instead). ``ValueError``
    when the subPath leaves the volume."""
    root = os.path.realpath(volume_dir)
    roots = (root, os.path.abspath(volume_dir))
    root_fd = os.open(root, _OPEN | os.O_DIRECTORY)
    opened: list[tuple[str, int]] = []  # the directories walked below the root, each with its fd
    pending = deque(sub_path_parts(sub_path))
    links = steps = 0
    try:
        while pending:
            steps += 1
            if steps > _MAX_STEPS:
                raise OSError(errno.ELOOP, f"subPath {sub_path!r}: the volume keeps changing")
            name = pending.popleft()
            if name in ("", "."):
                continue
            if name == "..":  # only ever from a link's target
                if not opened:
                    raise ValueError(f"subPath {sub_path!r} leaves the volume (through '..')")
                os.close(opened.pop()[1])
                continue
            parent = opened[-1][1] if opened else root_fd
            try:
                fd = os.open(name, _OPEN, dir_fd=parent)
            except FileNotFoundError:
                if make_mode is None:
                    raise
                with contextlib.suppress(FileExistsError):  # made meanwhile: opened as any
                    os.mkdir(name, make_mode, dir_fd=parent)
                pending.appendleft(name)
                continue
            info = os.fstat(fd)
            if stat.S_ISLNK(info.st_mode):
                try:
                    target = os.readlink("", dir_fd=fd)
                finally:
                    os.close(fd)
                links += 1
                if links > _MAX_LINKS:
                    raise OSError(errno.ELOOP, f"subPath {sub_path!r}: too many symbolic links")
                if target.startswith("/"):
                    relative = next(
                        (r for r in (_inside(base, target) for base in roots) if r is not None),
                        None,
                    )
                    if relative is None:
                        raise ValueError(
                            f"subPath {sub_path!r} leaves the volume (a symbolic link to {target})"
                        )
                    while opened:
                        os.close(opened.pop()[1])
                    target = relative
                pending.extendleft(reversed(target.split("/")))
                continue
            opened.append((name, fd))
            if pending and not stat.S_ISDIR(info.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, f"subPath {sub_path!r}: {name} is a file")
        resolved = os.path.join(root, *(name for name, _ in opened))
        result = opened.pop()[1] if opened else os.dup(root_fd)
        return result, resolved
    finally:
        for _, fd in opened:
            os.close(fd)
        os.close(root_fd)


def read_opened(fd: int, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of the regular file ``fd`` (from ``open_sub_path``) holds, opened
    again through its magic link; None for a directory. ``ValueError`` for anything else (a
    FIFO would block the agent)."""
    kind = stat.S_IFMT(os.fstat(fd).st_mode)
    if kind == stat.S_IFDIR:
        return None
    if kind != stat.S_IFREG:
        raise ValueError("not a regular file")
    readable = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks: list[bytes] = []
        size = 0
        while size < limit and (chunk := os.read(readable, limit - size)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(readable)


def sub_path_target(pod_dir: str, volume: str, container: str, index: int) -> str:
    """Where the bind of a container's ``index``-th volumeMount (a subPath) is made."""
    return os.path.join(pod_dir, SUB_PATHS_DIR, volume, container, str(index))


def _same_inode(path: str, fd: int) -> bool:
    try:
        mounted = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (mounted.st_dev, mounted.st_ino) == (held.st_dev, held.st_ino)


def _fresh_target(target: str, directory: bool) -> None:
    """An empty directory or file at ``target`` for the bind (as the source is), nothing
    mounted on it."""
    for point in mount_points_under(target):
        unmount(point)
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISDIR(info.st_mode) == directory and not stat.S_ISLNK(info.st_mode):
            return
        if stat.S_ISDIR(info.st_mode):
            os.rmdir(target)
        else:
            os.unlink(target)
    if directory:
        os.mkdir(target, 0o750)
    else:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o640))


def bind_sub_path(fd: int, target: str) -> None:
    """Bind the inode ``fd`` holds onto ``target`` (kept when it is bound there already: a
    container's restart). Raises the kernel's ``OSError`` (``EPERM`` without CAP_SYS_ADMIN)."""
    if _same_inode(target, fd) and os.path.realpath(target) in mount_points_under(target):
        return
    os.makedirs(os.path.dirname(target), mode=0o750, exist_ok=True)
    _fresh_target(target, stat.S_ISDIR(os.fstat(fd).st_mode))
    bind_mount(f"/proc/self/fd/{fd}", target)


def release_sub_paths(directory: str) -> None:
    """Unmount every subPath bind at or below ``directory`` (a pod's, a volume's or a
    container's part of ``volume-subpaths``), then remove it. Nothing is removed while a mount
    is left (removing through a bind would delete the volume's files): the ``OSError`` says."""
    for point in mount_points_under(directory):
        unmount(point)
    left = mount_points_under(directory)
    if left:
        raise OSError(errno.EBUSY, f"still mounted: {', '.join(left)}", directory)
    if os.path.lexists(directory):
        shutil.rmtree(directory)
