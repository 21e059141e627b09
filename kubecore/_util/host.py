"""What the agent reads of its host: memory from ``/proc/meminfo``, a filesystem's ``statvfs``,
``pid_max``, the disk a directory uses, and the node's IP when none is configured. One reader
each, for the node's capacity (``resourceFieldRef`` defaults, the etcd Node document), the
``/stats/summary`` figures, the eviction signals, the emptyDir size limits, and the node's
address (the Node's INTERNAL-IP, the pods' ``hostIP``, where host-network pods are probed)."""

from __future__ import annotations

import functools
import os
import socket

LOOPBACK = "127.0.0.1"


def detect_host_ip() -> str:
    """The node's IP when none is configured: the source address the host would use on its
    default route (connecting a UDP socket sends nothing), else the loopback address."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("203.0.113.1", 9))  # TEST-NET-3: any address off the host
            address = str(sock.getsockname()[0])
        except OSError:
            return LOOPBACK
    return address if address != "0.0.0.0" else LOOPBACK


def node_ip(configured: str) -> str:
    """The node's IP: the configured one (``--host-ip``), else the detected one."""
    return configured or detect_host_ip()


def parse_key_values(text: str) -> dict[str, int]:
    """``/proc/meminfo`` (kB values turned to bytes), ``/proc/vmstat`` or
    ``/proc/<pid>/status``: each ``name: number [kB]`` line."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.replace(":", " ").split()
        if len(fields) >= 2 and fields[1].isdigit():
            scale = 1024 if len(fields) > 2 and fields[2] == "kB" else 1
            values[fields[0]] = int(fields[1]) * scale
    return values


def read_proc_file(proc: str, name: str) -> str | None:
    """The text of ``<proc>/<name>``, None when it cannot be read."""
    try:
        with open(os.path.join(proc, name), encoding="ascii", errors="replace") as file:
            return file.read()
    except OSError:
        return None


def read_meminfo(proc: str = "/proc") -> dict[str, int]:
    """``<proc>/meminfo`` in bytes (``MemTotal``, ``MemAvailable``, ...); {} when unreadable."""
    return parse_key_values(read_proc_file(proc, "meminfo") or "")


@functools.cache
def memory_total_bytes(proc: str = "/proc") -> int:
    """The host's memory (``MemTotal``), in bytes; 0 when ``<proc>/meminfo`` cannot be read."""
    return read_meminfo(proc).get("MemTotal", 0)


def read_pid_max(proc: str = "/proc") -> int | None:
    """The most process ids the kernel hands out (``<proc>/sys/kernel/pid_max``), None when
    unreadable."""
    text = (read_proc_file(proc, "sys/kernel/pid_max") or "").strip()
    return int(text) if text.isdigit() else None


def read_statvfs(path: str) -> os.statvfs_result | None:
    """``statvfs`` of the filesystem holding ``path``, None when it cannot be read."""
    try:
        return os.statvfs(path)
    except OSError:
        return None


def directory_usage(path: str) -> tuple[int, int]:
    """(bytes, inodes) used under ``path``, as ``du``: allocated blocks, each inode once (hard
    links counted once), symlinks not followed; 0, 0 for a path that is not there."""
    used = inodes = 0
    seen: set[tuple[int, int]] = set()
    for root, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            inodes += 1
            used += st.st_blocks * 512
    return used, inodes
