"""Which files a manifest path names, and which directories to watch for them."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

import attrs


def list_manifest_files(path: Path) -> list[Path]:
    """The manifest files under ``path``: the file itself if it is a regular file, or the regular
    files of a directory (not recursive), sorted by name, skipping names that start with a dot;
    [] if ``path`` does not exist."""
    try:
        return [entry for entry in list_root(path) if entry.is_file()]
    except FileNotFoundError:
        return []


def list_root(path: Path) -> list[Path]:
    """What a manifest source answers for under ``path``: every entry of a directory that is not
    a directory (not recursive), sorted by name, skipping names that start with a dot, or
    ``path`` itself. A FIFO, a socket or a dangling symlink is listed too: reading it (never
    blocking) reports it as unreadable, which keeps the pods its file had, where leaving it out
    would read as the file removed. Raises ``OSError`` when ``path`` does not exist or cannot
    be listed."""
    if path.is_dir():
        return sorted(
            child
            for child in path.iterdir()
            if not child.name.startswith(".") and not child.is_dir()
        )
    path.stat()  # FileNotFoundError / PermissionError
    return [path]


@attrs.frozen
class DirectoryIdentity:
    """Which directory a manifest directory is: its device and inode, and its parent's device
    (they differ at a mounted mount point)."""

    device: int
    inode: int
    parent_device: int

    def mount_point_unmounted(self, before: DirectoryIdentity) -> bool:
        """``before`` was a mounted file system and this is the mount point under it (it sits
        on its parent's device)."""
        return before.device != before.parent_device and self.device == self.parent_device


@attrs.frozen
class RootSeen:
    """A manifest path as one scan found it: how many files it listed, and, for a directory,
    which one it is."""

    files: int
    identity: DirectoryIdentity | None


def directory_identity(path: Path) -> DirectoryIdentity | None:
    """The identity of the directory ``path`` (None: not a directory, or gone)."""
    try:
        info = os.stat(path)
        parent = os.stat(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    return DirectoryIdentity(info.st_dev, info.st_ino, parent.st_dev)


def os_reason(error: OSError) -> str:
    return error.strerror or type(error).__name__


def watched_directories(roots: Sequence[Path]) -> list[Path]:
    """What to watch for ``roots``: a directory itself, a file's directory (an editor replaces
    the file by a rename), the nearest existing ancestor of a path not there yet."""
    found: list[Path] = []
    for root in roots:
        path = root if root.is_dir() else root.parent
        while not path.is_dir() and path != path.parent:
            path = path.parent
        if path not in found:
            found.append(path)
    return found
