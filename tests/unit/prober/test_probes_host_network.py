"""Probes of host-network pods go to the node's IP; a probe that cannot run is a Warning event.

On Docker a host-network sandbox has no address of its own; the in-memory runtime is made to
behave the same (``node_ip=""``) so that only the agent's choice of address is under test.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.values import ProbeOutcome, ProbeResult
from kubecore._model.v1 import Probe, TCPSocketAction
from kubecore._prober.health import DefaultHealthChecker
from kubecore._prober.runner import probe_ip
from kubecore._util.clock import ManualClock
from kubecore._util.host import detect_host_ip
from kubecore_fake import FakeRuntime
from tests.agent.support import make_node
from tests.builders import ctr, make_pod


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port listening on the loopback address (the probe's target)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield int(sock.getsockname()[1])


def ready(kubelet: Kubelet) -> bool:
    pod = kubelet.get_pod("default", "web")
    assert pod is not None and pod.status is not None
    statuses = pod.status.container_statuses
    return bool(statuses) and statuses[0].ready


def host_network_node(tmp_path: Path, host_ip: str) -> tuple[Kubelet, ManualClock]:
    clock = ManualClock()
    runtime = FakeRuntime(clock=clock, node_ip="")  # as on Docker: no sandbox address
    (tmp_path / "resolv.conf").write_text("nameserver 192.0.2.53\n")
    config = KubeletConfig(
        root_dir=str(tmp_path / "root"),
        resolv_conf=str(tmp_path / "resolv.conf"),
        host_ip=host_ip,
        allow_privileged=True,  # hostNetwork is a host namespace
    )
    kubelet = Kubelet(
        runtime, runtime, config=config, health_checker=DefaultHealthChecker(runtime), clock=clock
    )
    return kubelet, clock


def test_a_host_network_pod_without_a_probe_host_is_probed_at_the_nodes_ip(
    tmp_path: Path, listener: int
) -> None:
    kubelet, clock = host_network_node(tmp_path, "127.0.0.1")
    probe = Probe(tcp_socket=TCPSocketAction(port=listener), period_seconds=1)
    kubelet.set_pods([make_pod("web", ctr("app", readiness_probe=probe), host_network=True)])
    for _ in range(10):
        kubelet.sync()
        if ready(kubelet):
            break
        clock.advance(1)
    assert ready(kubelet), kubelet.views.recent_events(name="web")
    assert not kubelet.views.recent_events(name="web", reason="Unhealthy")


def test_the_probe_address_of_a_host_network_pod_is_the_nodes() -> None:
    plain = make_pod("web")
    host = make_pod("web", host_network=True)
    assert probe_ip(plain, "10.88.0.7", lambda: "192.0.2.2") == "10.88.0.7"
    assert probe_ip(host, "", lambda: "192.0.2.2") == "192.0.2.2"
    assert probe_ip(host, "", lambda: "") == ""


def test_the_detected_node_ip_is_an_address_of_the_host() -> None:
    address = detect_host_ip()
    socket.inet_aton(address)  # an IPv4 address
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))  # one of this host's own


def test_a_probe_that_cannot_run_is_a_warning_event(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    probe = Probe(tcp_socket=TCPSocketAction(port=8080), period_seconds=5)
    node.checker.set_probe(
        "app", "tcp", ProbeResult(ProbeOutcome.UNKNOWN, "the probe names no host and no IP")
    )
    node.kubelet.set_pods([make_pod("web", ctr("app", readiness_probe=probe))])
    node.run_until(lambda: bool(node.kubelet.views.recent_events(name="web", reason="Unhealthy")))
    (event,) = node.kubelet.views.recent_events(name="web", reason="Unhealthy")[:1]
    assert event.type.value == "Warning"
    assert event.message == "Readiness probe errored: the probe names no host and no IP"
    assert not ready(node.kubelet)
