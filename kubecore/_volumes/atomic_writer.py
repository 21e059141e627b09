"""Writing a set of files into a volume directory so readers never see half of it.

The kubelet's ``atomic_writer.go`` is the reference (read, not copied). A volume directory holds::

    <dir>/..2026_11_30_14_22_59.123456789/<files>   one timestamped directory per version
    <dir>/..data -> ..2026_11_30_14_22_59.123456789  the current version
    <dir>/<name> -> ..data/<name>                     one link per top-level name of the payload

A new version is written whole into a fresh timestamped directory, then ``..data`` is switched to
it with one ``rename`` of a new symlink over the old one (atomic on POSIX); the user-visible links
go through ``..data``, so a reader opening ``<dir>/<name>`` sees the old set or the new one, never
a mix. The old version is removed afterwards.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping

import attrs

DATA_DIR = "..data"
_DATA_DIR_TMP = "..data_tmp"


@attrs.frozen
class FileProjection:
    data: bytes
    mode: int


def payload_problem(path: str) -> str | None:
    """Why ``path`` cannot name a file of a payload (None: it can)."""
    if not path:
        return "empty path"
    if path.startswith("/"):
        return f"{path!r} is absolute"
    parts = path.split("/")
    if ".." in parts:
        return f"{path!r} contains '..'"
    if parts[0].startswith(".."):
        return f"{path!r} starts with '..' (reserved for the writer)"
    return None


def _current_version(target: str) -> str | None:
    try:
        link = os.readlink(os.path.join(target, DATA_DIR))
    except (FileNotFoundError, OSError):
        return None
    return os.path.join(target, link)


def _unchanged(version: str, payload: Mapping[str, FileProjection]) -> bool:
    """The version directory holds exactly ``payload`` (contents and modes)."""
    seen = 0
    for root, _dirs, files in os.walk(version):
        for name in files:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, version)
            wanted = payload.get(rel)
            if wanted is None:
                return False
            try:
                st = os.lstat(full)
                with open(full, "rb") as f:
                    data = f.read()
            except OSError:
                return False
            if data != wanted.data or (st.st_mode & 0o7777) != wanted.mode:
                return False
            seen += 1
    return seen == len(payload)


def _write_version(target: str, payload: Mapping[str, FileProjection], gid: int | None) -> str:
    stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())
    version = tempfile.mkdtemp(prefix=stamp, dir=target)
    try:
        os.chmod(version, 0o755 if gid is None else 0o2755)
        if gid is not None:
            os.chown(version, -1, gid)
        for rel, file in payload.items():
            full = os.path.join(version, rel)
            parent = os.path.dirname(full)
            if parent != version:
                os.makedirs(parent, mode=0o755, exist_ok=True)
                if gid is not None:
                    os.chown(parent, -1, gid)
            fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, file.data)
                if gid is not None:
                    os.fchown(fd, -1, gid)
                os.fchmod(fd, file.mode)
            finally:
                os.close(fd)
    except BaseException:
        shutil.rmtree(version, ignore_errors=True)
        raise
    return version


def _top_level(paths: Iterable[str]) -> set[str]:
    return {p.split("/", 1)[0] for p in paths}


def write_atomically(
    target: str, payload: Mapping[str, FileProjection], *, gid: int | None = None
) -> bool:
    """Make ``target`` show exactly ``payload`` (relative path -> contents and mode).

    ``gid``: the files and directories get this group, and the directories the setgid bit (the
    pod's ``fsGroup``). Returns whether anything changed (an identical payload writes nothing).
    """
    for path in payload:
        if (problem := payload_problem(path)) is not None:
            raise ValueError(f"invalid file path in volume payload: {problem}")
    os.makedirs(target, exist_ok=True)
    old = _current_version(target)
    if old is not None and _unchanged(old, payload):
        return False
    old_names = _top_level(payload_of(old)) if old is not None else set()
    version = _write_version(target, payload, gid)

    tmp_link = os.path.join(target, _DATA_DIR_TMP)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp_link)
    os.symlink(os.path.basename(version), tmp_link)
    os.rename(tmp_link, os.path.join(target, DATA_DIR))

    new_names = _top_level(payload)
    for name in new_names:
        link = os.path.join(target, name)
        if not os.path.islink(link):
            if os.path.lexists(link):
                raise ValueError(f"{link} exists and is not the writer's link")
            os.symlink(os.path.join(DATA_DIR, name), link)
    for name in old_names - new_names:
        link = os.path.join(target, name)
        if os.path.islink(link):
            os.unlink(link)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return True


def payload_of(version: str | None) -> list[str]:
    """The relative file paths of a version directory."""
    if version is None:
        return []
    found: list[str] = []
    for root, _dirs, files in os.walk(version):
        found.extend(os.path.relpath(os.path.join(root, f), version) for f in files)
    return found
