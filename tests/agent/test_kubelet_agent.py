"""The agent around the planner: background loop, runtime events, metrics, logs, exec, stats."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubecore import Operation, PodUpdate
from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.errors import ContainerNotFound, NotFound
from kubecore._contract.values import Event, EventType, ObjectReference, RuntimeState
from kubecore._observability.events import FanoutRecorder, MemoryRecorder
from kubecore._plugins.registry import RuntimeBundle
from kubecore_fake import FakeRuntime
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


@pytest.fixture
def looping(tmp_path: Path) -> Iterator[Node]:
    # relist once an hour: only runtime events and updates can make the loop pass
    node = make_node(tmp_path, relist_interval=3600, resync_interval=7200)
    node.kubelet.set_pods([make_pod("web")])
    node.kubelet.start()
    try:
        assert node.kubelet.wait_idle(10)
        yield node
    finally:
        node.kubelet.stop(5)


def test_the_loop_converges_and_stop_leaves_containers_running(looping: Node) -> None:
    assert looping.running_names() == [("web", "app")]
    assert looping.kubelet.running
    looping.kubelet.stop(5)
    assert not looping.kubelet.running
    assert looping.running_names() == [("web", "app")]


def test_a_died_event_wakes_the_pod_at_once(looping: Node) -> None:
    (first,) = looping.running("web", "app")
    looping.runtime.crash(first.id)
    assert looping.kubelet.wait_idle(10)
    (second,) = looping.running("web", "app")
    assert second.id != first.id


def test_updates_wake_the_loop(looping: Node) -> None:
    looping.kubelet.update(PodUpdate(Operation.ADD, (make_pod("db"),), "api"))
    assert looping.kubelet.wait_idle(10)
    assert looping.running_names() == [("db", "app"), ("web", "app")]
    looping.kubelet.set_pods([make_pod("db")])
    assert looping.kubelet.wait_idle(10)
    assert looping.running_names() == [("db", "app")]


def test_metrics_count_runtime_operations_and_pods(node: Node) -> None:
    node.runtime.fail_next("create_container", 1)
    node.kubelet.set_pods([make_pod("web", ctr("a"), ctr("b"))])
    node.converge()
    m = node.kubelet.metrics
    assert m.value("kubelet_runtime_operations_total", {"operation_type": "snapshot"}) >= 2
    assert (
        m.value("kubelet_runtime_operations_errors_total", {"operation_type": "create_container"})
        == 1
    )
    assert m.value("kubelet_runtime_operations_total", {"operation_type": "run_podsandbox"}) == 1
    assert m.value("kubelet_running_pods") == 1
    assert m.value("kubelet_running_containers", {"container_state": "running"}) == 2
    assert m.value("kubelet_pod_start_duration_seconds_count") == 1
    assert m.value("kubelet_pod_start_sli_duration_seconds_count") == 1
    assert m.value("kubelet_pod_worker_start_duration_seconds_count") == 1
    assert m.value("kubelet_started_pods_total") == 1
    assert m.value("kubelet_started_containers_total", {"container_type": "container"}) == 3
    assert (
        m.value(
            "kubelet_started_containers_errors_total",
            {"container_type": "container", "code": "CreateContainerError"},
        )
        == 1
    )
    assert m.value("kubelet_node_name", {"node": "kubecore-node"}) == 1
    assert m.value("kubelet_desired_pods", {"static": "false"}) == 1
    assert m.value("kubelet_active_pods", {"static": "false"}) == 1
    assert m.value("kubelet_pleg_relist_duration_seconds_count") >= 2
    assert m.value("kubelet_pleg_last_seen_seconds") == node.clock.now()
    assert m.value("kubecore_sync_duration_seconds_count") >= 2
    assert b"kubelet_runtime_operations_total" in m.render()


def test_two_agents_have_separate_metrics(tmp_path: Path) -> None:
    a = make_node(tmp_path / "a")
    b = make_node(tmp_path / "b")
    a.kubelet.set_pods([make_pod("web")])
    a.converge()
    assert a.kubelet.metrics.value("kubelet_running_pods") == 1
    assert b.kubelet.metrics.value("kubelet_running_pods") in (None, 0)


def test_logs_and_exec(node: Node) -> None:
    node.kubelet.set_pods([make_pod("web")])
    node.converge()
    (app,) = node.running("web", "app")
    node.runtime.write_log(app.id, "hello\nworld")
    assert b"".join(node.kubelet.streams.logs("default", "web", "app")) == b"hello\nworld\n"
    assert list(node.kubelet.streams.logs("default", "web", "app", tail=1)) == [b"world\n"]
    node.runtime.on_exec("whoami", lambda request: 0)
    assert node.kubelet.streams.exec("default", "web", "app", ["whoami"]).exit_code == 0
    with pytest.raises(NotFound):
        node.kubelet.streams.exec("default", "nope", "app", ["true"])
    with pytest.raises(ContainerNotFound):
        list(node.kubelet.streams.logs("default", "web", "nope"))


def test_stats_summary_shape(node: Node) -> None:
    node.kubelet.set_pods([make_pod("web", ctr("a"), ctr("b"))])
    node.converge()
    summary = node.kubelet.views.stats_summary()
    assert summary["node"]["nodeName"] == "kubecore-node"
    (pod,) = summary["pods"]
    assert pod["podRef"] == {"name": "web", "namespace": "default", "uid": "uid-default-web"}
    assert sorted(c["name"] for c in pod["containers"]) == ["a", "b"]
    assert all(c["memory"]["workingSetBytes"] is not None for c in pod["containers"])
    # The node's figures are the host's (/proc), not the sum of the pods'.
    assert summary["node"]["memory"]["workingSetBytes"] > pod["memory"]["workingSetBytes"]
    assert pod["memory"]["workingSetBytes"] == sum(
        c["memory"]["workingSetBytes"] for c in pod["containers"]
    )


def test_healthz(node: Node) -> None:
    assert node.kubelet.views.healthz() == (True, "ok")
    node.runtime.fail_next("version", 1)
    ok, reason = node.kubelet.views.healthz()
    assert not ok and "runtime" in reason


def test_from_bundle_and_extra_recorder(tmp_path: Path) -> None:
    runtime = FakeRuntime()
    mine = MemoryRecorder(max_size=3)
    kubelet = Kubelet.from_bundle(
        RuntimeBundle(runtime, runtime, name="fake"),
        config=KubeletConfig(root_dir=str(tmp_path)),
        recorder=mine,
    )
    kubelet.set_pods([make_pod("web")])
    assert kubelet.sync_until_converged(step=0.0)
    assert len(mine) == 3  # a ring: only the newest three
    assert mine.events()[-1].reason == "Started"


def test_memory_recorder_ring_and_fanout() -> None:
    ring = MemoryRecorder(max_size=2)
    broken = MemoryRecorder()
    broken.record = None  # type: ignore[assignment,method-assign]
    fan = FanoutRecorder([broken, ring])
    ref = ObjectReference("Pod", "default", "web")
    for i in range(3):
        fan.record(Event(ref, EventType.NORMAL, f"R{i}", "m", float(i)))
    assert [e.reason for e in ring.events()] == ["R1", "R2"]
    assert ring.reasons(name="web") == ["R1", "R2"]


def test_sync_report(node: Node) -> None:
    node.kubelet.set_pods([make_pod("web")])
    report = node.kubelet.sync()
    assert not report.converged
    assert "default/web" in report.actions
    assert report.pods == 1 and report.synced == 1
    node.kubelet.sync()
    assert node.kubelet.sync().converged


def test_container_states_in_gauges(node: Node) -> None:
    node.kubelet.set_pods([make_pod("job", ctr("app"), restart_policy="Never")])
    node.converge()
    (app,) = node.running("job", "app")
    node.runtime.exit(app.id, 0)
    node.converge()
    assert (
        node.kubelet.metrics.value("kubelet_running_containers", {"container_state": "exited"}) == 1
    )
    assert [c.state for c in node.all("job")] == [RuntimeState.EXITED]


def test_the_loop_restarts_a_crash_looping_container_when_its_back_off_ends(
    tmp_path: Path,
) -> None:
    # Real time, a relist once an hour and short back-offs: only the end of each back-off can
    # bring the restarts (the deaths' own events arrive while the back-off still holds).
    from kubecore._util.clock import SystemClock
    from kubecore_fake import FakeHealthChecker

    clock = SystemClock()
    runtime = FakeRuntime(clock=clock)
    config = KubeletConfig(
        root_dir=str(tmp_path),
        relist_interval=3600,
        resync_interval=7200,
        backoff_initial=0.1,
        backoff_max=0.1,
        resolv_conf=str(tmp_path / "missing-resolv.conf"),
    )
    kubelet = Kubelet(
        runtime, runtime, config=config, clock=clock, health_checker=FakeHealthChecker(runtime)
    )
    kubelet.set_pods([make_pod("web", ctr("app", command=("sh", "-c", "exit 1")))])
    kubelet.start()
    try:
        deadline = clock.monotonic() + 10
        while runtime.call_count("start_container") < 5 and clock.monotonic() < deadline:
            clock.sleep(0.05)
    finally:
        kubelet.stop(5)
    assert runtime.call_count("start_container") >= 5


def test_a_death_the_engine_has_not_listed_yet_is_checked_again(tmp_path: Path) -> None:
    # Docker may list a container as running for a moment after its die event: the first pass
    # after the event sees it alive, and only a prompt second look restarts it.
    from kubecore._contract.values import RuntimeSnapshot
    from kubecore._util.clock import SystemClock
    from kubecore_fake import FakeHealthChecker

    class LaggingRuntime(FakeRuntime):
        stale: RuntimeSnapshot | None = None

        def snapshot(self) -> RuntimeSnapshot:
            stale, self.stale = self.stale, None
            return stale if stale is not None else super().snapshot()

    clock = SystemClock()
    runtime = LaggingRuntime(clock=clock)
    config = KubeletConfig(
        root_dir=str(tmp_path),
        relist_interval=3600,
        resync_interval=7200,
        resolv_conf=str(tmp_path / "missing-resolv.conf"),
    )
    kubelet = Kubelet(
        runtime, runtime, config=config, clock=clock, health_checker=FakeHealthChecker(runtime)
    )
    kubelet.set_pods([make_pod("web")])
    kubelet.start()
    try:
        assert kubelet.wait_idle(10)
        (first,) = runtime.find_containers("app", state=RuntimeState.RUNNING)
        runtime.stale = runtime.snapshot()
        runtime.crash(first.id)
        deadline = clock.monotonic() + 5
        while clock.monotonic() < deadline:
            running = runtime.find_containers("app", state=RuntimeState.RUNNING)
            if running and running[0].id != first.id:
                break
            clock.sleep(0.02)
    finally:
        kubelet.stop(5)
    (second,) = runtime.find_containers("app", state=RuntimeState.RUNNING)
    assert second.id != first.id
