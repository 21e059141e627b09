"""Admission: privileged containers, host-port conflicts (the earlier pod wins), the pod limit."""

from __future__ import annotations

from pathlib import Path

from kubecore._agent.admission.admit import Admission
from kubecore._agent.admission.host_ports import host_ports
from kubecore._model.v1 import ContainerPort
from tests.agent.support import make_node
from tests.builders import ctr, make_pod


def web(name: str, port: int = 8080, **kw: object) -> object:
    return make_pod(name, ctr("app", ports=(ContainerPort(80, host_port=port, **kw),)))  # type: ignore[arg-type]


def test_the_later_pod_with_a_conflicting_host_port_is_rejected(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    node.kubelet.set_pods([web("first"), web("second"), web("third", 9090)])
    node.converge()
    assert node.running_names() == [("first", "app"), ("third", "app")]
    status = node.status("second")
    assert status.phase == "Failed"
    assert status.reason == "HostPortConflict"
    assert "8080" in status.message
    events = node.kubelet.views.recent_events(name="second", reason="HostPortConflict")
    assert len(events) == 1
    # listed, not dropped
    assert [p.metadata.name for p in node.kubelet.pods()] == ["first", "second", "third"]


def test_the_earlier_pod_keeps_winning_when_the_later_comes_first_in_a_list(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    node.kubelet.set_pods([web("first")])
    node.converge()
    node.kubelet.set_pods([web("second"), web("first")])
    node.converge()
    assert node.running_names() == [("first", "app")]
    assert node.status("second").phase == "Failed"


def test_no_conflict_across_protocols_or_host_ips() -> None:
    admission = Admission()
    pods = [
        web("tcp"),
        web("udp", protocol="UDP"),
        web("ip1", 7000, host_ip="10.0.0.1"),
        web("ip2", 7000, host_ip="10.0.0.2"),
        web("any", 7000),
    ]
    admitted, rejected = admission.admit(pods)  # type: ignore[arg-type]
    assert [p.metadata.name for p in admitted] == ["tcp", "udp", "ip1", "ip2"]
    assert [p.metadata.name for p, _ in rejected] == ["any"]


def test_host_network_ports_count() -> None:
    pod = make_pod("hn", ctr("app", ports=(ContainerPort(53, protocol="UDP"),)), host_network=True)
    assert host_ports(pod) == [("", 53, "UDP")]


def test_max_pods(tmp_path: Path) -> None:
    node = make_node(tmp_path, max_pods=2)
    node.kubelet.set_pods([make_pod("a"), make_pod("b"), make_pod("c")])
    node.converge()
    assert node.running_names() == [("a", "app"), ("b", "app")]
    assert node.status("c").phase == "Failed"
    assert node.status("c").reason == "OutOfpods"


def test_a_privileged_container_is_refused_by_its_rule_unless_allowed() -> None:
    from kubecore._agent.admission.security import PRIVILEGED_NOT_ALLOWED
    from kubecore._model.v1 import SecurityContext

    root = make_pod(
        "root",
        ctr("app"),
        init_containers=(ctr("setup", security_context=SecurityContext(privileged=True)),),
    )
    admitted, rejected = Admission().admit([root, make_pod("plain")])
    assert [p.metadata.name for p in admitted] == ["plain"]
    ((pod, rejection),) = rejected
    assert pod is root and rejection.reason == PRIVILEGED_NOT_ALLOWED
    assert "setup" in rejection.message and "privileged" in rejection.message
    admitted, rejected = Admission(allow_privileged=True).admit([root])
    assert admitted == [root] and not rejected
