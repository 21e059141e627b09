"""The agent while its container runtime does not answer: relists back off, failures are logged
at a falling rate, the recovery once; the event stream is subscribed again when it could not be
opened or has ended. On the in-memory runtime."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._agent.outage import Outage, OutageEnd, logs_failure
from kubecore._agent.sync_loop import ENGINE_PROBE_EVERY
from kubecore._contract.errors import RuntimeUnavailable
from kubecore._contract.values import RuntimeEvent, RuntimeState
from kubecore._util.clock import ManualClock, SystemClock
from kubecore_fake import FakeHealthChecker, FakeRuntime
from tests.builders import ctr, make_pod


class Engine(FakeRuntime):
    """The in-memory runtime with a switch: while ``down`` every call fails as an engine that
    does not answer (and is counted in ``refused``)."""

    def __init__(self, clock: SystemClock | ManualClock) -> None:
        super().__init__(clock=clock)
        self.down = False
        self.refused: Counter[str] = Counter()

    def _enter(self, op: str, *args: object, target: str | None = None) -> None:
        if self.down:
            self.refused[op] += 1
            raise RuntimeUnavailable(f"{op}: cannot connect to the engine")
        super()._enter(op, *args, target=target)


def until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    """Wait (real time) for another thread to make ``predicate`` true."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.002)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._guard:
            self.records.append(record)

    def at_least(self, level: int) -> list[logging.LogRecord]:
        with self._guard:
            return [r for r in self.records if r.levelno >= level]


@pytest.fixture
def records() -> Iterator[Records]:
    handler = Records()
    root = logging.getLogger("kubecore")
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


def agent(tmp_path: Path, runtime: FakeRuntime, **config: object) -> Kubelet:
    return Kubelet(
        runtime,
        runtime,
        config=KubeletConfig(
            root_dir=str(tmp_path / "root"),
            resolv_conf=str(tmp_path / "missing-resolv.conf"),
            **config,  # type: ignore[arg-type]
        ),
        clock=runtime.clock,
        health_checker=FakeHealthChecker(runtime),
    )


# --- the rule ---------------------------------------------------------------------------------


def test_the_delay_doubles_from_half_a_second_to_its_cap_and_an_answer_resets_it() -> None:
    outage = Outage()
    delays = []
    for t in range(10):
        outage.fail(float(t))
        delays.append(outage.delay)
    assert delays == [0.5, 1, 2, 4, 8, 16, 30, 30, 30, 30]
    assert outage.answer(12.5) == OutageEnd(10, 12.5)
    assert outage.delay == 0 and outage.answer(13.0) is None
    outage.fail(20.0)
    assert outage.delay == 0.5


def test_failures_are_logged_at_powers_of_two_and_at_least_once_a_minute() -> None:
    assert [n for n in range(1, 70) if logs_failure(n, 1.0, 60.0)] == [1, 2, 4, 8, 16, 32, 64]
    assert logs_failure(9, 60.0, 60.0)
    outage = Outage()
    logged = [n for n in range(1, 21) if outage.fail(n * 30.0)]  # a failure every 30 s
    assert logged == [1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20]


def test_an_outage_is_described_with_its_tries_and_duration() -> None:
    assert OutageEnd(1, 0.5).describe() == "after 1 failed try over 0.5s"
    assert OutageEnd(7, 61.46).describe() == "after 7 failed tries over 61.5s"


def test_a_back_off_needs_a_positive_start_under_its_cap() -> None:
    with pytest.raises(ValueError, match="initial=0"):
        Outage(initial=0)
    with pytest.raises(ValueError, match="cap=1"):
        Outage(initial=2, cap=1)


# --- the loop, real time ----------------------------------------------------------------------


def test_the_loop_does_not_spin_while_the_engine_is_down(tmp_path: Path, records: Records) -> None:
    # A crash-looping pod keeps a re-plan time in the past and a death unconfirmed: before the
    # back-off the loop passed as fast as the failing relist returned (hundreds a second).
    runtime = Engine(SystemClock())
    kubelet = agent(tmp_path, runtime, backoff_initial=0.05, backoff_max=0.05)
    kubelet.set_pods([make_pod("web", ctr("app", command=("sh", "-c", "exit 1")))])
    kubelet.start()
    try:
        until(lambda: runtime.call_count("start_container") >= 2, what="a crash loop")
        mark = len(records.at_least(logging.INFO))
        runtime.down = True
        started = time.monotonic()
        time.sleep(1.6)  # the window measured: what the loop does in it is counted
        refused = runtime.refused["snapshot"]
        logged = records.at_least(logging.INFO)[mark:]
    finally:
        kubelet.stop(5)
    # relists at 0, 0.5, 1.5 s (one more may start as the window closes)
    assert 2 <= refused <= 4, f"{refused} relists in {time.monotonic() - started:.1f}s"
    assert 1 <= len([r for r in logged if "runtime snapshot failed" in r.getMessage()]) <= 3


# --- the loop, virtual time -------------------------------------------------------------------


def held(kubelet: Kubelet, clock: ManualClock) -> bool:
    until_ = kubelet._loop._holding_until
    return until_ is not None and until_ > clock.monotonic()


def test_relists_back_off_logs_fall_and_the_recovery_is_logged_once(
    tmp_path: Path, records: Records
) -> None:
    clock = ManualClock()
    runtime = Engine(clock)
    # relist once an hour (real time on a virtual clock): only the back-off makes passes
    kubelet = agent(tmp_path, runtime, relist_interval=3600, resync_interval=7200)
    kubelet.set_pods([make_pod("web")])
    kubelet.start()
    try:
        assert kubelet.wait_idle(10)
        (first,) = runtime.find_containers("app", state=RuntimeState.RUNNING)
        runtime.down = True
        kubelet.wake()
        until(lambda: held(kubelet, clock), what="the first back-off")
        mark = len(records.records)
        for _ in range(3000):  # 300 s of virtual time
            clock.advance(0.1)
            until(lambda: held(kubelet, clock), what="a back-off")
        relists = runtime.refused["snapshot"]
        down_logs = [r for r in records.records[mark:] if r.levelno >= logging.INFO]
        # delays 0.5, 1, 2, 4, 8, 16, then 30 s: 7 relists in the first 61.5 s, 8 more by 300 s
        assert 12 <= relists <= 17, relists
        messages = [r.getMessage() for r in down_logs]
        assert len(messages) <= 9, messages
        assert all("runtime snapshot failed" in m for m in messages), messages
        assert "cannot connect to the engine" in messages[0]

        runtime.down = False
        runtime.crash(first.id)  # the death is noticed once the engine answers
        clock.advance(30)
        until(lambda: not kubelet._pass.outage.failures, what="a relist that succeeds")
        assert kubelet.wait_idle(10)
        (second,) = runtime.find_containers("app", state=RuntimeState.RUNNING)
        assert second.id != first.id
        clock.advance(60)
        assert kubelet.wait_idle(10)
    finally:
        kubelet.stop(5)
    recovered = [r.getMessage() for r in records.records if "answered again" in r.getMessage()]
    assert len(recovered) == 1, recovered
    assert recovered[0].startswith("the container runtime answered again after")


def step(clock: ManualClock, calls: Callable[[], int]) -> None:
    """Advance the clock by one probe interval and wait (real time) for the loop to call the
    engine in it (a probe, or a relist at the end of a hold)."""
    before = calls()
    clock.advance(ENGINE_PROBE_EVERY)
    until(lambda: calls() > before, what="a call to the engine")


def test_the_first_answer_of_the_engine_ends_a_long_back_off(tmp_path: Path) -> None:
    # containerd answered again while the relist held for up to 30 s: reconvergence waited
    # for the hold's end (32 s). The loop asks the engine each second and relists at once.
    clock = ManualClock()
    runtime = Engine(clock)
    kubelet = agent(tmp_path, runtime, relist_interval=3600, resync_interval=7200)
    kubelet.set_pods([make_pod("web")])
    kubelet.start()
    try:
        assert kubelet.wait_idle(10)
        (first,) = runtime.find_containers("app", state=RuntimeState.RUNNING)
        runtime.down = True
        kubelet.wake()
        until(lambda: held(kubelet, clock), what="the first back-off")
        for _ in range(45):  # the relist at 31.5 s holds until 61.5 s
            step(clock, lambda: runtime.refused["version"] + runtime.refused["snapshot"])
        assert kubelet._pass.outage.delay == 30
        hold_ends = kubelet._loop._holding_until
        assert hold_ends is not None and hold_ends - clock.monotonic() > 10
        relists = runtime.refused["snapshot"]

        runtime.down = False
        runtime.crash(first.id)  # the death is noticed once the engine answers
        clock.advance(ENGINE_PROBE_EVERY)
        until(lambda: not kubelet._pass.outage.failures, what="a relist right after the answer")
        assert clock.monotonic() < hold_ends
        assert runtime.refused["snapshot"] == relists  # no relist hammered the silent engine
        assert kubelet.wait_idle(10)
        (second,) = runtime.find_containers("app", state=RuntimeState.RUNNING)
        assert second.id != first.id
    finally:
        kubelet.stop(5)


def test_an_engine_that_answers_but_fails_relists_keeps_the_back_off(tmp_path: Path) -> None:
    # The probe ends a hold only once the engine was seen silent: relists that fail on an
    # engine that answers (a broken list) keep their back-off.
    clock = ManualClock()
    runtime = FakeRuntime(clock=clock)
    kubelet = agent(tmp_path, runtime, relist_interval=3600, resync_interval=7200)
    runtime.fail_next("snapshot", 1000, RuntimeUnavailable("snapshot: a broken list"))
    kubelet.start()
    try:
        until(lambda: held(kubelet, clock), what="the first back-off")
        for _ in range(30):
            step(clock, lambda: runtime.call_count("version") + runtime.call_count("snapshot"))
        # delays 0.5, 1, 2, 4, 8, 16: 6 relists by 31.5 s, as without probes
        assert 5 <= runtime.call_count("snapshot") <= 7
        assert runtime.call_count("version") >= 20  # asked each second, answered
    finally:
        kubelet.stop(5)


def test_stop_ends_a_back_off(tmp_path: Path) -> None:
    clock = ManualClock()
    runtime = Engine(clock)
    kubelet = agent(tmp_path, runtime, relist_interval=3600)
    runtime.down = True
    kubelet.start()
    until(lambda: held(kubelet, clock), what="a back-off")
    started = time.monotonic()
    kubelet.stop(5)
    assert not kubelet.running
    assert time.monotonic() - started < 2


# --- the event stream -------------------------------------------------------------------------


def test_an_event_stream_that_could_not_be_opened_is_subscribed_again(tmp_path: Path) -> None:
    clock = ManualClock()
    runtime = FakeRuntime(clock=clock)
    kubelet = agent(tmp_path, runtime, relist_interval=3600, resync_interval=7200)
    kubelet.set_pods([make_pod("web")])
    runtime.fail_next("watch_events", 1, RuntimeUnavailable("events: cannot connect"))
    kubelet.start()
    try:
        assert kubelet.wait_idle(10)
        clock.advance(1.0)  # the first try again is due a second later, at a pass
        assert kubelet.wait_pass(10)
        assert runtime.call_count("watch_events") == 2
        (first,) = runtime.find_containers("app", state=RuntimeState.RUNNING)
        runtime.crash(first.id)
        # only the death's event can wake the loop (relists are an hour apart)
        until(
            lambda: any(
                c.id != first.id for c in runtime.find_containers("app", state=RuntimeState.RUNNING)
            ),
            what="the restart a death event brings",
        )
    finally:
        kubelet.stop(5)


class EndingStream:
    def __init__(self) -> None:
        self.alive = True
        self.closed = False

    def close(self) -> None:
        self.closed = True
        self.alive = False


class StreamsThatEnd(FakeRuntime):
    """Subscriptions the test can end, as a stream whose thread gave up."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock=clock)
        self.streams: list[tuple[EndingStream, Callable[[RuntimeEvent], None]]] = []

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> EndingStream:  # type: ignore[override]
        super().watch_events(lambda _event: None)  # counted, delivers nothing
        stream = EndingStream()
        self.streams.append((stream, handler))
        return stream


def test_an_event_stream_that_ended_is_subscribed_again(tmp_path: Path) -> None:
    clock = ManualClock()
    runtime = StreamsThatEnd(clock)
    kubelet = agent(tmp_path, runtime, relist_interval=3600, resync_interval=7200)
    kubelet.set_pods([make_pod("web")])
    kubelet.start()
    try:
        assert kubelet.wait_idle(10)
        ((old, _),) = runtime.streams
        old.alive = False
        assert kubelet.wait_pass(10)  # sees it ended: subscribes again a second later
        assert len(runtime.streams) == 1 and old.closed
        clock.advance(1.0)
        assert kubelet.wait_pass(10)
        assert len(runtime.streams) == 2
        new, _ = runtime.streams[1]
        assert new.alive
        assert kubelet.wait_pass(10)
        assert len(runtime.streams) == 2  # a live one is kept
    finally:
        kubelet.stop(5)
    assert runtime.streams[1][0].closed
