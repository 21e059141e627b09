"""The agent's own files: written atomically and durably, read back only when they are what the
agent wrote (a regular file, never through a symbolic link, never blocking on a FIFO)."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat

TEMP_PREFIX = ".tmp-"
"""How a write's temporary file is named, in the directory of the file it replaces: a reader of
the directory skips these (a write not renamed in is not part of any state)."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def replace_file(path: str | os.PathLike[str], data: bytes, mode: int = 0o600) -> None:
    """Make ``path`` hold ``data`` with ``mode`` (whatever the umask) atomically and durably: a
    temporary file made new in the same directory (``O_EXCL | O_NOFOLLOW``: never someone's
    planted file or link), written, flushed to disk, renamed over ``path``, and the directory
    flushed. A reader, or the file after a crash, sees the old contents or the new, never a mix."""
    directory = os.path.dirname(os.path.abspath(path))
    temp = os.path.join(directory, f"{TEMP_PREFIX}{secrets.token_hex(8)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    sync_directory(directory)


def remove_file(path: str | os.PathLike[str]) -> bool:
    """Unlink ``path`` durably; False when it was not there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    sync_directory(os.path.dirname(os.path.abspath(path)))
    return True


def sync_directory(directory: str | os.PathLike[str]) -> None:
    """Flush ``directory`` itself to disk (a rename or unlink in it is durable after this)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class NotRegularFile(OSError):
    """What is at a path the agent reads its own state from is not a regular file."""


def read_own_file(path: str | os.PathLike[str]) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file the agent wrote, and what ``fstat`` says of the file read
    (its owner, mode and links, for a caller that checks them). Opened with ``O_NONBLOCK`` (a
    FIFO put there would block the reader forever) and ``O_NOFOLLOW`` (a symbolic link is not
    the agent's file: ``OSError`` ELOOP); ``NotRegularFile`` for a FIFO, a device, a socket or a
    directory."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"not a regular file (a {_file_type(info.st_mode)})")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), info
    finally:
        os.close(fd)


def _file_type(mode: int) -> str:
    kinds = {
        stat.S_ISFIFO: "FIFO",
        stat.S_ISCHR: "character device",
        stat.S_ISBLK: "block device",
        stat.S_ISSOCK: "socket",
        stat.S_ISDIR: "directory",
    }
    return next((name for test, name in kinds.items() if test(mode)), "special file")
