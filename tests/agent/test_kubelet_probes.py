"""Probes: liveness restarts, readiness drives Ready, startup holds the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubecore._model.v1 import ExecAction, HTTPGetAction, Probe, TCPSocketAction
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod

HTTP = HTTPGetAction(port=8080, path="/healthz")


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


def condition(node: Node, kind: str, pod: str = "web") -> str:
    return {c.type: c.status for c in node.status(pod).conditions}.get(kind, "")


def checks_of(node: Node, kind: str) -> int:
    return sum(1 for _, k, _ in node.checker.checks if k == kind)


def test_failed_liveness_restarts_the_container(node: Node) -> None:
    probe = Probe(http_get=HTTP, period_seconds=10, failure_threshold=3)
    node.kubelet.set_pods([make_pod("web", ctr("app", liveness_probe=probe))])
    node.converge()
    (first,) = node.running("web", "app")
    node.checker.set_probe("app", "http", False)
    node.run_until(lambda: node.running("web", "app")[0].id != first.id, max_syncs=60)
    # three failures ten seconds apart: about twenty seconds
    assert node.clock.monotonic() >= 20
    assert node.kubelet.views.recent_events(name="web", reason="Unhealthy")
    killing = node.kubelet.views.recent_events(name="web", reason="Killing")
    assert any("liveness" in e.message for e in killing)
    node.checker.set_probe("app", "http", True)
    node.kubelet.sync()
    assert node.status("web").container_statuses[0].restart_count == 1


def test_liveness_waits_for_the_initial_delay(node: Node) -> None:
    probe = Probe(http_get=HTTP, initial_delay_seconds=30, period_seconds=5)
    node.kubelet.set_pods([make_pod("web", ctr("app", liveness_probe=probe))])
    for _ in range(29):
        node.kubelet.sync()
        node.clock.advance(1)
    assert checks_of(node, "http") == 0
    node.clock.advance(2)
    node.kubelet.sync()
    assert checks_of(node, "http") == 1


def test_readiness_drives_ready_and_never_restarts(node: Node) -> None:
    probe = Probe(tcp_socket=TCPSocketAction(port=8080), period_seconds=5, failure_threshold=1)
    node.kubelet.set_pods([make_pod("web", ctr("app", readiness_probe=probe))])
    node.checker.set_probe("app", "tcp", False)
    node.converge()
    (app,) = node.running("web", "app")
    node.run_until(lambda: checks_of(node, "tcp") >= 3, step=5)
    assert condition(node, "Ready") == "False"
    assert not node.status("web").container_statuses[0].ready
    node.checker.set_probe("app", "tcp", True)
    node.run_until(lambda: condition(node, "Ready") == "True", step=5)
    assert node.status("web").container_statuses[0].ready
    assert condition(node, "ContainersReady") == "True"
    node.checker.set_probe("app", "tcp", False)
    node.run_until(lambda: condition(node, "Ready") == "False", step=5)
    assert node.running("web", "app")[0].id == app.id  # never restarted


def test_startup_probe_holds_liveness_and_readiness(node: Node) -> None:
    startup = Probe(exec=ExecAction(("check-started",)), period_seconds=5, failure_threshold=30)
    liveness = Probe(http_get=HTTP, period_seconds=5)
    node.kubelet.set_pods(
        [make_pod("web", ctr("app", startup_probe=startup, liveness_probe=liveness))]
    )
    node.runtime.on_exec("check-started", 1)
    for _ in range(20):
        node.kubelet.sync()
        node.clock.advance(1)
    assert checks_of(node, "exec") >= 3
    assert checks_of(node, "http") == 0
    assert not node.status("web").container_statuses[0].started
    node.runtime.on_exec("check-started", 0)
    node.run_until(lambda: checks_of(node, "http") > 0, step=5)
    assert node.status("web").container_statuses[0].started
    before = checks_of(node, "exec")
    node.run_until(lambda: checks_of(node, "http") > 3, step=5)
    assert checks_of(node, "exec") == before  # a passed startup probe stops


def test_failed_startup_probe_restarts_the_container(node: Node) -> None:
    startup = Probe(exec=ExecAction(("check-started",)), period_seconds=5, failure_threshold=2)
    node.kubelet.set_pods([make_pod("web", ctr("app", startup_probe=startup))])
    node.runtime.on_exec("check-started", 1)
    node.converge()
    (first,) = node.running("web", "app")
    node.run_until(lambda: node.running("web", "app")[0].id != first.id, step=5)


def test_probe_results_are_counted_in_metrics(node: Node) -> None:
    probe = Probe(http_get=HTTP, period_seconds=1)
    node.kubelet.set_pods([make_pod("web", ctr("app", readiness_probe=probe))])
    node.run_until(lambda: checks_of(node, "http") >= 2)
    labels = {
        "container": "app",
        "pod": "web",
        "namespace": "default",
        "pod_uid": "uid-default-web",
    }
    value = node.kubelet.metrics.value(
        "prober_probe_total", {"probe_type": "Readiness", "result": "successful", **labels}
    )
    assert value is not None and value >= 2
    del labels["pod_uid"]
    timed = {"probe_type": "Readiness", **labels}
    assert node.kubelet.metrics.value("prober_probe_duration_seconds_count", timed) == value
    node.kubelet.set_pods([])
    node.converge()
    assert node.kubelet.metrics.value("prober_probe_duration_seconds_count", timed) is None
