"""Volume checks through the agent on the real Docker engine that the scenarios of every engine
(tests/engines/scenarios/test_volume_scenarios.py) do not make: mount propagation, and local
storage eviction (emptyDir, writable layer, container logs)."""

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
            "node_name": f"{namespace}-node",  # the test's own: tests run side by side
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
    kubelet = agent([pod], allowed_host_paths=(str(shared_dir),))
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
    kubelet = agent([pod], allowed_host_paths=(str(tmp_path),))

    def refused() -> list[str]:
        return [
            e.message
            for e in kubelet.views.recent_events(namespace=namespace, reason="Failed")
            if "not a shared or slave mount" in e.message
        ]

    assert wait_for(refused, timeout=20, interval=0.1, what="a FailedMount event")
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
    kubelet.streams.exec(
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
