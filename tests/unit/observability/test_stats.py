"""/stats/summary in the Summary API's shape (k8s.io/kubelet/pkg/apis/stats/v1alpha1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubecore._model.v1 import EmptyDirVolumeSource, ResourceRequirements, Volume
from kubecore._observability.stats import (
    StatsProvider,
    default_interface,
    node_memory,
    parse_key_values,
    parse_net_dev,
    parse_proc_stat,
)
from kubecore_fake import Behaviour
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod

PROC_STAT = "cpu  100 20 30 4000 50 6 7 8 0 0\ncpu0 100 20 30 4000 50 6 7 8 0 0\nbtime 1700000000\n"
MEMINFO = (
    "MemTotal:       1000 kB\nMemFree:         200 kB\nMemAvailable:    600 kB\n"
    "AnonPages:       300 kB\nInactive(file):  100 kB\n"
)
VMSTAT = "pgfault 5000\npgmajfault 7\n"
NET_DEV = (
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs"
    " drop fifo colls carrier compressed\n"
    "    lo: 999 1 0 0 0 0 0 0 999 1 0 0 0 0 0 0\n"
    "  eth0: 1000 10 1 0 0 0 0 0 2000 20 2 0 0 0 0 0\n"
)
SELF_STAT = "42 (python3 (x)) S 1 42 42 0 -1 0 0 0 0 0 250 50 0 0 20 0 4 0 12345 0 0\n"
ROUTE = "Iface\tDestination\tGateway\n eth0\t00000000\t0101A8C0\n"

NODE_FIELDS = {"nodeName", "systemContainers", "startTime", "cpu", "memory", "network", "fs",
               "runtime", "rlimit"}  # fmt: skip
CPU_FIELDS = {"time", "usageCoreNanoSeconds"}
MEMORY_FIELDS = {"time", "usageBytes", "workingSetBytes", "rssBytes", "pageFaults",
                 "majorPageFaults"}  # fmt: skip
FS_FIELDS = {"time", "availableBytes", "capacityBytes", "usedBytes", "inodesFree", "inodes",
             "inodesUsed"}  # fmt: skip
POD_FIELDS = {"podRef", "startTime", "containers", "cpu", "memory", "volume", "ephemeral-storage"}
CONTAINER_FIELDS = {"name", "startTime", "cpu", "memory", "rootfs", "logs"}


def fake_proc(root: Path) -> str:
    (root / "net").mkdir(parents=True)
    (root / "sys/kernel").mkdir(parents=True)
    (root / "stat").write_text(PROC_STAT)
    (root / "meminfo").write_text(MEMINFO)
    (root / "vmstat").write_text(VMSTAT)
    (root / "net/dev").write_text(NET_DEV)
    (root / "net/route").write_text(ROUTE)
    (root / "sys/kernel/pid_max").write_text("4194304\n")
    (root / "loadavg").write_text("0.10 0.20 0.30 2/345 6789\n")
    (root / "self").mkdir()
    (root / "self/stat").write_text(SELF_STAT)
    (root / "self/status").write_text("Name:\tpython3\nVmRSS:\t   2048 kB\n")
    return str(root)


def provider(node: Node, proc: str) -> StatsProvider:
    kubelet = node.kubelet
    return StatsProvider(
        kubelet._rooms.runtime,
        node_name="n1",
        root_dir=str(node.tmp),
        pod_dir=kubelet._rooms.volumes.pod_dir,
        image_fs=kubelet._rooms.puller.image_fs_usage,
        proc=proc,
    )


def test_proc_parsers() -> None:
    cpu, boot = parse_proc_stat(PROC_STAT)
    ticks = 100 + 20 + 30 + 6 + 7 + 8
    assert cpu is not None and cpu == ticks * 10**9 // 100 and boot == 1_700_000_000
    memory = node_memory(parse_key_values(MEMINFO), parse_key_values(VMSTAT))
    assert memory == {
        "availableBytes": 300 * 1024,
        "usageBytes": 800 * 1024,
        "workingSetBytes": 700 * 1024,
        "rssBytes": 300 * 1024,
        "pageFaults": 5000,
        "majorPageFaults": 7,
    }
    (eth0,) = parse_net_dev(NET_DEV)
    assert eth0 == {"name": "eth0", "rxBytes": 1000, "rxErrors": 1, "txBytes": 2000, "txErrors": 2}
    assert default_interface(ROUTE) == "eth0"


def summary_of(node: Node, stats: StatsProvider) -> dict[str, Any]:
    return stats.summary(node.kubelet.pods(), node.clock.now())


def test_the_summary_has_the_api_fields(tmp_path: Path) -> None:
    node = make_node(tmp_path / "node")
    stats = provider(node, fake_proc(tmp_path / "proc"))
    volumes = (Volume("cache", empty_dir=EmptyDirVolumeSource()),)
    limited = ctr("app", resources=ResourceRequirements(limits={"memory": "64Mi"}))
    node.kubelet.set_pods([make_pod("web", limited, ctr("side"), volumes=volumes)])
    node.converge()
    cache = Path(node.kubelet._rooms.volumes.empty_dir_path("uid-default-web", "cache"))
    (cache / "data").write_bytes(b"x" * 10000)

    first = summary_of(node, stats)
    node.clock.sleep(10)
    summary = summary_of(node, stats)
    n = summary["node"]
    assert set(n) == NODE_FIELDS
    assert n["nodeName"] == "n1" and n["startTime"] == "2023-11-14T22:13:20Z"
    assert set(n["cpu"]) >= CPU_FIELDS and set(n["memory"]) >= MEMORY_FIELDS
    assert n["network"]["name"] == "eth0" and len(n["network"]["interfaces"]) == 1
    assert set(n["fs"]) == FS_FIELDS
    assert {"availableBytes", "capacityBytes", "usedBytes"} <= set(n["runtime"]["imageFs"])
    (agent,) = n["systemContainers"]
    assert agent["name"] == "kubelet"
    assert agent["startTime"] == "2023-11-14T22:15:23Z"  # boot + 12345 ticks
    assert agent["cpu"]["usageCoreNanoSeconds"] == 3 * 10**9
    assert agent["memory"]["workingSetBytes"] == 2048 * 1024
    assert n["rlimit"] == {"time": n["cpu"]["time"], "maxpid": 4194304, "curproc": 345}

    (pod,) = summary["pods"]
    assert set(pod) == POD_FIELDS
    assert pod["podRef"] == {"name": "web", "namespace": "default", "uid": "uid-default-web"}
    app, side = pod["containers"]
    assert (app["name"], side["name"]) == ("app", "side")
    assert set(app) == CONTAINER_FIELDS
    assert set(app["memory"]) >= MEMORY_FIELDS
    assert app["memory"]["availableBytes"] == 64 * 1024 * 1024 - 4 * 1024 * 1024
    # usageNanoCores is a rate: absent at the first read, the fake's 1 % of a core at the next
    assert "usageNanoCores" not in first["pods"][0]["containers"][0]["cpu"]
    assert app["cpu"]["usageNanoCores"] == 10_000_000
    assert pod["cpu"]["usageNanoCores"] == 20_000_000
    assert pod["cpu"]["usageCoreNanoSeconds"] == (
        app["cpu"]["usageCoreNanoSeconds"] + side["cpu"]["usageCoreNanoSeconds"]
    )
    (volume,) = pod["volume"]
    assert volume["name"] == "cache" and volume["usedBytes"] >= 10000
    assert volume["inodesUsed"] == 1
    assert set(volume) == FS_FIELDS | {"name"}
    assert pod["ephemeral-storage"]["usedBytes"] >= 10000


def test_a_crash_looping_container_keeps_its_last_figures_until_its_pod_is_gone(
    tmp_path: Path,
) -> None:
    node = make_node(tmp_path / "node")
    stats = provider(node, fake_proc(tmp_path / "proc"))
    node.runtime.script(image="busybox:1.36", behaviour=Behaviour(exit_code=1, after=5.0))
    node.kubelet.set_pods([make_pod("crash", ctr("app"))])
    node.converge()
    node.clock.sleep(2)
    running = summary_of(node, stats)["pods"][0]["containers"][0]
    node.clock.sleep(10)
    assert not node.running("crash", "app"), "the container has exited"
    kept = summary_of(node, stats)["pods"][0]["containers"][0]
    assert kept == running
    node.kubelet.set_pods([])
    node.converge()
    assert summary_of(node, stats)["pods"] == []
