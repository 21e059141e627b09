"""The host's eviction signals, read: memory available, the filesystem of the root directory
(bytes and inodes), the runtime's image filesystem, and process ids, as ``HostFigures`` for the
eviction manager's summary (``kubecore._housekeeping.eviction``, which decides the Node's
pressure conditions from them).

``host_reader`` reads ``/proc/meminfo``, ``statvfs`` of the root directory and
``/proc/sys/kernel/pid_max`` with the process count; a test gives its own ``HostReader`` to
script pressure."""

from __future__ import annotations

import os
from collections.abc import Callable

from kubecore._housekeeping.eviction import Filesystem, HostFigures, HostReader
from kubecore._util.host import read_meminfo, read_pid_max, read_statvfs

PROC = "/proc"


def statvfs_figures(path: str) -> Filesystem | None:
    """The filesystem holding ``path`` (its nearest existing parent), None when unreadable."""
    while path and not os.path.exists(path):
        path = os.path.dirname(path)
    stat = read_statvfs(path or "/")
    if stat is None:
        return None
    return Filesystem(
        available=stat.f_bavail * stat.f_frsize,
        capacity=stat.f_blocks * stat.f_frsize,
        inodes_free=stat.f_ffree if stat.f_files else None,
        inodes=stat.f_files or None,
    )


def process_count(proc: str = PROC) -> int | None:
    try:
        return sum(1 for entry in os.listdir(proc) if entry.isdigit())
    except OSError:
        return None


def host_reader(
    root_dir: str, image_fs: Callable[[], Filesystem | None] = lambda: None
) -> HostReader:
    """The reader of this host: memory, the filesystem of ``root_dir``, ``image_fs()`` (the
    runtime's image filesystem, None when it has none of its own), process ids."""

    def read() -> HostFigures:
        memory = read_meminfo()
        return HostFigures(
            memory_available=memory.get("MemAvailable"),
            memory_capacity=memory.get("MemTotal"),
            nodefs=statvfs_figures(root_dir),
            imagefs=image_fs(),
            pid_max=read_pid_max(),
            processes=process_count(),
        )

    return read
