"""``/logs/`` and ``/logs/{path}``: the node's log files under ``log_dir``, never outside it, and
never one a user of the node who is not its owner could not read: no ``..``, no absolute path, no
symbolic link anywhere on the path, regular files only, and only what the file mode lets other
users read (``r`` on the file or the listed directory, ``x`` on each directory passed through).
The agent usually runs as root: without that rule, ``/logs/`` would read a root-only file to
anyone who may read the endpoint."""

from __future__ import annotations

import io
import os
import stat
import urllib.parse
from http import HTTPStatus
from pathlib import Path

from kubecore._apimachinery.rules import HTTPError
from kubecore._http.handler import TEXT_TYPE, Handler

MAX_LOG_PATH = 4096
MAX_LOG_NAME = 255
"""The longest ``/logs/`` path and file name asked for (Linux's PATH_MAX and NAME_MAX)."""


def resolve_log_path(root: str, relative: str) -> Path:
    """The file or directory ``relative`` names under ``root``; raises ``HTTPError`` for ``..``,
    an absolute path, a NUL byte, a symbolic link on the way, a directory on the way that not
    every user may search, or a missing file."""
    if "\0" in relative:
        raise HTTPError(HTTPStatus.BAD_REQUEST, "path: NUL byte")
    if len(relative) > MAX_LOG_PATH or any(len(p) > MAX_LOG_NAME for p in relative.split("/")):
        raise HTTPError(
            HTTPStatus.BAD_REQUEST,
            f"path: longer than {MAX_LOG_PATH} characters or a name longer than {MAX_LOG_NAME}",
        )
    if relative.startswith("/") or relative.startswith("\\"):
        raise HTTPError(HTTPStatus.FORBIDDEN, "path: absolute paths are not allowed")
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if ".." in parts or any(part.startswith("..\\") or "\\..\\" in part for part in parts):
        raise HTTPError(HTTPStatus.FORBIDDEN, "path: '..' is not allowed")
    base = Path(os.path.realpath(root))
    target = base
    try:
        for part in parts:
            target = target / part
            mode = os.lstat(target).st_mode
            if stat.S_ISLNK(mode):
                raise HTTPError(HTTPStatus.FORBIDDEN, f"path: {part!r} is a symbolic link")
            if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
                raise HTTPError(HTTPStatus.FORBIDDEN, f"path: {part!r} is not open to all users")
    except (FileNotFoundError, NotADirectoryError):
        raise HTTPError(HTTPStatus.NOT_FOUND, f"no log file {relative!r}") from None
    except OSError as error:  # a name the file system cannot take (too long, ...)
        raise HTTPError(HTTPStatus.BAD_REQUEST, f"path: {error.strerror or error}") from None
    return target


def _require_world_readable(mode: int, name: str) -> None:
    """A 403 unless ``mode`` lets every user read (a directory: read and search)."""
    wanted = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    if mode & wanted != wanted:
        raise HTTPError(HTTPStatus.FORBIDDEN, f"{name!r} is not readable by all users")


def list_directory(path: Path) -> str:
    lines = []
    for child in sorted(path.iterdir(), key=lambda p: p.name):
        try:
            is_dir = stat.S_ISDIR(child.stat().st_mode)
        except OSError:
            continue
        lines.append(child.name + ("/" if is_dir else ""))
    return "".join(line + "\n" for line in lines)


def node_logs(handler: Handler, rest: list[str], query: dict[str, list[str]]) -> None:
    root = handler.server.config.log_dir
    if root is None:
        raise HTTPError(HTTPStatus.NOT_FOUND, "node logs are not served by this node")
    # Take the raw path so that '//etc' (an absolute path) is seen as such.
    raw = urllib.parse.urlsplit(handler.path).path
    relative = urllib.parse.unquote(raw[len("/logs") :])
    if relative == "":
        raise HTTPError(HTTPStatus.MOVED_PERMANENTLY, "use /logs/", {"Location": "/logs/"})
    target = resolve_log_path(root, relative[1:])
    if target.is_dir():
        _require_world_readable(target.stat().st_mode, relative[1:] or "/")
        handler._send_bytes(HTTPStatus.OK, list_directory(target).encode(), TEXT_TYPE)
        return
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        # Non-blocking: opening a FIFO must not wait for a writer; it is refused below.
        fd = os.open(target, flags)
    except OSError as error:
        raise HTTPError(
            HTTPStatus.FORBIDDEN, f"cannot read {relative[1:]!r}: {error.strerror}"
        ) from None
    info = os.fstat(fd)  # the file opened, whatever the path names now
    try:
        if not stat.S_ISREG(info.st_mode):
            raise HTTPError(HTTPStatus.FORBIDDEN, f"{relative[1:]!r} is not a regular file")
        _require_world_readable(info.st_mode, relative[1:])
    except HTTPError:
        os.close(fd)
        raise
    os.set_blocking(fd, True)
    with open(fd, "rb") as handle:
        _send_file(handler, handle, info.st_size)


def _send_file(handler: Handler, handle: io.BufferedReader, size: int) -> None:
    handler.send_response(HTTPStatus.OK)
    handler.send_header("Content-Type", TEXT_TYPE)
    handler.send_header("Content-Length", str(size))
    handler.send_header("X-Content-Type-Options", "nosniff")
    handler.end_headers()
    if handler.command == "HEAD":
        return
    remaining = size
    while remaining > 0:
        block = handle.read(min(65536, remaining))
        if not block:
            break
        handler.wfile.write(block)
        remaining -= len(block)
    if remaining:  # the file shrank: the declared length cannot be met
        handler.close_connection = True
