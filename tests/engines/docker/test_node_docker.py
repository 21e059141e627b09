"""The agent's Node on the Docker engine, read and cordoned with the real ``kubectl``: the
engine's images in ``status.images``, the image filesystem read from the engine's root, and a
cordon that keeps a new pod's containers off the engine."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubecore._contract.labels import POD_NAMESPACE_LABEL
from tests.api.kubectl_support import (
    needs_kubectl,
    wait_for,
)
from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.kubectl_agent import DockerApiNode, docker_api_node

pytestmark = [pytest.mark.docker, needs_kubectl]


@pytest.fixture
def docker_node(engine: TestEngine, test_uid: str, tmp_path: Path) -> Iterator[DockerApiNode]:
    with docker_api_node(engine, tmp_path, f"node-{test_uid}") as node:
        yield node


def test_the_node_lists_the_engines_images_and_its_image_filesystem(
    docker_node: DockerApiNode, engine: TestEngine
) -> None:
    node = json.loads(docker_node.kubectl.out("get", "node", docker_node.name, "-o", "json"))
    images = {
        name: image["sizeBytes"] for image in node["status"]["images"] for name in image["names"]
    }
    assert images.get(engine.image, 0) > 100_000, sorted(images)
    sizes = [image["sizeBytes"] for image in node["status"]["images"]]
    assert sizes == sorted(sizes, reverse=True)
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("docker://")
    imagefs = docker_node.api.nodes.conditions.host().imagefs
    assert imagefs is not None and 0 < imagefs.available <= imagefs.capacity
    (disk,) = [c for c in node["status"]["conditions"] if c["type"] == "DiskPressure"]
    assert disk["reason"] in ("KubeletHasNoDiskPressure", "KubeletHasDiskPressure")


def test_a_cordoned_node_starts_no_container_for_a_new_pod(
    docker_node: DockerApiNode, engine: TestEngine, namespace: str, raw: Any
) -> None:
    kubectl, name = docker_node.kubectl, docker_node.name
    kubectl.out("cordon", name)
    kubectl.out(
        "run",
        "refused",
        "-n",
        namespace,
        f"--image={engine.image}",
        "--image-pull-policy=IfNotPresent",
        "--",
        "sleep",
        "3600",
    )

    def phase() -> str:
        pod = docker_node.kubelet.get_pod(namespace, "refused")
        return pod.status.phase if pod is not None and pod.status is not None else ""

    wait_for(lambda: phase() == "Failed", what="the pod to be refused")
    assert docker_node.kubelet.get_pod(namespace, "refused").status.reason == "NodeUnschedulable"  # type: ignore[union-attr]
    label = f"{POD_NAMESPACE_LABEL}={namespace}"
    assert raw.containers(all=True, filters={"label": label}) == []
    row = kubectl.out("get", "nodes", "--no-headers").split()
    assert row[:2] == [name, "Ready,SchedulingDisabled"]
    kubectl.out("uncordon", name)
    kubectl.out("delete", "pod", "refused", "-n", namespace, "--wait=false")
