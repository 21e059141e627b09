"""The ``/stats/summary`` document: the node and each pod with its running containers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubecore._executor import container_name_of
from kubecore._model import Pod, PodStatus
from kubecore._runtime import POD_UID_LABEL, ContainerRuntime, RuntimeContainer, RuntimeState
from kubecore._status import rfc3339


def _usage(time: str, cpu: int | None, working_set: int | None, usage: int | None) -> Any:
    return (
        {"time": time, "usageCoreNanoSeconds": cpu},
        {"time": time, "workingSetBytes": working_set, "usageBytes": usage},
    )


def stats_summary(
    runtime: ContainerRuntime, pods: Iterable[Pod], node_name: str, now: float
) -> dict[str, Any]:
    """The kubelet's ``/stats/summary`` shape for ``pods`` (the desired pods, with status),
    from one ``container_stats`` and one ``snapshot`` call."""
    stats = {s.container_id: s for s in runtime.container_stats()}
    by_uid: dict[str, list[RuntimeContainer]] = {}
    for c in runtime.snapshot().containers:
        if c.state is RuntimeState.RUNNING:
            by_uid.setdefault(c.labels.get(POD_UID_LABEL, ""), []).append(c)
    stamp = rfc3339(now)
    pods_out: list[dict[str, Any]] = []
    node_cpu = node_ws = node_usage = 0
    for pod in pods:
        containers_out: list[dict[str, Any]] = []
        pod_cpu = pod_ws = pod_usage = 0
        for c in by_uid.get(pod.uid, []):
            s = stats.get(c.id)
            cpu = s.cpu_usage_nanos if s else None
            ws = s.memory_working_set_bytes if s else None
            usage = s.memory_usage_bytes if s else None
            pod_cpu += cpu or 0
            pod_ws += ws or 0
            pod_usage += usage or 0
            cpu_out, memory_out = _usage(rfc3339(s.timestamp if s else now), cpu, ws, usage)
            containers_out.append(
                {
                    "name": container_name_of(c),
                    "startTime": rfc3339(c.started_at or c.created_at),
                    "cpu": cpu_out,
                    "memory": memory_out,
                }
            )
        node_cpu += pod_cpu
        node_ws += pod_ws
        node_usage += pod_usage
        cpu_out, memory_out = _usage(stamp, pod_cpu, pod_ws, pod_usage)
        pods_out.append(
            {
                "podRef": {
                    "name": pod.metadata.name,
                    "namespace": pod.metadata.namespace,
                    "uid": pod.uid,
                },
                "startTime": (pod.status or PodStatus()).start_time,
                "containers": containers_out,
                "cpu": cpu_out,
                "memory": memory_out,
            }
        )
    cpu_out, memory_out = _usage(stamp, node_cpu, node_ws, node_usage)
    return {
        "node": {"nodeName": node_name, "cpu": cpu_out, "memory": memory_out},
        "pods": pods_out,
    }
