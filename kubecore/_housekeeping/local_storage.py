"""Local ephemeral storage eviction, as the kubelet's eviction manager does it for a pod: a disk
emptyDir above its ``sizeLimit``, a pod above the sum of its containers' ``ephemeral-storage``
limits, or a container above its own limit is evicted (phase Failed, reason ``Evicted``).

A container's usage is its writable layer and its log file as the runtime reports them
(``ContainerStats.writable_layer_used_bytes`` and ``log_used_bytes``; 0 where the runtime cannot
tell); a pod's adds its disk emptyDirs.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubecore._model.quantity import memory_bytes
from kubecore._model.v1 import Pod
from kubecore._observability.events import EventReason
from kubecore._status.rejection import Rejection

EVICTED = EventReason.EVICTED.value  # a pod status reason too: a plain string
EPHEMERAL_STORAGE = "ephemeral-storage"


def has_ephemeral_storage_limit(pod: Pod) -> bool:
    return any(EPHEMERAL_STORAGE in c.resources.limits for c in pod.spec.containers)


# The kubelet's eviction signals (``kubelet_evictions{eviction_signal}``).
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
