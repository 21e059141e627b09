"""Probes of a host-network pod on the real engine: its sandbox has no IP of its own, so a
probe that names no host goes to the node's IP (detected when the agent is given none)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kubecore._model.v1 import Pod
from kubecore.runtime import NODE_LABEL
from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import AgentFactory, container, make_pod, wait_pod
from tests.engines.docker.helpers import free_port

pytestmark = pytest.mark.docker

OWN_NODE = {NODE_LABEL: f"probes-tests-{uuid.uuid4().hex[:8]}"}  # each process its own


def ready(found: Pod) -> bool:
    statuses = found.status.container_statuses if found.status is not None else ()
    return bool(statuses) and statuses[0].ready


@pytest.mark.parametrize("host_ip", ["", "127.0.0.1"], ids=["detected", "configured"])
def test_a_host_network_pod_whose_probes_name_no_host_becomes_ready(
    make_agent: AgentFactory,
    engine: TestEngine,
    namespace: str,
    raw: Any,
    host_ip: str,
) -> None:
    port = free_port()
    server = ["sh", "-c", f"trap 'exit 0' TERM; nc -ll -p {port} -e true & wait $!"]
    probe = {"tcpSocket": {"port": port}, "periodSeconds": 1}
    pod = make_pod(
        "hostnet",
        namespace,
        [container("server", engine.image, server, readinessProbe=probe)],
        hostNetwork=True,
    )
    kubelet = make_agent(
        [pod], node_name=OWN_NODE[NODE_LABEL], host_ip=host_ip, allow_privileged=True
    )
    wait_pod(kubelet, namespace, "hostnet", ready, timeout=30, what="ready")
    # (a first probe may fail before the server listens; none may fail to run at all)
    unhealthy = kubelet.views.recent_events(namespace=namespace, name="hostnet", reason="Unhealthy")
    assert not [e.message for e in unhealthy if "errored" in e.message]
