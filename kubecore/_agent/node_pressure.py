"""The node's pressure signals, as the kubelet's eviction manager reads them: memory available,
the node filesystem (bytes and inodes), the image filesystem, and process ids, each against its
hard eviction threshold (``--eviction-hard``). Crossed thresholds make the Node's
MemoryPressure, DiskPressure and PIDPressure conditions (``kubecore._api.node_status``).

The host's figures come from a ``HostReader``: ``HostFigures.read`` reads ``/proc/meminfo``,
``statvfs`` of the root directory and ``/proc/sys/kernel/pid_max`` with the process count; a
test gives its own reader to script pressure."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Protocol

import attrs

from kubecore._model.quantity import parse_quantity
from kubecore._util.host import read_meminfo, read_pid_max, read_statvfs

MEMORY_AVAILABLE = "memory.available"
NODEFS_AVAILABLE = "nodefs.available"
NODEFS_INODES_FREE = "nodefs.inodesFree"
IMAGEFS_AVAILABLE = "imagefs.available"
IMAGEFS_INODES_FREE = "imagefs.inodesFree"
PID_AVAILABLE = "pid.available"
SIGNALS = (
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    PID_AVAILABLE,
)
"""The eviction signals, by their upstream names."""

DEFAULT_EVICTION_HARD: Mapping[str, str] = {
    MEMORY_AVAILABLE: "100Mi",
    NODEFS_AVAILABLE: "10%",
    NODEFS_INODES_FREE: "5%",
    IMAGEFS_AVAILABLE: "15%",
}
"""The kubelet's default hard thresholds on Linux (``pid.available`` has none: PIDPressure
comes only from a threshold given in ``eviction_hard``)."""

MEMORY_PRESSURE = "MemoryPressure"
DISK_PRESSURE = "DiskPressure"
PID_PRESSURE = "PIDPressure"
CONDITION_OF: Mapping[str, str] = {
    MEMORY_AVAILABLE: MEMORY_PRESSURE,
    NODEFS_AVAILABLE: DISK_PRESSURE,
    NODEFS_INODES_FREE: DISK_PRESSURE,
    IMAGEFS_AVAILABLE: DISK_PRESSURE,
    IMAGEFS_INODES_FREE: DISK_PRESSURE,
    PID_AVAILABLE: PID_PRESSURE,
}
"""The node condition each signal drives."""

PROC = "/proc"


@attrs.frozen
class Threshold:
    """``signal < quantity`` (bytes, inodes or pids) or ``signal < percent`` of the capacity."""

    signal: str
    quantity: Decimal | None = None
    percent: Decimal | None = None
    written: str = attrs.field(default="", eq=False)
    """The value as it was written (``100Mi``, ``10%``)."""

    def limit(self, capacity: int) -> Decimal:
        if self.percent is not None:
            return self.percent * capacity / 100
        return self.quantity or Decimal(0)

    def __str__(self) -> str:
        if self.written:
            return f"{self.signal}<{self.written}"
        if self.percent is not None:
            return f"{self.signal}<{self.percent.normalize():f}%"
        return f"{self.signal}<{self.quantity}"


def parse_threshold(text: str) -> Threshold:
    """``memory.available<100Mi`` or ``nodefs.available<10%``; ``ValueError`` naming what is
    wrong."""
    signal, less, value = text.strip().partition("<")
    signal, value = signal.strip(), value.strip()
    if not less:
        raise ValueError(f"eviction threshold {text!r}: expected SIGNAL<QUANTITY or SIGNAL<N%")
    if signal not in SIGNALS:
        raise ValueError(
            f"eviction threshold {text!r}: unknown signal {signal!r} (one of {', '.join(SIGNALS)})"
        )
    if value.endswith("%"):
        try:
            percent = Decimal(value[:-1])
        except ArithmeticError:
            raise ValueError(
                f"eviction threshold {text!r}: {value!r} is not a percentage"
            ) from None
        if not percent.is_finite() or not 0 <= percent <= 100:
            raise ValueError(f"eviction threshold {text!r}: a percentage is from 0% to 100%")
        return Threshold(signal, percent=percent, written=value)
    try:
        quantity = parse_quantity(value)
    except ValueError as error:
        raise ValueError(f"eviction threshold {text!r}: {error}") from None
    if quantity < 0:
        raise ValueError(f"eviction threshold {text!r}: a quantity cannot be negative")
    return Threshold(signal, quantity=quantity, written=value)


def eviction_thresholds(entries: Iterable[str]) -> dict[str, Threshold]:
    """The hard thresholds: the defaults, each replaced by an entry of ``entries`` for its
    signal (entries may hold several, comma separated, as ``--eviction-hard`` takes them)."""
    thresholds = {
        signal: parse_threshold(f"{signal}<{value}")
        for signal, value in DEFAULT_EVICTION_HARD.items()
    }
    for entry in entries:
        for part in entry.split(","):
            if part.strip():
                threshold = parse_threshold(part)
                thresholds[threshold.signal] = threshold
    return thresholds


@attrs.frozen
class Filesystem:
    """What ``statvfs`` says of a filesystem (bytes and inodes)."""

    available: int
    capacity: int
    inodes_free: int | None = None
    inodes: int | None = None


@attrs.frozen
class HostFigures:
    """One reading of the host: None where it could not be read."""

    memory_available: int | None = None
    memory_capacity: int | None = None
    nodefs: Filesystem | None = None
    imagefs: Filesystem | None = None
    """The runtime's image filesystem; None: the images are on the node filesystem."""
    pid_max: int | None = None
    processes: int | None = None

    def signal(self, name: str) -> tuple[int, int] | None:
        """(observed, capacity) of one signal, None when it cannot be observed."""
        imagefs = self.imagefs or self.nodefs
        values: dict[str, tuple[int | None, int | None]] = {
            MEMORY_AVAILABLE: (self.memory_available, self.memory_capacity),
            NODEFS_AVAILABLE: _bytes(self.nodefs),
            NODEFS_INODES_FREE: _inodes(self.nodefs),
            IMAGEFS_AVAILABLE: _bytes(imagefs),
            IMAGEFS_INODES_FREE: _inodes(imagefs),
            PID_AVAILABLE: (
                None
                if self.pid_max is None or self.processes is None
                else self.pid_max - self.processes,
                self.pid_max,
            ),
        }
        observed, capacity = values[name]
        return None if observed is None or capacity is None else (observed, capacity)


def _bytes(fs: Filesystem | None) -> tuple[int | None, int | None]:
    return (None, None) if fs is None else (fs.available, fs.capacity)


def _inodes(fs: Filesystem | None) -> tuple[int | None, int | None]:
    return (None, None) if fs is None else (fs.inodes_free, fs.inodes)


class HostReader(Protocol):
    def __call__(self) -> HostFigures:
        """The host's figures now."""
        ...


def crossed(figures: HostFigures, thresholds: Mapping[str, Threshold]) -> dict[str, list[str]]:
    """Each pressure condition's crossed thresholds (``memory.available<100Mi``), the
    conditions under no pressure absent."""
    out: dict[str, list[str]] = {}
    for signal, threshold in thresholds.items():
        seen = figures.signal(signal)
        if seen is not None and seen[0] < threshold.limit(seen[1]):
            out.setdefault(CONDITION_OF[signal], []).append(str(threshold))
    return out


# --- the host's own figures ---------------------------------------------------------------


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
