"""``activeDeadlineSeconds`` on the agent's clock (virtual time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubecore._contract.observed import ObservedPod
from kubecore._planner.actions import PodHistory
from kubecore._planner.plan import compute_pod_actions
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod

MESSAGE = "Pod was active on the node longer than the specified deadline"


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


@pytest.mark.parametrize("policy", ["Always", "OnFailure", "Never"])
def test_a_pod_past_its_deadline_is_killed_and_fails(node: Node, policy: str) -> None:
    pod = make_pod(
        "web",
        ctr("app"),
        init_containers=(ctr("log", restart_policy="Always"),),
        active_deadline_seconds=30,
        restart_policy=policy,
    )
    node.kubelet.set_pods([pod])
    node.run_until(lambda: node.status().phase == "Running", step=1)
    started = node.clock.now()
    node.run_until(lambda: node.status().phase == "Failed", step=1, max_syncs=100)
    assert node.clock.now() - started <= 30
    status = node.status()
    assert (status.reason, status.message) == ("DeadlineExceeded", MESSAGE)
    assert not node.running("web")
    assert node.reasons("web").count("DeadlineExceeded") == 1
    for _ in range(5):  # never started again
        node.clock.advance(20)
        node.kubelet.sync()
    assert not node.running("web")
    assert len(node.all("web", "app")) == 1
    assert node.status().phase == "Failed"


def test_the_deadline_wakes_an_idle_agent(tmp_path: Path) -> None:
    node = make_node(tmp_path, relist_interval=300.0)
    pod = make_pod("web", ctr("app"), active_deadline_seconds=45)
    node.kubelet.set_pods([pod])
    node.converge()
    assert 0 < node.kubelet._loop.next_pass_in() <= 45


def test_a_pod_that_ended_before_its_deadline_keeps_its_phase(node: Node) -> None:
    pod = make_pod(
        "job",
        ctr("app", command=("sh", "-c", "sleep 5")),
        active_deadline_seconds=60,
        restart_policy="Never",
    )
    node.kubelet.set_pods([pod])
    node.run_until(lambda: node.status("job").phase == "Succeeded", step=2)
    for _ in range(40):
        node.clock.advance(5)
        node.kubelet.sync()
    status = node.status("job")
    assert (status.phase, status.reason) == ("Succeeded", "")


def test_the_planner_judges_the_deadline_from_the_active_time() -> None:
    pod = make_pod("web", ctr("app"), active_deadline_seconds=10)
    history = PodHistory(active_since=100.0)
    assert not compute_pod_actions(pod, ObservedPod(), history, 109.9).pod_failed
    actions = compute_pod_actions(pod, ObservedPod(), history, 110.0)
    assert actions.pod_failed and actions.terminal and not actions.create_sandbox
    assert actions.failure_reason == "DeadlineExceeded"
    assert not compute_pod_actions(pod, ObservedPod(), PodHistory(), 1e9).pod_failed
