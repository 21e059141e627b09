"""Volume sources and mounts through the agent on the real Docker engine, observed inside the
containers: the Memory emptyDir's tmpfs and its size, configMap / secret / downwardAPI files and
their modes, a volume following a ConfigMap edit, subPath, hostPath types, mount propagation,
and local storage eviction."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.labels import POD_NAMESPACE_LABEL
from kubecore._util.clock import SystemClock
from kubecore._volumes.sources import DictObjects
from kubecore_docker import DockerConnection, DockerOptions, DockerPuller, DockerRuntime
from tests.engines.docker.conftest import TestEngine, remove_labelled
from tests.engines.docker.e2e_helpers import all_running, container, exec_until, make_pod, wait_pod
from tests.engines.docker.helpers import wait_for

pytestmark = pytest.mark.docker

Agent = Callable[..., Kubelet]


@pytest.fixture
def namespace(raw: Any, test_uid: str) -> Iterator[str]:
    ns = f"vol-{test_uid}"
    yield ns
    remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={ns}")
    for volume in raw.volumes(filters={"label": f"{POD_NAMESPACE_LABEL}={ns}"})["Volumes"] or ():
        raw.remove_volume(volume["Name"])


@pytest.fixture
def objects() -> DictObjects:
    return DictObjects()


@pytest.fixture
def agent(
    engine: TestEngine, namespace: str, tmp_path: Path, objects: DictObjects
) -> Iterator[Agent]:
    made: list[tuple[Kubelet, DockerRuntime]] = []
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 192.0.2.53\n")

    def make(pods: list[Any], **config: Any) -> Kubelet:
        connection = DockerConnection(
            DockerOptions(
                base_url=engine.base_url,
                timeout=30,
                sandbox_image=engine.pause_image,
                sandbox_stop_timeout=2,
            )
        )
        runtime = DockerRuntime(connection)
        values: dict[str, Any] = {
            "node_name": "vol-node",
            "root_dir": str(tmp_path / "root"),
            "resolv_conf": str(resolv),
            "relist_interval": 0.3,
            "housekeeping_interval": 0.5,
            "resync_interval": 5.0,
            **config,
        }
        kubelet = Kubelet(
            runtime,
            DockerPuller(connection),
            config=KubeletConfig(**values),
            clock=SystemClock(),
        )
        kubelet._rooms.volumes.objects = objects
        made.append((kubelet, runtime))
        kubelet.set_pods(pods)
        kubelet.start()
        return kubelet

    yield make
    for kubelet, runtime in reversed(made):
        kubelet.stop(timeout=10)
        runtime.close()


def run(kubelet: Kubelet, namespace: str, command: str, ctr: str = "app") -> str:
    result = exec_until(kubelet, namespace, "p", ctr, ["sh", "-c", command])
    assert result.exit_code == 0, result
    return result.stdout.decode()


def one_pod(namespace: str, engine: TestEngine, volumes: list[Any], mounts: list[Any]) -> Any:
    return make_pod(
        "p",
        namespace,
        [container("app", engine.image, volumeMounts=mounts)],
        volumes=volumes,
    )


def test_a_memory_empty_dir_is_a_sized_tmpfs_shared_by_the_containers(
    agent: Agent, engine: TestEngine, namespace: str, raw: Any
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
    full = kubelet.exec(
        namespace, "p", "app", ["sh", "-c", "dd if=/dev/zero of=/cache/big bs=1M count=16"]
    )
    assert full.exit_code != 0  # bounded by the size

    def volumes() -> list[Any]:
        found = raw.volumes(filters={"label": f"{POD_NAMESPACE_LABEL}={namespace}"})
        return list(found["Volumes"] or ())

    assert len(volumes()) == 1  # one tmpfs for the pod's two containers
    kubelet.set_pods([])
    wait_for(lambda: not volumes(), timeout=30, what="the tmpfs removed with the pod")


def test_empty_dir_mode_is_what_the_containers_see(
    agent: Agent, engine: TestEngine, namespace: str
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
    agent: Agent, engine: TestEngine, namespace: str
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
    kubelet.exec(namespace, "p", "app", ["kill", "1"])  # exits 0 on TERM; Always restarts it
    wait_pod(
        kubelet,
        namespace,
        "p",
        lambda p: all_running(p) and p.status.container_statuses[0].restart_count == 1,  # type: ignore[union-attr]
        timeout=30,
    )
    assert run(kubelet, namespace, "cat /cache/f") == "kept\n"


def test_config_map_files_their_modes_and_an_edit(
    agent: Agent, engine: TestEngine, namespace: str, objects: DictObjects
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
    gone = kubelet.exec(namespace, "p", "app", ["test", "-e", "/etc/cfg/level"])
    assert gone.exit_code != 0
    assert run(kubelet, namespace, "cat /etc/mode") == "fast"  # a subPath is not updated


def test_downward_api_files(agent: Agent, engine: TestEngine, namespace: str) -> None:
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


def test_host_path_types(agent: Agent, engine: TestEngine, namespace: str, tmp_path: Path) -> None:
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
    kubelet = agent([pod])

    def failed_mount() -> list[str]:
        return [e.message for e in kubelet.recent_events(namespace=namespace, reason="FailedMount")]

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


@pytest.fixture
def shared_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory bind-mounted on itself and made a shared mount (as the kubelet makes its
    root dir), so that HostToContainer propagation is possible; unmounted afterwards."""
    path = tmp_path / "shared"
    path.mkdir()
    try:
        subprocess.run(["mount", "--bind", str(path), str(path)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"this test needs mount privileges: {exc}")
    try:
        subprocess.run(["mount", "--make-shared", str(path)], check=True)
        yield path
    finally:
        subprocess.run(["umount", "-R", str(path)], check=False)


def test_host_to_container_propagation_shows_a_later_host_mount(
    agent: Agent, engine: TestEngine, namespace: str, shared_dir: Path, raw: Any
) -> None:
    pod = one_pod(
        namespace,
        engine,
        [{"name": "h", "hostPath": {"path": str(shared_dir)}}],
        [{"name": "h", "mountPath": "/h", "mountPropagation": "HostToContainer"}],
    )
    kubelet = agent([pod])
    running = wait_pod(kubelet, namespace, "p", all_running, timeout=30)
    (status,) = running.status.container_statuses  # type: ignore[union-attr]
    data = raw.inspect_container(status.container_id.removeprefix("docker://"))
    (bind,) = [m for m in data["Mounts"] if m["Destination"] == "/h"]
    assert bind["Propagation"] == "rslave"
    later = shared_dir / "later"
    later.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(later)], check=True)
    seen = exec_until(
        kubelet,
        namespace,
        "p",
        "app",
        ["grep", " /h/later ", "/proc/mounts"],
    )
    assert seen.exit_code == 0 and b"tmpfs" in seen.stdout, seen


def test_propagation_from_a_private_mount_is_refused_clearly(
    agent: Agent, engine: TestEngine, namespace: str, tmp_path: Path
) -> None:
    pod = one_pod(
        namespace,
        engine,
        [{"name": "h", "hostPath": {"path": str(tmp_path)}}],
        [{"name": "h", "mountPath": "/h", "mountPropagation": "HostToContainer"}],
    )
    kubelet = agent([pod])

    def refused() -> list[str]:
        return [
            e.message
            for e in kubelet.recent_events(namespace=namespace, reason="Failed")
            if "not a shared or slave mount" in e.message
        ]

    assert exec_wait(refused)
    waiting = wait_pod(
        kubelet,
        namespace,
        "p",
        lambda p: (
            bool(p.status and p.status.container_statuses)
            and p.status.container_statuses[0].state.waiting is not None
        ),
    )
    # The phase depends on when it is read: Pending until the engine shows the instance that
    # could not start, then Running (restarting, in back-off) as the kubelet reports it.
    status = waiting.status
    assert status is not None and not status.container_statuses[0].ready
    assert status.container_statuses[0].state.running is None


@pytest.mark.parametrize("where", ["emptyDir", "rootfs"])
def test_local_storage_over_its_limit_evicts_the_pod(
    agent: Agent, engine: TestEngine, namespace: str, where: str
) -> None:
    target = "/scratch/big" if where == "emptyDir" else "/big"
    pod = make_pod(
        "p",
        namespace,
        [
            container(
                "app",
                engine.image,
                volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}],
                resources={"limits": {"ephemeral-storage": "8Mi"}} if where == "rootfs" else {},
            )
        ],
        volumes=[
            {"name": "scratch", "emptyDir": {"sizeLimit": "1Mi"} if where == "emptyDir" else {}}
        ],
    )
    kubelet = agent([pod])
    wait_pod(kubelet, namespace, "p", all_running)
    # the eviction may kill the container while dd still runs: its result does not matter
    kubelet.exec(
        namespace, "p", "app", ["dd", "if=/dev/urandom", f"of={target}", "bs=1M", "count=12"]
    )
    evicted = wait_pod(
        kubelet,
        namespace,
        "p",
        lambda p: p.status is not None and p.status.phase == "Failed",
        timeout=30,
    )
    assert evicted.status is not None
    assert evicted.status.reason == "Evicted"
    expected = (
        'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". '
        if where == "emptyDir"
        else "Pod ephemeral local storage usage exceeds the total limit of containers 8Mi. "
    )
    assert evicted.status.message == expected


def test_container_logs_count_toward_ephemeral_storage(
    agent: Agent, engine: TestEngine, namespace: str
) -> None:
    chatty = [
        "sh",
        "-c",
        "trap 'exit 0' TERM; yes | head -n 200000; while :; do sleep 1 & wait $!; done",
    ]
    pod = make_pod(
        "p",
        namespace,
        [
            container(
                "app",
                engine.image,
                chatty,
                resources={"limits": {"ephemeral-storage": "4Mi"}},
            )
        ],
    )
    kubelet = agent([pod])
    evicted = wait_pod(
        kubelet,
        namespace,
        "p",
        lambda p: p.status is not None and p.status.phase == "Failed",
        timeout=30,
    )
    assert evicted.status is not None
    assert (evicted.status.reason, evicted.status.message) == (
        "Evicted",
        "Pod ephemeral local storage usage exceeds the total limit of containers 4Mi. ",
    )
