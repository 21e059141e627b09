"""The containers of a pod are stopped at once (as the kubelet does), the sandbox after them:
a pod of TERM-ignoring containers takes about its grace period to go, not one grace period (or
the 2 s floor) per container. On the in-memory runtime."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.labels import POD_NAME_LABEL
from kubecore._contract.values import RuntimeState
from kubecore._model.v1 import Container, Pod
from kubecore._util.clock import ManualClock, SystemClock
from kubecore_fake import FakeHealthChecker, FakeRuntime
from tests.agent.support import new_kubelet
from tests.builders import ctr, make_pod

IGNORES_TERM = ("sleep", "3600")
"""A program the in-memory runtime runs until it is killed: TERM does nothing to it."""


class StopsMeet(FakeRuntime):
    """Each stop of a running container of pod ``big`` (of those named ``meeting``, when given)
    waits (real time, bounded) until ``parties`` such stops are under way: stops made one after
    the other break the barrier. ``order`` lists the stops as they pass it, and the sandbox's."""

    def __init__(
        self, clock: ManualClock, parties: int, meeting: frozenset[str] | None = None
    ) -> None:
        super().__init__(clock=clock)
        self.barrier = threading.Barrier(parties, timeout=2.0)
        self.meeting = meeting
        self.order: list[str] = []
        self._order_lock = threading.Lock()

    def stop_container(self, container_id: str, timeout: float) -> None:
        rec = self.container_status(container_id)
        if rec.labels.get(POD_NAME_LABEL) == "big" and rec.state is RuntimeState.RUNNING:
            if self.meeting is None or rec.name in self.meeting:
                self.barrier.wait()
            with self._order_lock:
                self.order.append(rec.name)
        super().stop_container(container_id, timeout)

    def stop_sandbox(self, sandbox_id: str) -> None:
        with self._order_lock:
            self.order.append("POD")
        super().stop_sandbox(sandbox_id)

    def stop_timeouts(self) -> list[float]:
        return [
            float(args[1])  # type: ignore[arg-type]
            for op, args in self.calls
            if op == "stop_container"
        ]


def big_pod(n: int, grace: int = 5, **spec: object) -> Pod:
    containers = [ctr(f"c{i}", command=IGNORES_TERM) for i in range(n)]
    return make_pod("big", *containers, termination_grace_period_seconds=grace, **spec)


def node(tmp_path: Path, runtime: FakeRuntime, clock: ManualClock) -> Kubelet:
    (tmp_path / "resolv.conf").write_text("nameserver 192.0.2.53\n")
    return new_kubelet(runtime, clock, FakeHealthChecker(runtime), tmp_path)


def test_a_deleted_pods_containers_are_stopped_at_once_each_with_the_whole_grace(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    runtime = StopsMeet(clock, parties=10)
    kubelet = node(tmp_path, runtime, clock)
    kubelet.set_pods([big_pod(10, grace=5)])
    assert kubelet.sync_until_converged()
    running = runtime.find_containers(pod_name="big", state=RuntimeState.RUNNING)
    assert len(running) == 10
    kubelet.set_pods([])
    report = kubelet.sync()
    assert not report.errors, report.errors
    # One after the other, each stop after the first got what was left: the 2 s floor.
    assert runtime.stop_timeouts() == [5.0] * 10
    assert kubelet._rooms.events.reasons(name="big").count("Killing") == 10
    assert runtime.order[-1] == "POD"  # the sandbox after its containers
    assert runtime.find_containers(pod_name="big") == []


def test_a_pod_the_agent_never_knew_is_stopped_at_once(tmp_path: Path) -> None:
    clock = ManualClock()
    runtime = StopsMeet(clock, parties=4)
    kubelet = node(tmp_path, runtime, clock)
    kubelet.set_pods([big_pod(4, grace=7)])
    assert kubelet.sync_until_converged()
    # A restarted agent that no longer wants it: the grace comes from the containers' labels.
    kubelet.close()
    kubelet = new_kubelet(runtime, clock, FakeHealthChecker(runtime), tmp_path)
    kubelet.set_pods([])
    report = kubelet.sync()
    assert not report.errors, report.errors
    assert runtime.stop_timeouts() == [7.0] * 4
    assert runtime.find_containers(pod_name="big") == []


def test_sidecars_stop_after_the_app_containers_the_last_started_first(tmp_path: Path) -> None:
    clock = ManualClock()
    apps = frozenset({"app0", "app1", "app2"})
    runtime = StopsMeet(clock, parties=3, meeting=apps)
    sidecars = tuple(
        Container(name=name, image="busybox:1.36", command=("server",), restart_policy="Always")
        for name in ("log-shipper", "proxy")
    )
    pod = make_pod(
        "big",
        *(ctr(name, command=IGNORES_TERM) for name in sorted(apps)),
        init_containers=sidecars,
        termination_grace_period_seconds=5,
    )
    kubelet = node(tmp_path, runtime, clock)
    kubelet.set_pods([pod])
    assert kubelet.sync_until_converged()
    kubelet.set_pods([])
    report = kubelet.sync()
    assert not report.errors, report.errors
    assert sorted(runtime.order[:3]) == sorted(apps)
    assert runtime.order[3:] == ["proxy", "log-shipper", "POD"]


def test_in_real_time_ten_term_ignoring_containers_go_in_about_the_grace_period(
    tmp_path: Path,
) -> None:
    clock = SystemClock()
    runtime = FakeRuntime(clock=clock)
    kubelet = Kubelet(
        runtime,
        runtime,
        config=KubeletConfig(
            root_dir=str(tmp_path / "root"), resolv_conf=str(tmp_path / "missing.conf")
        ),
        clock=clock,
        health_checker=FakeHealthChecker(runtime),
    )
    kubelet.set_pods([big_pod(10, grace=2)])
    assert kubelet.sync_until_converged(step=0.01)
    kubelet.set_pods([])
    started = time.monotonic()
    report = kubelet.sync()
    took = time.monotonic() - started
    assert not report.errors, report.errors
    assert runtime.find_containers(pod_name="big") == []
    # one after the other: 2 s + 9 x 2 s (the floor) = 20 s
    assert took < 4.0, f"10 containers with a 2 s grace took {took:.1f}s"
    assert took >= 1.9


def test_a_stop_that_fails_does_not_keep_the_others_from_stopping(tmp_path: Path) -> None:
    clock = ManualClock()
    runtime = FakeRuntime(clock=clock)
    kubelet = node(tmp_path, runtime, clock)
    kubelet.set_pods([big_pod(4, grace=5)])
    assert kubelet.sync_until_converged()
    runtime.fail_next("stop_container", 1)
    kubelet.set_pods([])
    report = kubelet.sync()
    assert "injected failure in stop_container" in str(report.errors)
    running = runtime.find_containers(pod_name="big", state=RuntimeState.RUNNING)
    assert len(running) == 1  # the other three were stopped
    assert kubelet.sync_until_converged()
    assert runtime.find_containers(pod_name="big") == []
