"""An instance an interrupted start left (created, never started) that the runtime will not
remove, because it may still be starting it (containerd after an agent was killed mid-start:
"container is in starting state, can't be removed"): no second instance is made beside it; the
next relist sees it again, and it is adopted once it runs. On the fake runtime, in virtual time."""

from __future__ import annotations

from pathlib import Path

from kubecore._contract.errors import ContainerRuntimeError, RuntimeUnavailable
from kubecore._contract.values import RuntimeState
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod

STARTING = "RemoveContainer: container is in starting state, can't be removed"


def interrupted(tmp_path: Path) -> tuple[Node, str]:
    """A node whose pod's container was created and its start cut off (left ``created``)."""
    node = make_node(tmp_path)
    node.kubelet.set_pods([make_pod("web", ctr("app"))])
    node.runtime.fail_next("start_container", 1, RuntimeUnavailable("the agent went away"))
    node.kubelet.sync()
    (left,) = node.all(pod="web")
    assert left.state is RuntimeState.CREATED
    return node, left.id


def test_an_instance_still_starting_is_waited_for_then_adopted(tmp_path: Path) -> None:
    node, left = interrupted(tmp_path)
    node.runtime.fail_next("remove_container", 1, ContainerRuntimeError(STARTING))
    created = node.runtime.call_count("create_container")

    node.clock.advance(1)
    node.kubelet.sync()  # the replacement meets the instance being started: it waits
    assert [c.id for c in node.all(pod="web")] == [left]
    assert node.runtime.call_count("create_container") == created
    waiting = node.status().container_statuses[0].state.waiting
    assert waiting is not None and waiting.reason == "ContainerCreating"

    node.runtime.start_container(left)  # the runtime's start of it ends: it runs
    node.clock.advance(1)
    node.converge()
    (only,) = node.all(pod="web")
    assert only.id == left and only.state is RuntimeState.RUNNING
    assert node.runtime.call_count("create_container") == created
    status = node.status().container_statuses[0]
    assert status.restart_count == 0 and status.state.running is not None


def test_an_instance_removed_once_it_can_be_is_replaced_once(tmp_path: Path) -> None:
    node, left = interrupted(tmp_path)
    node.runtime.fail_next("remove_container", 2, ContainerRuntimeError(STARTING))
    for _ in range(2):  # still starting at two relists: nothing new is made
        node.clock.advance(1)
        node.kubelet.sync()
        assert [c.id for c in node.all(pod="web")] == [left]
    node.clock.advance(1)
    node.converge()  # then the runtime lets it go: one new instance, not counted a restart
    (only,) = node.all(pod="web")
    assert only.id != left and only.state is RuntimeState.RUNNING
    assert node.status().container_statuses[0].restart_count == 0
