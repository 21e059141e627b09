"""The eviction manager, as the kubelet's (``pkg/kubelet/eviction``): one summary of the node
(its eviction signals: memory available, the node and image filesystems' bytes and inodes,
process ids) and of its pods (the local storage each uses) in, two pure decisions out:

- ``pressure_conditions``: the Node's MemoryPressure, DiskPressure and PIDPressure, each with the
  hard thresholds (``--eviction-hard``) its signals crossed (``kubecore._api.node_status`` holds
  them through the transition period and reports them);
- ``pods_to_evict``: the pods over their local storage limits (a disk emptyDir above its
  ``sizeLimit``, a pod above the sum of its containers' ``ephemeral-storage`` limits, a container
  above its own), each with the ``Evicted`` reason, the kubelet's message and its eviction signal
  (run on the housekeeping interval, ``kubecore._housekeeping.timers``).

Node pressure makes conditions only: no pod is evicted to relieve memory, disk or pids.

The summary is observed elsewhere: the host's figures by a ``HostReader``
(``kubecore._agent.node_pressure.host_reader``, or a test's scripted one), a pod's usage by the
housekeeping (its disk emptyDirs; a container's writable layer and log file as the runtime
reports them, ``ContainerStats.writable_layer_used_bytes`` and ``log_used_bytes``, 0 where the
runtime cannot tell)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Protocol

import attrs

from kubecore._model.quantity import memory_bytes, parse_quantity
from kubecore._model.rejection import Rejection
from kubecore._model.v1 import Pod
from kubecore._observability.events import EventReason

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


EVICTED = EventReason.EVICTED.value  # a pod status reason too: a plain string
EPHEMERAL_STORAGE = "ephemeral-storage"


def has_ephemeral_storage_limit(pod: Pod) -> bool:
    return any(EPHEMERAL_STORAGE in c.resources.limits for c in pod.spec.containers)


# The kubelet's local storage eviction signals (``kubelet_evictions{eviction_signal}``).
EMPTY_DIR_SIGNAL = "emptydirfs.limit"
POD_SIGNAL = "ephemeralpodfs.limit"
CONTAINER_SIGNAL = "ephemeralcontainerfs.limit"


def local_storage_eviction(
    pod: Pod, empty_dir_usage: Mapping[str, int], container_usage: Mapping[str, int]
) -> tuple[Rejection, str] | None:
    """Why the pod must be evicted for its local storage, and the kubelet's eviction signal
    (None: it stays); checked in the kubelet's order: emptyDir limits, the pod's total, each
    container's limit."""
    for volume in pod.spec.volumes:
        empty = volume.empty_dir
        if empty is None or empty.size_limit is None or volume.name not in empty_dir_usage:
            continue
        if empty_dir_usage[volume.name] > memory_bytes(empty.size_limit):
            return Rejection(
                EVICTED,
                f'Usage of EmptyDir volume "{volume.name}" exceeds the limit'
                f' "{empty.size_limit}". ',
            ), EMPTY_DIR_SIGNAL
    limits = {
        c.name: c.resources.limits[EPHEMERAL_STORAGE]
        for c in pod.spec.containers
        if EPHEMERAL_STORAGE in c.resources.limits
    }
    if not limits:
        return None
    pod_limit = sum(memory_bytes(v) for v in limits.values())
    pod_usage = sum(empty_dir_usage.values()) + sum(container_usage.values())
    if pod_usage > pod_limit:
        return Rejection(
            EVICTED,
            "Pod ephemeral local storage usage exceeds the total limit of containers"
            f" {_format_bytes(pod_limit)}. ",
        ), POD_SIGNAL
    for name, limit in limits.items():
        if container_usage.get(name, 0) > memory_bytes(limit):
            return Rejection(
                EVICTED,
                f'Container {name} exceeded its local ephemeral storage limit "{limit}". ',
            ), CONTAINER_SIGNAL
    return None


@attrs.frozen
class PodUsage:
    """What one pod uses of the node's local storage: bytes by disk emptyDir volume name, and
    by container name (its writable layer and log file)."""

    pod: Pod
    empty_dirs: Mapping[str, int] = attrs.field(factory=dict)
    containers: Mapping[str, int] = attrs.field(factory=dict)


@attrs.frozen
class Summary:
    """One round's observations, as the kubelet's stats summary gives them to its eviction
    manager: the node's figures and the usage of the pods with a local storage limit."""

    node: HostFigures = HostFigures()
    pods: tuple[PodUsage, ...] = ()


@attrs.frozen
class Eviction:
    """A pod to evict: why (reason ``Evicted`` and the kubelet's message) and the eviction
    signal it crossed (``kubelet_evictions{eviction_signal}``)."""

    pod: Pod
    rejection: Rejection
    signal: str


def pressure_conditions(
    summary: Summary, thresholds: Mapping[str, Threshold]
) -> dict[str, list[str]]:
    """Each pressure condition's crossed thresholds (``memory.available<100Mi``), the
    conditions under no pressure absent."""
    out: dict[str, list[str]] = {}
    for signal, threshold in thresholds.items():
        seen = summary.node.signal(signal)
        if seen is not None and seen[0] < threshold.limit(seen[1]):
            out.setdefault(CONDITION_OF[signal], []).append(str(threshold))
    return out


def pods_to_evict(summary: Summary) -> list[Eviction]:
    """The pods of the summary over their local storage limits, in the summary's order."""
    out = []
    for usage in summary.pods:
        found = local_storage_eviction(usage.pod, usage.empty_dirs, usage.containers)
        if found is not None:
            out.append(Eviction(usage.pod, *found))
    return out


def watches_local_storage(pod: Pod) -> bool:
    """The pod has a limit on local storage to enforce (its usage belongs in the summary).
    Memoised on the pod object: asked of every pod at every housekeeping interval."""
    derived = pod.derived
    watches: bool | None = derived.get("watches_storage")
    if watches is None:
        watches = derived["watches_storage"] = has_ephemeral_storage_limit(pod) or any(
            v.empty_dir is not None
            and v.empty_dir.size_limit is not None
            and v.empty_dir.medium != "Memory"
            for v in pod.spec.volumes
        )
    return watches


def _format_bytes(value: int) -> str:
    """A byte count as Kubernetes prints a quantity (``2Mi``, ``1500``)."""
    for suffix, size in (
        ("Ei", 2**60),
        ("Pi", 2**50),
        ("Ti", 2**40),
        ("Gi", 2**30),
        ("Mi", 2**20),
        ("Ki", 2**10),
    ):
        if value and value % size == 0:
            return f"{value // size}{suffix}"
    return str(value)
