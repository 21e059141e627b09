"""Kubernetes CPU and memory amounts turned into cgroup settings: CPU shares from the request,
a CFS quota from the limit, the memory limit, with the pod-level limits standing in for those a
container does not set."""

from __future__ import annotations

from collections.abc import Mapping

from kubecore._contract.values import ContainerResources
from kubecore._model.quantity import cpu_millis, memory_bytes
from kubecore._model.v1 import Container, Pod

MIN_SHARES = 2


SHARES_PER_CPU = 1024


MILLI_CPU_TO_CPU = 1000


CPU_PERIOD_US = 100_000


MIN_QUOTA_PERIOD_US = 1000


def container_resources(container: Container, pod: Pod | None = None) -> ContainerResources:
    """The Linux resources of a container: CPU shares from the request (else the limit), a CFS
    quota from the limit, the memory limit. With its ``pod``, the pod-level limits stand in for
    those the container does not set (``effective_limits``)."""
    requests = container.resources.requests
    limits = container.resources.limits if pod is None else effective_limits(pod, container)
    # Kubernetes defaults a missing cpu request to the container's own limit.
    request_milli = _cpu_millis_of(requests) or _cpu_millis_of(container.resources.limits)
    quota = milli_cpu_to_quota(_cpu_millis_of(limits))
    memory = limits.get("memory")
    return ContainerResources(
        cpu_shares=milli_cpu_to_shares(request_milli),
        cpu_quota=quota,
        cpu_period=CPU_PERIOD_US if quota is not None else None,
        memory_limit=memory_bytes(memory) if memory else None,
    )


def milli_cpu_to_shares(milli: int) -> int | None:
    """0 -> None (unset, the kernel default); else ``milli * 1024 // 1000``, at least 2."""
    if milli <= 0:
        return None
    return max(milli * SHARES_PER_CPU // MILLI_CPU_TO_CPU, MIN_SHARES)


def milli_cpu_to_quota(milli: int, period: int = CPU_PERIOD_US) -> int | None:
    """The CFS quota for a CPU limit over ``period`` microseconds (at least 1 ms); 0 -> None."""
    if milli <= 0:
        return None
    return max(milli * period // MILLI_CPU_TO_CPU, MIN_QUOTA_PERIOD_US)


def _cpu_millis_of(resources: Mapping[str, str]) -> int:
    value = resources.get("cpu")
    return cpu_millis(value) if value else 0


def effective_limits(pod: Pod, container: Container) -> Mapping[str, str]:
    """The container's limits, with the pod-level limit of each resource (``spec.resources``)
    standing in for one the container does not set.

    A runtime without a pod cgroup (Docker) cannot bound the pod as a whole; capping each
    container that has no limit of its own at the pod's is the nearest it can do: no container
    exceeds the pod's limit, though together they may.
    """
    pod_resources = pod.spec.resources
    own = container.resources.limits
    if pod_resources is None or not pod_resources.limits:
        return own
    return {**pod_resources.limits, **own}
