"""A resync of a pod whose inputs are those of its last no-op sync (the same pod object, the same
observed objects, an empty record) is not planned again; anything else in its history is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubecore._planner.actions import BackoffEntry
from kubecore._planner.plan import compute_pod_actions
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


def _planned(node: Node, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The UIDs of the pods the planner is asked about from now on."""
    planned: list[str] = []

    def counting(pod: Any, *args: Any) -> Any:
        planned.append(pod.uid)
        return compute_pod_actions(pod, *args)

    monkeypatch.setattr("kubecore._agent.pod_workers.room.compute_pod_actions", counting)
    return planned


def _resync(node: Node) -> int:
    node.clock.advance(node.kubelet.config.resync_interval)
    return node.kubelet.sync().synced


def test_a_steady_pod_is_synced_at_a_resync_without_being_planned_again(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    pod = make_pod("web", ctr("app"))
    node.kubelet.set_pods([pod])
    node.run_until(lambda: node.status().phase == "Running", step=1)
    _resync(node)
    _resync(node)  # the first may still publish: the second is a repeat
    planned = _planned(node, monkeypatch)
    status = node.status()
    assert _resync(node) == 1
    assert planned == []
    assert node.status() == status
    assert len(node.running("web")) == 1


def test_a_pod_with_a_back_off_in_its_record_is_planned_again(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    pod = make_pod("web", ctr("app"))
    node.kubelet.set_pods([pod])
    node.run_until(lambda: node.status().phase == "Running", step=1)
    _resync(node)
    _resync(node)
    state = node.kubelet._rooms.desired.states[pod.uid]
    state.record.crash_backoff["app"] = BackoffEntry(delay=10.0, until=0.0, last_failure=0.0)
    planned = _planned(node, monkeypatch)
    assert _resync(node) == 1
    assert planned == [pod.uid]


def test_a_changed_pod_is_planned_again(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    pod = make_pod("web", ctr("app"))
    node.kubelet.set_pods([pod])
    node.run_until(lambda: node.status().phase == "Running", step=1)
    _resync(node)
    _resync(node)
    planned = _planned(node, monkeypatch)
    node.kubelet.set_pods([make_pod("web", ctr("app"), active_deadline_seconds=3600)])
    _resync(node)
    assert pod.uid in planned
