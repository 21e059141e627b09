"""Memory-backed emptyDirs mounted on the host, as the kubelet does for a runtime whose mounts
are binds only (CRI): a tmpfs at the volume's directory under the pod's directory, sized by the
volume's ``sizeLimit`` or the pod's memory limit, which the runtime then bind-mounts into the
containers; unmounted before the pod's directory is removed.

Mounting needs the agent to run as root (``CAP_SYS_ADMIN``); without it the volume fails to set
up with the kernel's reason, and the pod waits, as any volume that cannot be mounted."""

from __future__ import annotations

import os
from collections.abc import Iterable

from kubecore._model.quantity import memory_bytes
from kubecore._model.v1 import Container, Pod, Volume
from kubecore._volumes.host_mounts import MS_NODEV, MS_NOSUID, check, libc, unmount


def _memory_limit(container: Container) -> int | None:
    value = container.resources.limits.get("memory")
    return memory_bytes(value) if value else None


def pod_memory_limit(pod: Pod) -> int | None:
    """The pod's memory limit, as the kubelet reckons it: the pod-level limit when set, else the
    sum of its containers' limits (and its sidecars'), or the largest of one init container's if
    that is more; None when a container has no limit (the pod is then not bounded)."""
    pod_resources = pod.spec.resources
    if pod_resources is not None and pod_resources.limits.get("memory"):
        return memory_bytes(pod_resources.limits["memory"])
    sidecars = [c for c in pod.spec.init_containers if c.restart_policy == "Always"]
    running = [*pod.spec.containers, *sidecars]
    limits = [_memory_limit(c) for c in running]
    if not limits or any(limit is None for limit in limits):
        return None
    total = sum(limit for limit in limits if limit is not None)
    for init in pod.spec.init_containers:
        if init.restart_policy != "Always":
            own = _memory_limit(init)
            if own is None:
                return None
            total = max(total, own)
    return total


def tmpfs_size(pod: Pod, volume: Volume) -> int | None:
    """The tmpfs's size in bytes: the volume's ``sizeLimit`` when it is under the pod's memory
    limit, else that limit; None (the kernel's default, half the RAM) when neither is set."""
    limit = pod_memory_limit(pod)
    empty = volume.empty_dir
    asked = memory_bytes(empty.size_limit) if empty is not None and empty.size_limit else None
    if asked and (limit is None or asked < limit):
        return asked
    return limit or None


def mount_tmpfs(path: str, size_bytes: int | None, mode: int) -> None:
    """Mount a tmpfs at ``path`` (an existing directory) unless one is there already (an agent
    restarted over a running pod keeps what its volume holds)."""
    if os.path.ismount(path):
        return
    options = f"mode={mode:o}" + (f",size={size_bytes}" if size_bytes else "")
    result = libc().mount(
        b"tmpfs", os.fsencode(path), b"tmpfs", MS_NOSUID | MS_NODEV, options.encode()
    )
    check(result, "mount tmpfs at", path)


def unmount_below(directories: Iterable[str]) -> None:
    """Unmount every tmpfs mounted at one of the entries of ``directories`` (each a plugin
    directory of a pod's volumes)."""
    for directory in directories:
        try:
            names = os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name in names:
            unmount(os.path.join(directory, name))
