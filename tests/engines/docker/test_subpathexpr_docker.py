"""``volumeMounts[].subPathExpr`` through the agent on the real Docker engine: a file the
container writes under its mount lands in the volume's sub-directory named by the expansion of
the container's env (seen from a second container mounting the whole volume, on the host, and in
``docker inspect``, which binds the agent's bind of that directory)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.labels import POD_NAMESPACE_LABEL
from kubecore._util.clock import SystemClock
from kubecore_docker import DockerConnection, DockerOptions, DockerPuller, DockerRuntime
from tests.engines.docker.conftest import TestEngine, remove_labelled
from tests.engines.docker.e2e_helpers import all_running, container, exec_until, make_pod, wait_pod
from tests.engines.engine_support import unmount_under

pytestmark = pytest.mark.docker

NODE_NAME = "subpathexpr-node"


@pytest.fixture
def namespace(raw: Any, test_uid: str) -> Iterator[str]:
    ns = f"spe-{test_uid}"
    yield ns
    remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={ns}")


@pytest.fixture
def node_root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def agent(engine: TestEngine, tmp_path: Path, node_root: Path) -> Iterator[Kubelet]:
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 192.0.2.53\n")
    connection = DockerConnection(
        DockerOptions(
            base_url=engine.base_url,
            timeout=30,
            sandbox_image=engine.pause_image,
            sandbox_stop_timeout=2,
        )
    )
    runtime = DockerRuntime(connection)
    kubelet = Kubelet(
        runtime,
        DockerPuller(connection),
        config=KubeletConfig(
            node_name=NODE_NAME,
            root_dir=str(node_root),
            resolv_conf=str(resolv),
            relist_interval=0.3,
            housekeeping_interval=0.5,
            resync_interval=5.0,
        ),
        clock=SystemClock(),
    )
    try:
        yield kubelet
    finally:
        kubelet.stop(timeout=10)
        runtime.close()
        unmount_under(tmp_path)  # a stopped agent leaves its running pod's subPath binds


def run(kubelet: Kubelet, namespace: str, ctr: str, command: str) -> str:
    result = exec_until(kubelet, namespace, "p", ctr, ["sh", "-c", command])
    assert result.exit_code == 0, result
    return result.stdout.decode()


def test_a_file_lands_in_the_expanded_sub_directory(
    agent: Kubelet, engine: TestEngine, namespace: str, node_root: Path, raw: Any
) -> None:
    env = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "LOG_DIR", "value": "logs-$(POD_NAME)"},
    ]
    pod = make_pod(
        "p",
        namespace,
        [
            container(
                "app",
                engine.image,
                env=env,
                volumeMounts=[
                    {
                        "name": "workdir",
                        "mountPath": "/logs",
                        "subPathExpr": "$(POD_NAMESPACE)/$(LOG_DIR)",
                    }
                ],
            ),
            container(
                "reader", engine.image, volumeMounts=[{"name": "workdir", "mountPath": "/all"}]
            ),
        ],
        volumes=[{"name": "workdir", "emptyDir": {}}],
    )
    agent.set_pods([pod])
    agent.start()
    running = wait_pod(agent, namespace, "p", all_running, timeout=60)

    run(agent, namespace, "app", "echo Hello > /logs/hello.txt")
    assert run(agent, namespace, "reader", f"cat /all/{namespace}/logs-p/hello.txt") == "Hello\n"
    assert run(agent, namespace, "reader", "ls /all") == f"{namespace}\n"

    volume = node_root / "pods" / pod.uid / "volumes" / "kubernetes.io~empty-dir" / "workdir"
    expanded = volume / namespace / "logs-p"
    assert (expanded / "hello.txt").read_text() == "Hello\n"
    statuses = running.status.container_statuses if running.status is not None else ()
    (app_id,) = [s.container_id.split("://")[-1] for s in statuses if s.name == "app"]
    binds = {m["Destination"]: m["Source"] for m in raw.inspect_container(app_id)["Mounts"]}
    # The engine binds the agent's bind of the expanded directory (the inode it verified).
    target = node_root / "pods" / pod.uid / "volume-subpaths" / "workdir" / "app" / "0"
    assert binds["/logs"] == str(target)
    assert os.stat(binds["/logs"]).st_ino == expanded.stat().st_ino
