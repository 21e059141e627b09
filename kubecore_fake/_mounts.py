"""A container's mounts as the in-memory runtime shows them: its ``/proc/mounts`` table, and
the files of the host directories mounted into it (read, listed, and written through into an
emptyDir volume)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence

from kubecore.runtime import EMPTY_DIR_PLUGIN, Mount

logger = logging.getLogger(__name__)

PROC_MOUNTS = "/proc/mounts"


def proc_mounts(mounts: Sequence[Mount]) -> str:
    """The container's mount table as Linux shows it, from its config: a memory-backed mount is
    a tmpfs with its size (in KiB, as the kernel prints it) and its root's mode (printed when
    not the tmpfs default, 1777), a bind shows its host path."""
    lines = []
    for m in mounts:
        options = ["ro" if m.read_only else "rw"]
        if m.memory_backed:
            if m.size_limit_bytes is not None:
                options.append(f"size={m.size_limit_bytes // 1024}k")
            if m.mode is not None and m.mode != 0o1777:
                options.append(f"mode={m.mode:o}")
            lines.append(f"tmpfs {m.container_path} tmpfs {','.join(options)} 0 0\n")
        else:
            lines.append(f"{m.host_path} {m.container_path} bind {','.join(options)} 0 0\n")
    return "".join(lines)


def mounted_host_path(mounts: Iterable[Mount], path: str) -> str | None:
    """Where on the host ``path`` inside a container is, when one of its mounts (a host
    directory or file the agent prepared, such as a volume) holds it."""
    for mount in mounts:
        root = mount.container_path.rstrip("/")
        if path != root and not path.startswith(root + "/"):
            continue
        if path == root:
            return mount.host_path
        return os.path.join(mount.host_path, os.path.relpath(path, root))
    return None


def read_mounted_file(mounts: Iterable[Mount], path: str) -> str | None:
    """The text of the mounted file ``path`` (None when no mount holds it or it is unreadable)."""
    host = mounted_host_path(mounts, path)
    if host is None:
        return None
    try:
        with open(host, encoding="utf-8", errors="replace") as file:
            return file.read()
    except OSError:
        return None


def write_through(mounts: Iterable[Mount], path: str, content: str | None) -> None:
    """A file a container writes into one of its pod's emptyDir volumes lands in the volume's
    directory, as on a real node: the pod's other containers see it, and the agent reads it
    (``fileKeyRef``). Nothing is written anywhere else (a hostPath stays untouched)."""
    for mount in mounts:
        if mount.read_only or f"/{EMPTY_DIR_PLUGIN}/" not in mount.host_path:
            continue
        host = mounted_host_path((mount,), path)
        if host is None or host == mount.host_path:
            continue
        try:
            if content is None:
                os.unlink(host)
            else:
                os.makedirs(os.path.dirname(host), exist_ok=True)
                with open(host, "w", encoding="utf-8") as file:
                    file.write(content)
        except OSError:
            logger.debug("could not write %s through to %s", path, host, exc_info=True)
        return


def list_mounted_dir(mounts: Iterable[Mount], path: str) -> tuple[str, ...] | None:
    """The names in the mounted directory ``path`` (see ``_shell.DirLister``)."""
    host = mounted_host_path(mounts, path)
    if host is None:
        return None
    try:
        return tuple(os.listdir(host))
    except (FileNotFoundError, NotADirectoryError):
        raise
    except OSError:
        return None
