"""The agent's rooms working together: worker-owned pod state under a storm of runtime events,
grace periods that only shorten, and probes that run off the sync path."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.labels import POD_UID_LABEL
from kubecore._contract.values import (
    ProbeOutcome,
    ProbeResult,
    ProbeTarget,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeState,
)
from kubecore._model.v1 import ExecAction, Lifecycle, LifecycleHandler, Pod, Probe
from kubecore._util.clock import SystemClock
from kubecore_fake import FakeHealthChecker, FakeRuntime
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod


def wait_for(condition: Callable[[], object], timeout: float = 10.0) -> float:
    """Poll ``condition`` (real time) until it holds; the seconds it took. Fails at the deadline."""
    start = time.monotonic()
    deadline = start + timeout
    event = threading.Event()
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout} s")
        event.wait(0.005)
    return time.monotonic() - start


class StreamRuntime(FakeRuntime):
    """A fake runtime whose event handlers a test can also call, as an engine's stream does."""

    handlers: list[Callable[[RuntimeEvent], None]]

    def watch_events(self, handler: Callable[[RuntimeEvent], None]):  # type: ignore[no-untyped-def]
        self.handlers = [*getattr(self, "handlers", []), handler]
        return super().watch_events(handler)


def looping_kubelet(tmp_path: Path, runtime: FakeRuntime, **kw: object) -> Kubelet:
    checker = kw.pop("health_checker", None) or FakeHealthChecker(runtime)
    config = KubeletConfig(
        root_dir=str(tmp_path / "root"),
        relist_interval=3600,
        resync_interval=7200,
        resolv_conf=str(tmp_path / "missing-resolv.conf"),
        **kw,  # type: ignore[arg-type]
    )
    return Kubelet(
        runtime,
        runtime,
        config=config,
        clock=runtime_clock(runtime),
        health_checker=checker,  # type: ignore[arg-type]
    )


def runtime_clock(runtime: FakeRuntime) -> SystemClock:
    clock = runtime.clock
    assert isinstance(clock, SystemClock)
    return clock


def running_of(runtime: FakeRuntime, uid: str) -> list[str]:
    return [
        c.id
        for c in runtime.find_containers(state=RuntimeState.RUNNING)
        if c.labels.get(POD_UID_LABEL) == uid
    ]


# --- pod state is changed by its worker only ------------------------------------------------


def test_a_storm_of_runtime_events_against_running_passes_loses_no_death(
    tmp_path: Path,
) -> None:
    runtime = StreamRuntime(clock=SystemClock())
    kubelet = looping_kubelet(tmp_path, runtime)
    pods = [make_pod(f"p{i}") for i in range(20)]
    kubelet.set_pods(pods)
    kubelet.start()
    try:
        assert kubelet.wait_idle(20)
        (handler,) = runtime.handlers
        containers = {pod.uid: running_of(runtime, pod.uid)[0] for pod in pods}
        victim = pods[7]
        stop = threading.Event()

        def storm() -> None:
            # Deaths reported for containers that still run (an engine repeating itself), while
            # the loop passes and the workers sync: only the workers change the pods' state.
            i = 0
            while not stop.is_set() or i < 5000:
                pod = pods[i % len(pods)]
                handler(
                    RuntimeEvent(
                        RuntimeEventType.DIED, containers[pod.uid], time.time(), pod_uid=pod.uid
                    )
                )
                i += 1

        thread = threading.Thread(target=storm)
        thread.start()
        try:
            runtime.crash(containers[victim.uid])  # a real death in the middle of the storm
            wait_for(lambda: running_of(runtime, victim.uid) not in ([], [containers[victim.uid]]))
        finally:
            stop.set()
            thread.join(30)
        assert not thread.is_alive()
        assert kubelet.wait_idle(20)
        for pod in pods:
            assert len(running_of(runtime, pod.uid)) == 1, pod.metadata.name
            status = kubelet.get_pod("default", pod.metadata.name)
            assert status is not None and status.status is not None
            assert status.status.phase == "Running"
        restarted = kubelet.get_pod("default", victim.metadata.name)
        assert restarted is not None and restarted.status is not None
        assert restarted.status.container_statuses[0].restart_count == 1
        # a death posted now, with the storm over, is acted on too (no lost wake-up)
        second = running_of(runtime, pods[3].uid)[0]
        runtime.crash(second)
        wait_for(lambda: running_of(runtime, pods[3].uid) not in ([], [second]))
    finally:
        kubelet.stop(10)


# --- a grace period only shortens ------------------------------------------------------------


def pre_stop_pod(grace: int) -> Pod:
    hook = LifecycleHandler(exec=ExecAction(("pre-hook",)))
    return make_pod(
        "web",
        ctr("app", lifecycle=Lifecycle(pre_stop=hook)),
        termination_grace_period_seconds=grace,
    )


def stop_timeouts(node: Node, container_id: str) -> list[float]:
    return [
        float(args[1])  # type: ignore[arg-type]
        for op, args in node.runtime.calls
        if op == "stop_container" and args[0] == container_id
    ]


def hook_timeouts(node: Node) -> list[float]:
    return [float(args[2]) for op, args in node.runtime.calls if op == "exec_sync"]  # type: ignore[arg-type]


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


def test_a_second_delete_with_a_shorter_grace_shortens_it_and_a_longer_one_does_not(
    node: Node,
) -> None:
    node.runtime.on_exec("pre-hook", 0)
    pod = pre_stop_pod(60)
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    node.runtime.fail_next("stop_container")  # the first kill does not get through
    node.kubelet.remove_pod(pod, grace_period=30)
    report = node.kubelet.sync()
    assert report.errors and node.running("web", "app")
    node.clock.advance(1)
    node.kubelet.remove_pod(pod, grace_period=4)  # 1 s later: ends at 5 s, not 30 s
    node.kubelet.remove_pod(pod, grace_period=100)  # never lengthens
    node.converge()
    assert not node.all("web")
    assert stop_timeouts(node, app.id) == [30, 4]
    assert hook_timeouts(node) == [30, 4]


def test_a_delete_during_a_long_pre_stop_hook_shortens_the_stop_that_follows(
    node: Node,
) -> None:
    pod = pre_stop_pod(60)
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    asked: list[float] = []

    def hook(request: object) -> int:
        # 20 s into the hook (its latency), a kill with a 3 s grace arrives
        asked.append(node.clock.monotonic())
        node.kubelet.remove_pod(pod, grace_period=3)
        return 0

    node.runtime.on_exec("pre-hook", hook)
    node.runtime.add_latency("exec_sync", 20)
    started = node.clock.monotonic()
    node.kubelet.remove_pod(pod)
    node.converge()
    assert asked == [started + 20]
    assert hook_timeouts(node) == [60]
    assert stop_timeouts(node, app.id) == [3]  # not the 40 s the spec's grace left
    assert not node.all("web")


def test_without_a_shorter_delete_the_spec_grace_applies(node: Node) -> None:
    node.runtime.on_exec("pre-hook", 0)
    pod = pre_stop_pod(20)
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    node.kubelet.remove_pod(pod, grace_period=45)  # longer than the spec's: the spec wins
    node.converge()
    assert stop_timeouts(node, app.id) == [20]


def test_a_negative_grace_period_is_refused(node: Node) -> None:
    with pytest.raises(ValueError, match="grace_period"):
        node.kubelet.remove_pod(make_pod("web"), grace_period=-1)


def test_in_the_loop_a_shorter_delete_during_a_hanging_pre_stop_stops_the_pod_now(
    tmp_path: Path,
) -> None:
    runtime = FakeRuntime(clock=SystemClock())
    kubelet = looping_kubelet(tmp_path, runtime)
    pod = pre_stop_pod(60)
    in_hook = threading.Event()
    released = threading.Event()

    def hook(request: object) -> int:
        in_hook.set()
        released.wait(30)  # a preStop hook that would hold the worker for its whole grace
        return 0

    runtime.on_exec("pre-hook", hook)
    kubelet.set_pods([pod])
    kubelet.start()
    try:
        wait_for(lambda: running_of(runtime, pod.uid))
        (app,) = running_of(runtime, pod.uid)
        kubelet.remove_pod(pod)
        assert in_hook.wait(10)
        kubelet.remove_pod(pod, grace_period=1)
        took = wait_for(lambda: not running_of(runtime, pod.uid), timeout=20)
        assert took < 10
        assert not released.is_set()  # stopped while its worker still waited on the hook
        stops = [args for op, args in runtime.calls if op == "stop_container" and args[0] == app]
        assert stops and float(stops[0][1]) <= 2  # type: ignore[arg-type]
    finally:
        released.set()
        kubelet.stop(10)


# --- probes run off the sync path ------------------------------------------------------------


class HangingChecker:
    """Answers like ``inner``, except the exec probe ``hang``: it holds its caller until
    released or its whole timeout has passed."""

    def __init__(self, inner: FakeHealthChecker) -> None:
        self.inner = inner
        self.hanging = threading.Event()
        self.release = threading.Event()

    def check(self, probe: Probe, target: ProbeTarget) -> ProbeResult:
        if probe.exec is not None and probe.exec.command[:1] == ("hang",):
            self.hanging.set()
            self.release.wait(probe.timeout_seconds)
            return ProbeResult(ProbeOutcome.FAILURE, "timed out")
        return self.inner.check(probe, target)


def test_a_probe_hanging_for_its_whole_timeout_delays_no_other_pods_restart(
    tmp_path: Path,
) -> None:
    runtime = FakeRuntime(clock=SystemClock())
    checker = HangingChecker(FakeHealthChecker(runtime))
    kubelet = looping_kubelet(tmp_path, runtime, health_checker=checker)
    slow = Probe(exec=ExecAction(("hang",)), timeout_seconds=30, period_seconds=1)
    a = make_pod("a", ctr("app", liveness_probe=slow))
    b = make_pod("b")
    kubelet.set_pods([a, b])
    kubelet.start()
    try:
        wait_for(lambda: running_of(runtime, a.uid) and running_of(runtime, b.uid))
        assert checker.hanging.wait(10)  # A's probe now holds a thread for 30 s
        (first,) = running_of(runtime, b.uid)
        runtime.crash(first)
        took = wait_for(lambda: running_of(runtime, b.uid) not in ([], [first]), timeout=29)
        assert took < 5, f"B's replacement took {took:.1f} s behind a hanging probe"
        assert not checker.release.is_set()  # the probe was still hanging all along
    finally:
        checker.release.set()
        kubelet.stop(10)
