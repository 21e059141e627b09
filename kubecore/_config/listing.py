"""Which files a manifest path names, and which directories to watch for them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


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
