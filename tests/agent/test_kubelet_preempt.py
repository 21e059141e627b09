"""A newer desired state preempts a running sync: a pod deleted while its many containers start
stops starting them at the next step and ends killed. On the in-memory runtime, with the loop."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from kubecore._agent.kubelet import Kubelet
from kubecore._contract.labels import POD_NAME_LABEL
from kubecore._model.v1 import Pod
from kubecore._util.clock import ManualClock
from kubecore_fake import FakeHealthChecker, FakeRuntime
from tests.agent.support import new_kubelet
from tests.builders import ctr, make_pod


def until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


class DeletingDuringStarts(FakeRuntime):
    """Deletes the pod (through ``on_start``) when its ``after``-th container has started, and
    waits there, as a slow engine would, until the agent's loop has seen the delete."""

    def __init__(self, clock: ManualClock, after: int) -> None:
        super().__init__(clock=clock)
        self.after = after
        self.starts: list[str] = []
        self.on_start: Callable[[], None] = lambda: None
        self.deleted_at: int | None = None

    def start_container(self, container_id: str) -> None:
        super().start_container(container_id)
        rec = self.container_status(container_id)
        if rec.labels.get(POD_NAME_LABEL) != "big" or rec.name == "POD":
            return
        self.starts.append(rec.name)
        if len(self.starts) == self.after:
            self.deleted_at = len(self.starts)
            self.on_start()


def big_pod(n: int) -> Pod:
    return make_pod("big", *(ctr(f"c{i:03d}") for i in range(n)))


def agent(tmp_path: Path, runtime: FakeRuntime, clock: ManualClock) -> Kubelet:
    (tmp_path / "resolv.conf").write_text("nameserver 192.0.2.53\n")
    return new_kubelet(
        runtime, clock, FakeHealthChecker(runtime), tmp_path, relist_interval=3600,
        resync_interval=7200,
    )  # fmt: skip


def test_deleting_a_pod_stops_its_sync_between_container_starts(tmp_path: Path) -> None:
    clock = ManualClock()
    runtime = DeletingDuringStarts(clock, after=5)
    kubelet = agent(tmp_path, runtime, clock)
    pod = big_pod(60)

    def delete() -> None:
        kubelet.remove_pod(pod)
        until(
            lambda: pod.uid not in kubelet._rooms.desired.states, what="the loop to see the delete"
        )

    runtime.on_start = delete
    kubelet.set_pods([pod])
    kubelet.start()
    try:
        assert kubelet.wait_idle(20)
    finally:
        kubelet.stop(5)
    assert runtime.deleted_at == 5
    assert len(runtime.starts) - runtime.deleted_at <= 1, len(runtime.starts)
    assert runtime.find_containers(pod_name="big") == []  # killed and removed
    assert "Killing" in kubelet._rooms.events.reasons(name="big")


def test_a_sync_that_is_still_wanted_is_not_preempted(tmp_path: Path) -> None:
    clock = ManualClock()
    runtime = DeletingDuringStarts(clock, after=5)
    kubelet = agent(tmp_path, runtime, clock)
    other = make_pod("other")
    pod = big_pod(20)

    def another_pod_changes() -> None:
        kubelet.set_pods([pod])  # "other" goes; "big" stays desired
        until(lambda: other.uid not in kubelet._rooms.desired.states, what="the loop to see it")

    runtime.on_start = another_pod_changes
    kubelet.set_pods([pod, other])
    kubelet.start()
    try:
        assert kubelet.wait_idle(20)
    finally:
        kubelet.stop(5)
    assert len(runtime.starts) == 20
    assert runtime.find_containers(pod_name="other") == []
