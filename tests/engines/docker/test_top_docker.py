"""``kubectl top`` against an agent on the Docker engine: a container spinning under a CPU limit
shows as a rate near that limit, and the node's own figures are there."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import requests

from kubecore._api.server import ApiServerConfig, attach_api
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._model.quantity import cpu_millis, memory_bytes
from tests.api.kubectl_support import Kubectl, kubectl_for, needs_kubectl
from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import AgentFactory, all_running, container, make_pod
from tests.engines.docker.helpers import wait_for

pytestmark = [pytest.mark.docker, needs_kubectl]

SPIN = ["sh", "-c", "trap 'exit 0' TERM; while :; do :; done"]


@pytest.fixture
def served(
    engine: TestEngine, make_agent: AgentFactory, namespace: str, tmp_path: Path
) -> Iterator[tuple[Kubectl, str]]:
    """kubectl (anonymous reads on loopback) against an agent running the pod ``spin``, whose
    one container spins under a limit of a fifth of a core."""
    limits = {"limits": {"cpu": "200m", "memory": "32Mi"}}
    pod = make_pod("spin", namespace, [container("spin", engine.image, SPIN, resources=limits)])
    kubelet = make_agent([pod], start=False)
    api = attach_api(kubelet, ApiServerConfig(), address="127.0.0.1")
    kubelet.start()
    server = KubeletServer(kubelet, ServerConfig(port=0, request_timeout=10.0), api=api).start()
    try:
        wait_for(
            lambda: all_running(cast(Any, kubelet.get_pod(namespace, "spin"))),
            timeout=60,
            what="the spinning pod to run",
        )
        yield kubectl_for(tmp_path / "kubectl", server.url), server.url
    finally:
        server.stop()


def test_top_pod_shows_the_spinning_container_near_its_limit(
    served: tuple[Kubectl, str], namespace: str
) -> None:
    kubectl, url = served
    path = f"{url}/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/spin"

    def measured() -> dict[str, Any] | None:
        """The pod's metrics once measured over a window of its own (two reads)."""
        metrics = requests.get(path, timeout=10).json()
        (usage,) = [c["usage"] for c in metrics["containers"]]
        return usage if cpu_millis(usage["cpu"]) >= 20 else None

    usage = cast(dict[str, Any], wait_for(measured, timeout=30, interval=1.2, what="a rate"))
    # the CFS quota holds it at 200m; a busy machine may give it less, never much more
    assert cpu_millis(usage["cpu"]) <= 260
    assert 0 < memory_bytes(usage["memory"]) <= 32 << 20
    rows = [line.split() for line in kubectl.out("top", "pod", "-n", namespace).splitlines()]
    assert rows[0] == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    (name, cpu, memory) = rows[1]
    assert name == "spin" and re.fullmatch(r"\d+m", cpu) and re.fullmatch(r"\d+(Ki|Mi)", memory)
    assert 20 <= cpu_millis(cpu) <= 260
    containers = kubectl.out("top", "pod", "spin", "-n", namespace, "--containers").splitlines()
    assert containers[1].split()[:2] == ["spin", "spin"]


def test_top_node_shows_the_host(served: tuple[Kubectl, str], test_uid: str) -> None:
    kubectl, _ = served
    header, row = kubectl.out("top", "node").strip().splitlines()
    assert header.split()[0] == "NAME"
    name, cpu, _cpu_share, memory, _memory_share = row.split()
    assert name == f"e2e-node-{test_uid}" and cpu_millis(cpu) >= 0 and memory_bytes(memory) > 0
