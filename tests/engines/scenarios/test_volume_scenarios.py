"""Volume sources and mounts through the agent on every engine (Docker, then the CRI on
containerd), observed inside the containers: the Memory emptyDir's tmpfs and its size (a tmpfs
the agent mounts on the host for a runtime that binds host paths only, unmounted on teardown),
emptyDir modes, configMap / secret / downwardAPI files and their modes, a volume following a
ConfigMap edit, subPath, and hostPath types."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet
from kubecore._housekeeping.timers import POD_DIR_RECLAIM_GRACE
from kubecore._volumes.sources import DictObjects
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    exec_until,
    make_pod,
    wait_pod,
)
from tests.engines.docker.helpers import wait_for
from tests.engines.engine_support import EngineUnderTest, host_mounts_under

Agent = Callable[..., Kubelet]


@pytest.fixture
def objects() -> DictObjects:
    return DictObjects()


@pytest.fixture
def agent(make_agent: AgentFactory, objects: DictObjects) -> Agent:
    """A started agent on ``pods`` whose ConfigMaps and Secrets are ``objects``."""

    def make(pods: list[Any], **config: Any) -> Kubelet:
        kubelet = make_agent(pods, start=False, **config)
        kubelet._rooms.volumes.objects = objects
        kubelet.start()
        return kubelet

    return make


def run(kubelet: Kubelet, namespace: str, command: str, ctr: str = "app") -> str:
    result = exec_until(kubelet, namespace, "p", ctr, ["sh", "-c", command])
    assert result.exit_code == 0, result
    return result.stdout.decode()


def one_pod(namespace: str, engine: EngineUnderTest, volumes: list[Any], mounts: list[Any]) -> Any:
    return make_pod(
        "p",
        namespace,
        [container("app", engine.image, volumeMounts=mounts)],
        volumes=volumes,
    )


def test_a_memory_empty_dir_is_a_sized_tmpfs_shared_by_the_containers(
    agent: Agent, engine: EngineUnderTest, namespace: str, tmp_path: Path
) -> None:
    mount = [{"name": "cache", "mountPath": "/cache"}]
    pod = make_pod(
        "p",
        namespace,
        [
            container("app", engine.image, volumeMounts=mount),
            container("other", engine.image, volumeMounts=mount),
        ],
        volumes=[{"name": "cache", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}}],
    )
    kubelet = agent([pod])
    wait_pod(kubelet, namespace, "p", all_running)
    line = run(kubelet, namespace, "grep ' /cache ' /proc/mounts")
    fields = line.split()
    assert fields[2] == "tmpfs", line
    assert "size=8192k" in fields[3].split(","), line
    blocks = run(kubelet, namespace, "df -k /cache | tail -1").split()
    assert blocks[1] == "8192", blocks
    run(kubelet, namespace, "echo shared > /cache/f")
    assert run(kubelet, namespace, "cat /cache/f", "other") == "shared\n"
    full = kubelet.streams.exec(
        namespace, "p", "app", ["sh", "-c", "dd if=/dev/zero of=/cache/big bs=1M count=16"]
    )
    assert full.exit_code != 0  # bounded by the size

    # One tmpfs for the pod's two containers: the engine's own (a Docker volume), or one the
    # agent mounted on the host (CRI binds host paths only).
    root = tmp_path / "root"
    assert len(engine.pod_volumes(namespace)) + len(host_mounts_under(root)) == 1
    if engine.binds_host_paths_only:
        (on_host,) = host_mounts_under(root)
        assert on_host.endswith(f"/pods/{pod.uid}/volumes/kubernetes.io~empty-dir/cache")
    kubelet.set_pods([])
    wait_for(
        lambda: not engine.pod_volumes(namespace) and not host_mounts_under(root),
        timeout=POD_DIR_RECLAIM_GRACE + 60,  # a departed pod's directory is kept that long first
        what="the tmpfs removed with the pod",
    )


def test_a_memory_empty_dir_without_a_size_limit_is_as_large_as_the_pods_memory_limit(
    agent: Agent, engine: EngineUnderTest, namespace: str
) -> None:
    mounts = [{"name": "cache", "mountPath": "/cache"}]
    limits = {"limits": {"memory": "24Mi"}}
    pod = make_pod(
        "p",
        namespace,
        [container("app", engine.image, volumeMounts=mounts, resources=limits)],
        volumes=[{"name": "cache", "emptyDir": {"medium": "Memory"}}],
    )
    kubelet = agent([pod])
    wait_pod(kubelet, namespace, "p", all_running)
    assert run(kubelet, namespace, "df -k /cache | tail -1").split()[1] == str(24 * 1024)


def test_empty_dir_mode_is_what_the_containers_see(
    agent: Agent, engine: EngineUnderTest, namespace: str
) -> None:
    """``emptyDir.mode`` on a disk emptyDir (the docs' shared /tmp, 01777) and on a tmpfs."""
    pod = one_pod(
        namespace,
        engine,
        volumes=[
            {"name": "tmp", "emptyDir": {"mode": 0o1777}},
            {"name": "private", "emptyDir": {"medium": "Memory", "mode": 0o700}},
        ],
        mounts=[{"name": "tmp", "mountPath": "/tmp"}, {"name": "private", "mountPath": "/p"}],
    )
    kubelet = agent([pod])
    wait_pod(kubelet, namespace, "p", all_running)
    assert run(kubelet, namespace, "stat -c %a /tmp /p").split() == ["1777", "700"]


def test_a_memory_empty_dir_outlives_a_restart_of_its_only_container(
    agent: Agent, engine: EngineUnderTest, namespace: str
) -> None:
    pod = one_pod(
        namespace,
        engine,
        [{"name": "cache", "emptyDir": {"medium": "Memory"}}],
        [{"name": "cache", "mountPath": "/cache"}],
    )
    kubelet = agent([pod])
    wait_pod(kubelet, namespace, "p", all_running)
    run(kubelet, namespace, "echo kept > /cache/f")
    kubelet.streams.exec(
        namespace, "p", "app", ["kill", "1"]
    )  # exits 0 on TERM; Always restarts it
    wait_pod(
        kubelet,
        namespace,
        "p",
        lambda p: all_running(p) and p.status.container_statuses[0].restart_count == 1,  # type: ignore[union-attr]
        timeout=30,
    )
    assert run(kubelet, namespace, "cat /cache/f") == "kept\n"


def test_config_map_files_their_modes_and_an_edit(
    agent: Agent, engine: EngineUnderTest, namespace: str, objects: DictObjects
) -> None:
    objects.config_maps[(namespace, "settings")] = {"mode": b"fast", "level": b"3"}
    objects.secrets[(namespace, "creds")] = {"password": b"s3cret"}
    pod = one_pod(
        namespace,
        engine,
        [
            {"name": "cfg", "configMap": {"name": "settings", "defaultMode": 0o640}},
            {"name": "sec", "secret": {"secretName": "creds", "defaultMode": 0o400}},
            {"name": "one", "configMap": {"name": "settings"}},
        ],
        [
            {"name": "cfg", "mountPath": "/etc/cfg"},
            {"name": "sec", "mountPath": "/etc/sec", "readOnly": True},
            {"name": "one", "mountPath": "/etc/mode", "subPath": "mode"},
        ],
    )
    kubelet = agent([pod])
    wait_pod(kubelet, namespace, "p", all_running)
    assert run(kubelet, namespace, "cat /etc/cfg/mode /etc/sec/password") == "fasts3cret"
    modes = run(kubelet, namespace, "stat -L -c '%a %n' /etc/cfg/mode /etc/sec/password")
    assert modes.split("\n")[:2] == ["640 /etc/cfg/mode", "400 /etc/sec/password"]
    assert run(kubelet, namespace, "readlink /etc/cfg/mode") == "..data/mode\n"

    objects.config_maps[(namespace, "settings")] = {"mode": b"slow"}
    edited = exec_until(
        kubelet,
        namespace,
        "p",
        "app",
        ["cat", "/etc/cfg/mode"],
        ok=lambda r: r.stdout == b"slow",
        timeout=15,
    )
    assert edited.stdout == b"slow"
    gone = kubelet.streams.exec(namespace, "p", "app", ["test", "-e", "/etc/cfg/level"])
    assert gone.exit_code != 0
    assert run(kubelet, namespace, "cat /etc/mode") == "fast"  # a subPath is not updated


def test_downward_api_files(agent: Agent, engine: EngineUnderTest, namespace: str) -> None:
    pod = make_pod(
        "p",
        namespace,
        [
            container(
                "app",
                engine.image,
                volumeMounts=[{"name": "info", "mountPath": "/etc/podinfo"}],
                resources={"limits": {"memory": "32Mi"}},
            )
        ],
        volumes=[
            {
                "name": "info",
                "downwardAPI": {
                    "items": [
                        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                        {"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}},
                        {
                            "path": "mem",
                            "resourceFieldRef": {
                                "containerName": "app",
                                "resource": "limits.memory",
                                "divisor": "1Mi",
                            },
                        },
                    ]
                },
            }
        ],
    )
    kubelet = agent([pod])
    wait_pod(kubelet, namespace, "p", all_running)
    got = run(kubelet, namespace, "cat /etc/podinfo/name; echo; cat /etc/podinfo/ns; echo;"
              " cat /etc/podinfo/mem")  # fmt: skip
    assert got == f"p\n{namespace}\n32"


def test_host_path_types(
    agent: Agent, engine: EngineUnderTest, namespace: str, tmp_path: Path
) -> None:
    made_dir = tmp_path / "made"
    made_file = tmp_path / "made.txt"
    missing = tmp_path / "missing"
    pod = one_pod(
        namespace,
        engine,
        [
            {"name": "d", "hostPath": {"path": str(made_dir), "type": "DirectoryOrCreate"}},
            {"name": "f", "hostPath": {"path": str(made_file), "type": "FileOrCreate"}},
            {"name": "m", "hostPath": {"path": str(missing), "type": "Directory"}},
            {"name": "c", "hostPath": {"path": "/dev/null", "type": "CharDevice"}},
        ],
        [
            {"name": "d", "mountPath": "/d"},
            {"name": "f", "mountPath": "/f.txt"},
            {"name": "m", "mountPath": "/m"},
            {"name": "c", "mountPath": "/null"},
        ],
    )
    kubelet = agent([pod], allowed_host_paths=(str(tmp_path), "/dev/null"))

    def failed_mount() -> list[str]:
        return [
            e.message
            for e in kubelet.views.recent_events(namespace=namespace, reason="FailedMount")
        ]

    messages = exec_wait(failed_mount)
    assert f"{missing} is not a directory (type Directory)" in messages[0]
    assert not missing.exists()
    assert made_dir.is_dir() and made_file.is_file()
    missing.mkdir()
    wait_pod(kubelet, namespace, "p", all_running, timeout=30)
    run(kubelet, namespace, "echo in > /d/x; echo file > /f.txt; echo gone > /null")
    assert (made_dir / "x").read_text() == "in\n"
    assert made_file.read_text() == "file\n"
    assert run(kubelet, namespace, "test -c /null && echo char") == "char\n"


def exec_wait(found: Callable[[], list[str]]) -> list[str]:
    result: list[str] = wait_for(found, timeout=20, interval=0.1, what="a FailedMount event")
    return result
