"""Mounts the agent makes on the host itself, through mount(2) and umount2(2) by ctypes (no
fork, the kernel's exact errors): tmpfs emptyDirs (``kubecore._volumes.tmpfs``) and the binds of
subPaths (``kubecore._volumes.subpath``). Each needs the agent to run as root (CAP_SYS_ADMIN).

Whether a path is a mount point is read from the kernel's table (``/proc/self/mountinfo``):
``os.path.ismount`` cannot tell a bind of a directory of the same filesystem."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os

MS_NOSUID = 2
MS_NODEV = 4
_MS_BIND = 4096
_MNT_DETACH = 2
_UMOUNT_NOFOLLOW = 8
MOUNT_INFO = "/proc/self/mountinfo"


@functools.cache
def libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def check(result: int, what: str, path: str) -> None:
    """Raise the ``OSError`` of a failed libc call (``result`` not 0), naming ``what`` it did."""
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what} {path}: {os.strerror(code)}", path)


def _unescape(field: str) -> str:
    """A mountinfo path field: the kernel writes space, tab, newline and backslash as octal."""
    if "\\" not in field:
        return field
    raw = field.encode()
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i : i + 1] == b"\\" and raw[i + 1 : i + 4].isdigit():
            out.append(int(raw[i + 1 : i + 4], 8))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return os.fsdecode(bytes(out))


def mount_points_under(directory: str) -> list[str]:
    """Every mount point at or below ``directory`` (its real path), deepest first, one entry
    per mount (a path mounted over twice is listed twice)."""
    top = os.path.realpath(directory)
    prefix = top.rstrip("/") + "/"
    with open(MOUNT_INFO, encoding="utf-8", errors="surrogateescape") as table:
        points = [_unescape(line.split(" ", 5)[4]) for line in table if line.strip()]
    found = [p for p in points if p == top or p.startswith(prefix)]
    return sorted(found, key=lambda p: p.count("/"), reverse=True)


def is_mount_point(path: str) -> bool:
    return os.path.realpath(path) in mount_points_under(path)


def bind_mount(source: str, target: str) -> None:
    """Bind ``source`` (``/proc/self/fd/N`` binds the inode the descriptor holds) onto
    ``target``, an existing directory or file of the same kind."""
    check(
        libc().mount(os.fsencode(source), os.fsencode(target), None, _MS_BIND, None), "bind", target
    )


def unmount(path: str) -> None:
    """Unmount what is mounted at ``path`` (detached when still busy; a symbolic link at
    ``path`` is not followed); nothing if nothing is."""
    if not is_mount_point(path):
        return
    target = os.fsencode(path)
    if libc().umount2(target, _UMOUNT_NOFOLLOW) == 0:
        return
    if ctypes.get_errno() == errno.EBUSY:
        check(libc().umount2(target, _UMOUNT_NOFOLLOW | _MNT_DETACH), "unmount", path)
        return
    check(-1, "unmount", path)
