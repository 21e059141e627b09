"""One clock: timers at their own deadlines, capabilities declared by the clock, never its type."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore import Kubelet, KubeletConfig, Operation, PluginError, PodUpdate, load_runtime
from kubecore._contract.labels import MANAGED_LABEL, POD_UID_LABEL
from kubecore._util.clock import Clock, TimerHandle, missing_clock_members
from kubecore.runtime import (
    ContainerConfig,
    RuntimeBundle,
    RuntimeEventType,
    RuntimeState,
    SandboxConfig,
    SystemClock,
)
from kubecore.testing import ManualClock
from kubecore_fake import FakeRuntime
from tests.builders import ctr, make_pod

IMAGE = "busybox:1.36"


def recorder(clock: Clock, seen: list[tuple[str, float]], name: str) -> Callable[[], None]:
    return lambda: seen.append((name, clock.monotonic()))


def test_advance_fires_each_timer_at_its_own_deadline() -> None:
    clock = ManualClock(start=1000.0)
    seen: list[tuple[str, float]] = []
    for name, deadline in (("five", 5.0), ("two", 2.0), ("eight", 8.0), ("late", 61.0)):
        clock.call_at(deadline, recorder(clock, seen, name))
    clock.advance(60)
    assert seen == [("two", 2.0), ("five", 5.0), ("eight", 8.0)]
    assert (clock.monotonic(), clock.now()) == (60.0, 1060.0)
    clock.advance(1)
    assert seen[-1] == ("late", 61.0)


def test_wall_time_moves_with_each_deadline() -> None:
    clock = ManualClock(start=1000.0)
    walls: list[float] = []
    clock.call_at(3.0, lambda: walls.append(clock.now()))
    clock.advance(10)
    assert walls == [1003.0]


def test_timers_scheduled_during_an_advance_fire_when_due_within_it() -> None:
    clock = ManualClock()
    seen: list[tuple[str, float]] = []

    def chain() -> None:
        seen.append(("first", clock.monotonic()))
        clock.call_at(clock.monotonic() + 3, recorder(clock, seen, "inside"))
        clock.call_at(clock.monotonic() + 30, recorder(clock, seen, "beyond"))

    clock.call_at(4.0, chain)
    clock.advance(10)
    assert seen == [("first", 4.0), ("inside", 7.0)]
    clock.advance(30)
    assert seen[-1] == ("beyond", 34.0)


def test_equal_deadlines_fire_in_the_order_they_were_scheduled() -> None:
    clock = ManualClock()
    seen: list[tuple[str, float]] = []
    for name in ("a", "b", "c"):
        clock.call_at(1.0, recorder(clock, seen, name))
    clock.advance(1)
    assert [name for name, _ in seen] == ["a", "b", "c"]


def test_a_cancelled_timer_never_fires() -> None:
    clock = ManualClock()
    seen: list[tuple[str, float]] = []
    handle = clock.call_at(1.0, recorder(clock, seen, "cancelled"))
    clock.call_at(2.0, recorder(clock, seen, "kept"))
    handle.cancel()
    clock.advance(5)
    assert seen == [("kept", 2.0)]


def test_a_deadline_already_passed_fires_at_the_next_advance_without_going_back() -> None:
    clock = ManualClock()
    clock.advance(10)
    seen: list[tuple[str, float]] = []
    clock.call_at(3.0, recorder(clock, seen, "past"))
    assert seen == []
    clock.advance(0)
    assert seen == [("past", 10.0)]


def test_a_callback_that_raises_still_lets_the_clock_reach_the_target() -> None:
    clock = ManualClock()
    seen: list[tuple[str, float]] = []

    def boom() -> None:
        raise RuntimeError("boom")

    clock.call_at(1.0, boom)
    clock.call_at(2.0, recorder(clock, seen, "after"))
    with pytest.raises(RuntimeError, match="boom"):
        clock.advance(5)
    assert clock.monotonic() == 5.0
    clock.advance(0)
    assert seen == [("after", 5.0)]
    clock.advance(1)
    assert clock.monotonic() == 6.0


def test_wait_returns_when_a_timer_sets_the_event_on_the_way() -> None:
    clock = ManualClock()
    event = threading.Event()
    clock.call_at(4.0, event.set)
    assert clock.wait(event, 30)
    assert clock.monotonic() == 4.0
    clock.advance(1)
    assert clock.monotonic() == 5.0


def test_wait_for_an_event_nobody_sets_takes_the_whole_timeout() -> None:
    clock = ManualClock()
    assert not clock.wait(threading.Event(), 30)
    assert clock.monotonic() == 30.0


def test_advances_from_two_threads_add_up() -> None:
    clock = ManualClock()
    threads = [threading.Thread(target=clock.advance, args=(5,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert clock.monotonic() == 10.0


@given(
    deadlines=st.lists(st.floats(0, 100, allow_nan=False), max_size=20),
    steps=st.lists(st.floats(0, 40, allow_nan=False), min_size=1, max_size=6),
)
@example(deadlines=[5.0, 5.0, 0.0], steps=[0.0, 5.0])
def test_timers_fire_in_deadline_order_each_at_its_deadline(
    deadlines: list[float], steps: list[float]
) -> None:
    clock = ManualClock()
    seen: list[tuple[float, float]] = []

    def note(deadline: float) -> Callable[[], None]:
        return lambda: seen.append((deadline, clock.monotonic()))

    for deadline in deadlines:
        clock.call_at(deadline, note(deadline))
    for step in steps:
        clock.advance(step)
    end = clock.monotonic()
    assert seen == sorted((d, d) for d in deadlines if d <= end)


def test_the_clocks_declare_whether_they_are_virtual() -> None:
    assert ManualClock().virtual is True
    assert SystemClock().virtual is False
    assert missing_clock_members(ManualClock()) == []
    assert missing_clock_members(SystemClock()) == []
    assert missing_clock_members(object()) == [
        "call_at",
        "monotonic",
        "now",
        "sleep",
        "virtual",
        "wait",
    ]


def test_the_system_clock_runs_callbacks_on_time_and_honours_cancel() -> None:
    clock = SystemClock()
    fired = threading.Event()
    cancelled_ran = threading.Event()
    # Far enough ahead that a busy machine cancels it before it is due; the other fires after.
    started = clock.monotonic()
    handle = clock.call_at(started + 0.2, cancelled_ran.set)
    handle.cancel()
    clock.call_at(started + 0.3, fired.set)
    assert fired.wait(10)
    assert clock.monotonic() - started >= 0.295  # not early (timer waits may round down)
    assert not cancelled_ran.is_set()


# -- the in-memory runtime keeps time on the clock it is given --------------------------------


def start_container(runtime: FakeRuntime, command: tuple[str, ...]) -> str:
    runtime.pull(IMAGE)
    labels = {MANAGED_LABEL: "true", POD_UID_LABEL: "uid-1"}
    sandbox_config = SandboxConfig(name="web", namespace="default", uid="uid-1", labels=labels)
    sandbox = runtime.run_sandbox(sandbox_config)
    container = runtime.create_container(
        sandbox,
        ContainerConfig(name="app", image=IMAGE, command=command, labels=labels),
        sandbox_config,
    )
    runtime.start_container(container)
    return container


def test_a_sleep_5_container_reports_5_seconds_after_a_long_advance() -> None:
    clock = ManualClock()
    runtime = FakeRuntime(clock)
    cid = start_container(runtime, ("sleep", "5"))
    clock.advance(60)
    status = runtime.container_status(cid)
    assert (status.state, status.exit_code) == (RuntimeState.EXITED, 0)
    assert status.finished_at is not None and status.started_at is not None
    assert status.finished_at - status.started_at == 5.0


class ThirdPartyVirtualClock:
    """A clock from outside kubecore: no kubecore base class, only the protocol."""

    virtual = True

    def __init__(self) -> None:
        self._inner = ManualClock(start=5_000.0)
        self.scheduled: list[float] = []

    def now(self) -> float:
        return self._inner.now()

    def monotonic(self) -> float:
        return self._inner.monotonic()

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)

    def wait(self, event: threading.Event, timeout: float) -> bool:
        return self._inner.wait(event, timeout)

    def call_at(self, monotonic_deadline: float, callback: Callable[[], None]) -> TimerHandle:
        self.scheduled.append(monotonic_deadline)
        return self._inner.call_at(monotonic_deadline, callback)


def test_the_fake_schedules_on_a_third_party_clock() -> None:
    clock = ThirdPartyVirtualClock()
    bundle = load_runtime("fake", clock=clock)
    assert bundle.clock is clock
    runtime = bundle.runtime
    assert isinstance(runtime, FakeRuntime)
    cid = start_container(runtime, ("sleep", "5"))
    assert clock.scheduled == [5.0]
    clock.sleep(60)
    status = runtime.container_status(cid)
    assert status.state is RuntimeState.EXITED
    assert status.finished_at == 5_005.0


def test_the_fake_refuses_a_clock_option_that_is_not_a_clock() -> None:
    with pytest.raises(PluginError, match=r"expected a Clock.*lacks call_at, monotonic"):
        load_runtime("fake", clock=object())


def test_the_fake_on_a_real_clock_fires_its_timers_on_a_timer_thread() -> None:
    runtime = FakeRuntime(SystemClock())
    died = threading.Event()
    runtime.watch_events(lambda event: died.set() if event.type is RuntimeEventType.DIED else None)
    started = time.monotonic()
    cid = start_container(runtime, ("sleep", "0.05"))
    assert died.wait(10), "the container never exited"
    assert time.monotonic() - started >= 0.045  # not early (timer waits may round down)
    assert runtime.container_status(cid).exit_code == 0


def test_closing_the_fake_cancels_its_pending_timers() -> None:
    clock = ManualClock()
    runtime = FakeRuntime(clock)
    start_container(runtime, ("sleep", "5"))
    died: list[object] = []
    runtime.watch_events(died.append)
    runtime.close()
    clock.advance(10)
    assert died == []


# -- the agent takes its clock from the bundle ------------------------------------------------


def agent_config(tmp_path: Path) -> KubeletConfig:
    return KubeletConfig(root_dir=str(tmp_path / "root"))


def test_from_bundle_takes_the_bundles_clock(tmp_path: Path) -> None:
    clock = ManualClock()
    kubelet = Kubelet.from_bundle(load_runtime("fake", clock=clock), config=agent_config(tmp_path))
    assert kubelet.clock is clock


def test_from_bundle_accepts_the_same_clock_twice(tmp_path: Path) -> None:
    clock = ManualClock()
    bundle = load_runtime("fake", clock=clock)
    kubelet = Kubelet.from_bundle(bundle, clock=clock, config=agent_config(tmp_path))
    assert kubelet.clock is clock


def test_from_bundle_accepts_another_system_clock_for_a_bundle_on_real_time(
    tmp_path: Path,
) -> None:
    bundle = load_runtime("fake", clock=SystemClock())
    kubelet = Kubelet.from_bundle(bundle, clock=SystemClock(), config=agent_config(tmp_path))
    assert kubelet.clock == SystemClock()


def test_from_bundle_refuses_a_different_clock_naming_both(tmp_path: Path) -> None:
    theirs, mine = ManualClock(), SystemClock()
    bundle = load_runtime("fake", clock=theirs)
    with pytest.raises(ValueError, match="runtime 'fake' keeps time on") as info:
        Kubelet.from_bundle(bundle, clock=mine, config=agent_config(tmp_path))
    assert repr(theirs) in str(info.value) and repr(mine) in str(info.value)


def test_from_bundle_uses_the_given_clock_when_the_bundle_has_none(tmp_path: Path) -> None:
    clock = ManualClock()
    runtime = FakeRuntime(clock)
    bundle = RuntimeBundle(runtime=runtime, puller=runtime, name="bare")
    kubelet = Kubelet.from_bundle(bundle, clock=clock, config=agent_config(tmp_path))
    assert kubelet.clock is clock


def test_a_runtime_that_cannot_adopt_is_warned_about_once_at_start_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = FakeRuntime(ManualClock())
    forgetful = RuntimeBundle(runtime=runtime, puller=runtime, name="forgetful", adopts=False)
    with caplog.at_level(logging.WARNING, logger="kubecore"):
        kubelet = Kubelet.from_bundle(forgetful, config=agent_config(tmp_path))
        kubelet.sync()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [w for w in warnings if "cannot adopt" in w] == [forgetful.restart_warning()]
    assert "runtime 'forgetful'" in forgetful.restart_warning()


def test_a_runtime_that_adopts_is_not_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    adopting = attrs.evolve(load_runtime("fake", clock=ManualClock()), adopts=True)
    with caplog.at_level(logging.WARNING, logger="kubecore"):
        Kubelet.from_bundle(adopting, config=agent_config(tmp_path))
    assert not [r for r in caplog.records if "cannot adopt" in r.getMessage()]


def test_an_agent_converges_in_the_virtual_time_of_a_third_party_clock(tmp_path: Path) -> None:
    clock = ThirdPartyVirtualClock()
    kubelet = Kubelet.from_bundle(load_runtime("fake", clock=clock), config=agent_config(tmp_path))
    kubelet.update(
        PodUpdate(
            Operation.ADD,
            (make_pod("job", ctr(command=("sleep", "5")), restart_policy="Never"),),
            "api",
        )
    )
    assert kubelet.sync_until_converged(max_syncs=20, step=1.0)
    for _ in range(10):
        clock.sleep(1.0)
        kubelet.sync()
        if phase(kubelet, "job") == "Succeeded":
            break
    assert phase(kubelet, "job") == "Succeeded"
    assert 5.0 <= clock.monotonic() <= 6.0  # virtual seconds: the container sleeps 5


def phase(kubelet: Kubelet, name: str) -> str:
    pod = kubelet.get_pod("default", name)
    assert pod is not None and pod.status is not None
    return pod.status.phase


def test_stopping_a_container_that_exits_during_its_grace_period_takes_only_that_long() -> None:
    clock = ManualClock()
    runtime = FakeRuntime(clock)
    cid = start_container(runtime, ("sleep", "5"))
    runtime.stop_container(cid, 30)
    status = runtime.container_status(cid)
    assert (status.exit_code, clock.monotonic()) == (0, 5.0)


def test_a_running_agent_never_moves_a_third_party_virtual_clock_by_itself(
    tmp_path: Path,
) -> None:
    clock = ThirdPartyVirtualClock()
    kubelet = Kubelet.from_bundle(load_runtime("fake", clock=clock), config=agent_config(tmp_path))
    kubelet.update(PodUpdate(Operation.ADD, (make_pod("web"),), "api"))
    kubelet.start()
    try:
        for _ in range(3):  # several passes of the loop, each followed by its wait
            kubelet.wake()
            assert kubelet.wait_idle(30)
        assert phase(kubelet, "web") == "Running"
    finally:
        kubelet.stop()
    assert clock.monotonic() == 0.0  # the loop waited in real time: only a test moves it
