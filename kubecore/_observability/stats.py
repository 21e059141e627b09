"""The ``/stats/summary`` document, in the Summary API's shape (k8s.io/kubelet stats/v1alpha1).

The node's figures come from ``/proc`` and ``statvfs``; each pod's containers from the runtime's
``container_stats`` (one call) and ``snapshot``; volumes from their directories under the pod's
directory. ``usageNanoCores`` is a rate between the last two reads of the same container (or of
the node), so it appears from the second read on. A container that stopped (a crash-looping one,
say) keeps its last figures in the summary until its pod is gone, as the kubelet shows them.
Fields that cannot be known are left out, as the API's optional pointers are.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from kubecore._contract.labels import POD_UID_LABEL
from kubecore._contract.observed import container_name as container_name_of
from kubecore._contract.protocols import ContainerRuntime
from kubecore._contract.values import ContainerStats, ImageFsUsage, RuntimeState
from kubecore._model.quantity import memory_bytes
from kubecore._model.v1 import Pod, PodStatus
from kubecore._util.host import (
    directory_usage,
    parse_key_values,
    read_meminfo,
    read_pid_max,
    read_proc_file,
    read_statvfs,
)
from kubecore._util.timefmt import rfc3339

Json = dict[str, Any]
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _present(document: Mapping[str, Any]) -> Json:
    """``document`` without its unknown (None) fields."""
    return {key: value for key, value in document.items() if value is not None}


# --- /proc ------------------------------------------------------------------------------------


def parse_proc_stat(text: str) -> tuple[int | None, float | None]:
    """(CPU time of all cores in ns, boot time in s) from ``/proc/stat``; idle and iowait are
    not usage, guest time is already in user time."""
    cpu: int | None = None
    boot: float | None = None
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [int(v) for v in fields[1:9]] + [0] * 8
            user, nice, system, _idle, _iowait, irq, softirq, steal = ticks[:8]
            cpu = (user + nice + system + irq + softirq + steal) * 1_000_000_000 // _TICKS
        elif fields and fields[0] == "btime":
            boot = float(fields[1])
    return cpu, boot


def parse_process_stat(text: str) -> tuple[int, float] | None:
    """(CPU time in ns, start in s after boot) of a process from ``/proc/<pid>/stat``."""
    _, _, rest = text.rpartition(")")  # the command name may hold spaces and parentheses
    fields = rest.split()
    if len(fields) < 20:
        return None
    utime, stime, start = int(fields[11]), int(fields[12]), int(fields[19])
    return (utime + stime) * 1_000_000_000 // _TICKS, start / _TICKS


def node_memory(meminfo: Mapping[str, int], vmstat: Mapping[str, int]) -> Json:
    """The node's memory as cAdvisor reads the root cgroup: usage is what is not free, the
    working set leaves out the inactive file cache."""
    total = meminfo.get("MemTotal")
    if total is None:
        return {}
    usage = total - meminfo.get("MemFree", 0)
    working_set = max(0, usage - meminfo.get("Inactive(file)", 0))
    return _present(
        {
            "availableBytes": max(0, total - working_set),
            "usageBytes": usage,
            "workingSetBytes": working_set,
            "rssBytes": meminfo.get("AnonPages"),
            "pageFaults": vmstat.get("pgfault"),
            "majorPageFaults": vmstat.get("pgmajfault"),
        }
    )


def parse_net_dev(text: str) -> list[Json]:
    """Every interface but loopback from ``/proc/net/dev``."""
    interfaces: list[Json] = []
    for line in text.splitlines()[2:]:
        name, _, counters = line.partition(":")
        fields = counters.split()
        if len(fields) < 16 or name.strip() == "lo":
            continue
        interfaces.append(
            {
                "name": name.strip(),
                "rxBytes": int(fields[0]),
                "rxErrors": int(fields[2]),
                "txBytes": int(fields[8]),
                "txErrors": int(fields[10]),
            }
        )
    return interfaces


def default_interface(route_text: str) -> str:
    """The interface of the default route in ``/proc/net/route`` ("" when none)."""
    for line in route_text.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 1 and fields[1] == "00000000":
            return fields[0]
    return ""


def fs_stats(path: str, time: str, used_bytes: int | None = None) -> Json:
    """The filesystem holding ``path``; ``used_bytes`` what of it is ours (else all used)."""
    st = read_statvfs(path)
    if st is None:
        return _present({"time": time, "usedBytes": used_bytes})
    capacity = st.f_blocks * st.f_frsize
    used = used_bytes if used_bytes is not None else (st.f_blocks - st.f_bfree) * st.f_frsize
    return {
        "time": time,
        "availableBytes": st.f_bavail * st.f_frsize,
        "capacityBytes": capacity,
        "usedBytes": used,
        "inodesFree": st.f_ffree,
        "inodes": st.f_files,
        "inodesUsed": st.f_files - st.f_ffree,
    }


# --- rates and kept figures -------------------------------------------------------------------


@attrs.define
class _CpuSample:
    at: float
    nanos: int
    rate: int | None = None


class _Rates:
    """usageNanoCores from the last two samples of the same key."""

    def __init__(self) -> None:
        self._samples: dict[str, _CpuSample] = {}

    def rate(self, key: str, at: float, nanos: int) -> int | None:
        last = self._samples.get(key)
        if last is None:
            self._samples[key] = _CpuSample(at, nanos)
            return None
        if at > last.at:
            rate = max(0, int((nanos - last.nanos) / (at - last.at)))
            self._samples[key] = _CpuSample(at, nanos, rate)
            return rate
        return last.rate

    def retain(self, keys: Iterable[str]) -> None:
        keep = set(keys)
        self._samples = {k: v for k, v in self._samples.items() if k in keep}


@attrs.frozen
class _Kept:
    """A container's last figures, shown while its pod exists."""

    name: str
    started_at: float
    stats: ContainerStats


class StatsProvider:
    """Builds summaries; remembers CPU samples (for rates) and containers' last figures."""

    def __init__(
        self,
        runtime: ContainerRuntime,
        *,
        node_name: str,
        root_dir: str,
        pod_dir: Callable[[str], str],
        image_fs: Callable[[], ImageFsUsage | None],
        proc: str = "/proc",
    ) -> None:
        self._runtime = runtime
        self._node_name = node_name
        self._root_dir = root_dir
        self._pod_dir = pod_dir
        self._image_fs = image_fs
        self._proc = proc
        self._lock = threading.Lock()
        self._rates = _Rates()
        self._kept: dict[str, dict[str, _Kept]] = {}
        """Pod UID -> container name -> its newest figures."""

    def summary(
        self, pods: Iterable[Pod], now: float, *, cpu_and_memory_only: bool = False
    ) -> Json:
        """The ``/stats/summary`` document for ``pods`` (the desired pods, with status).
        ``cpu_and_memory_only`` leaves out filesystems, volumes and network (``/metrics/resource``
        needs no more)."""
        pods = list(pods)
        stats = {s.container_id: s for s in self._runtime.container_stats()}
        running: dict[str, list[Any]] = {}
        for c in self._runtime.snapshot().containers:
            if c.state is RuntimeState.RUNNING and c.id in stats:
                running.setdefault(c.labels.get(POD_UID_LABEL, ""), []).append(c)
        with self._lock:
            for uid, containers in running.items():
                kept = self._kept.setdefault(uid, {})
                for c in containers:
                    name = container_name_of(c)
                    kept[name] = _Kept(name, c.started_at or c.created_at, stats[c.id])
            wanted = {pod.uid for pod in pods}
            self._kept = {uid: kept for uid, kept in self._kept.items() if uid in wanted}
            self._rates.retain(
                ["node", "kubelet"]
                + [f"{uid}/{name}" for uid, kept in self._kept.items() for name in kept]
            )
            node = self._node(now, cpu_and_memory_only)
            pods_out = [self._pod(pod, now, cpu_and_memory_only) for pod in pods]
        return {"node": node, "pods": pods_out}

    # --- the node

    def _node(self, now: float, cpu_and_memory_only: bool) -> Json:
        time = rfc3339(now)
        cpu_nanos, boot = parse_proc_stat(read_proc_file(self._proc, "stat") or "")
        memory = node_memory(
            read_meminfo(self._proc),
            parse_key_values(read_proc_file(self._proc, "vmstat") or ""),
        )
        node: Json = {"nodeName": self._node_name}
        agent = self._agent(now, boot)
        node["systemContainers"] = [agent] if agent else []
        if boot is not None:
            node["startTime"] = rfc3339(boot)
        if cpu_nanos is not None:
            node["cpu"] = _present(
                {
                    "time": time,
                    "usageNanoCores": self._rates.rate("node", now, cpu_nanos),
                    "usageCoreNanoSeconds": cpu_nanos,
                }
            )
        if memory:
            node["memory"] = {"time": time, **memory}
        if cpu_and_memory_only:
            return node
        interfaces = parse_net_dev(read_proc_file(self._proc, "net/dev") or "")
        if interfaces:
            main = default_interface(read_proc_file(self._proc, "net/route") or "")
            chosen = next((i for i in interfaces if i["name"] == main), interfaces[0])
            node["network"] = {"time": time, **chosen, "interfaces": interfaces}
        node["fs"] = fs_stats(self._root_dir, time)
        image_fs = self._image_fs()
        if image_fs is not None:
            node["runtime"] = {
                "imageFs": {
                    "time": time,
                    "availableBytes": max(0, image_fs.capacity_bytes - image_fs.used_bytes),
                    "capacityBytes": image_fs.capacity_bytes,
                    "usedBytes": image_fs.used_bytes,
                }
            }
        node["rlimit"] = self._rlimit(time)
        return node

    def _agent(self, now: float, boot: float | None) -> Json | None:
        """The agent's own process, as the kubelet reports its ``kubelet`` system container."""
        process = parse_process_stat(read_proc_file(self._proc, "self/stat") or "")
        status = parse_key_values(read_proc_file(self._proc, "self/status") or "")
        if process is None or boot is None:
            return None
        cpu_nanos, started = process
        time = rfc3339(now)
        rss = status.get("VmRSS")
        return {
            "name": "kubelet",
            "startTime": rfc3339(boot + started),
            "cpu": _present(
                {
                    "time": time,
                    "usageNanoCores": self._rates.rate("kubelet", now, cpu_nanos),
                    "usageCoreNanoSeconds": cpu_nanos,
                }
            ),
            "memory": _present(
                {"time": time, "usageBytes": rss, "workingSetBytes": rss, "rssBytes": rss}
            ),
        }

    def _rlimit(self, time: str) -> Json:
        loadavg = (read_proc_file(self._proc, "loadavg") or "").split()
        # The fourth field is running/total scheduling entities, as sysinfo's procs counts them.
        current = loadavg[3].partition("/")[2] if len(loadavg) > 3 else ""
        return _present(
            {
                "time": time,
                "maxpid": read_pid_max(self._proc),
                "curproc": int(current) if current.isdigit() else None,
            }
        )

    # --- a pod

    def _pod(self, pod: Pod, now: float, cpu_and_memory_only: bool) -> Json:
        time = rfc3339(now)
        limits = {
            c.name: c.resources.limits.get("memory")
            for c in (*pod.spec.init_containers, *pod.spec.containers)
        }
        containers: list[Json] = []
        totals = {"cpu": 0, "rate": 0, "ws": 0, "usage": 0, "rss": 0}
        rated = False
        for kept in sorted(self._kept.get(pod.uid, {}).values(), key=lambda k: k.name):
            entry, rate = self._container(pod.uid, kept, limits.get(kept.name), cpu_and_memory_only)
            containers.append(entry)
            s = kept.stats
            totals["cpu"] += s.cpu_usage_nanos or 0
            totals["ws"] += s.memory_working_set_bytes or 0
            totals["usage"] += s.memory_usage_bytes or 0
            totals["rss"] += s.memory_rss_bytes or 0
            if rate is not None:
                totals["rate"] += rate
                rated = True
        out: Json = {
            "podRef": {
                "name": pod.metadata.name,
                "namespace": pod.metadata.namespace,
                "uid": pod.uid,
            },
            "startTime": (pod.status or PodStatus()).start_time or None,
            "containers": containers,
            "cpu": _present(
                {
                    "time": time,
                    "usageNanoCores": totals["rate"] if rated else None,
                    "usageCoreNanoSeconds": totals["cpu"],
                }
            ),
            "memory": {
                "time": time,
                "usageBytes": totals["usage"],
                "workingSetBytes": totals["ws"],
                "rssBytes": totals["rss"],
            },
        }
        if not cpu_and_memory_only:
            volumes = self._volumes(pod, time)
            out["volume"] = volumes
            out["ephemeral-storage"] = self._ephemeral(containers, volumes, pod, time)
        return _present(out)

    def _container(
        self, uid: str, kept: _Kept, memory_limit: str | None, cpu_and_memory_only: bool
    ) -> tuple[Json, int | None]:
        s = kept.stats
        time = rfc3339(s.timestamp)
        rate = (
            self._rates.rate(f"{uid}/{kept.name}", s.timestamp, s.cpu_usage_nanos)
            if s.cpu_usage_nanos is not None
            else None
        )
        available = None
        if memory_limit and s.memory_working_set_bytes is not None:
            try:
                available = max(0, memory_bytes(memory_limit) - s.memory_working_set_bytes)
            except ValueError:
                available = None
        entry: Json = {
            "name": kept.name,
            "startTime": rfc3339(kept.started_at),
            "cpu": _present(
                {"time": time, "usageNanoCores": rate, "usageCoreNanoSeconds": s.cpu_usage_nanos}
            ),
            "memory": _present(
                {
                    "time": time,
                    "availableBytes": available,
                    "usageBytes": s.memory_usage_bytes,
                    "workingSetBytes": s.memory_working_set_bytes,
                    "rssBytes": s.memory_rss_bytes,
                    "pageFaults": s.memory_page_faults,
                    "majorPageFaults": s.memory_major_page_faults,
                }
            ),
        }
        if not cpu_and_memory_only:
            entry["rootfs"] = _present(
                {
                    "time": time,
                    "usedBytes": s.writable_layer_used_bytes,
                    "inodesUsed": s.writable_layer_inodes_used,
                }
            )
            entry["logs"] = _present(
                {"time": time, "usedBytes": s.log_used_bytes, "inodesUsed": s.log_inodes_used}
            )
        return entry, rate

    def _volumes(self, pod: Pod, time: str) -> list[Json]:
        """Every volume kubecore made under the pod's directory (``volumes/<plugin>/<name>``):
        emptyDir, and the volumes written from the pod's objects (configMap, secret, …)."""
        try:
            base = os.path.join(self._pod_dir(pod.uid), "volumes")
            plugins = sorted(os.listdir(base))
        except (OSError, ValueError):
            return []
        out: list[Json] = []
        for plugin in plugins:
            try:
                names = sorted(os.listdir(os.path.join(base, plugin)))
            except OSError:
                continue
            for name in names:
                path = os.path.join(base, plugin, name)
                used, inodes = directory_usage(path)
                stats = fs_stats(path, time, used)
                stats["inodesUsed"] = inodes
                out.append({"name": name, **stats})
        return out

    def _ephemeral(self, containers: list[Json], volumes: list[Json], pod: Pod, time: str) -> Json:
        """What the pod writes on the node: its containers' writable layers and logs, and its
        disk-backed emptyDir volumes (the kubelet's ephemeral-storage)."""
        memory_backed = {
            v.name for v in pod.spec.volumes if v.empty_dir is not None and v.empty_dir.medium
        }
        used = inodes = 0
        for c in containers:
            for fs in (c.get("rootfs") or {}, c.get("logs") or {}):
                used += fs.get("usedBytes") or 0
                inodes += fs.get("inodesUsed") or 0
        for v in volumes:
            if v["name"] not in memory_backed:
                used += v.get("usedBytes") or 0
                inodes += v.get("inodesUsed") or 0
        stats = fs_stats(self._root_dir, time, used)
        stats["inodesUsed"] = inodes
        return stats
