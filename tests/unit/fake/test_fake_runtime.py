"""The fake runtime's semantics: contract, virtual time, scripts, faults, events, threads."""

from __future__ import annotations

import ast
import inspect
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

import kubecore_fake._runtime
from kubecore import ContainerRuntime, ContainerRuntimeError, HealthChecker, KubeletConfig, Puller
from kubecore._contract.labels import CONTAINER_NAME_LABEL, MANAGED_LABEL, POD_UID_LABEL
from kubecore.runtime import (
    Conflict,
    ContainerConfig,
    ContainerNotFound,
    ExecResult,
    ImageNotFound,
    ImagePullError,
    ProbeOutcome,
    ProbeResult,
    ProbeTarget,
    PullProgress,
    RegistryAuth,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeState,
    RuntimeTimeout,
    RuntimeUnavailable,
    SandboxConfig,
    SandboxNotFound,
    SandboxState,
    SandboxUnusable,
)
from kubecore.testing import FakeNode, ManualClock
from kubecore.v1 import ExecAction, HTTPGetAction, Probe, TCPSocketAction
from kubecore_fake import Behaviour, ExecRequest, FakeHealthChecker, FakeRuntime, TimedLog
from kubecore_fake._controls import OPERATIONS
from kubecore_fake._exec import read_exec
from kubecore_fake._records import container_view, sandbox_view
from kubecore_fake._shell import read_program
from tests.paths import CORPUS

IMAGE = "busybox:1.36"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fr(clock: ManualClock) -> FakeRuntime:
    runtime = FakeRuntime(clock)
    runtime.pull(IMAGE)
    return runtime


def sandbox_config(name: str = "web", uid: str = "uid-1", attempt: int = 0) -> SandboxConfig:
    return SandboxConfig(
        name=name,
        namespace="default",
        uid=uid,
        attempt=attempt,
        labels={MANAGED_LABEL: "true", POD_UID_LABEL: uid},
        annotations={"note": "a/b=c d"},
    )


def container_config(
    name: str = "app",
    command: Sequence[str] = (),
    args: Sequence[str] = (),
    image: str = IMAGE,
    **kwargs: object,
) -> ContainerConfig:
    return ContainerConfig(
        name=name,
        image=image,
        command=tuple(command),
        args=tuple(args),
        labels={MANAGED_LABEL: "true", CONTAINER_NAME_LABEL: name, POD_UID_LABEL: "uid-1"},
        annotations={"io.kubernetes.container.hash": "abc"},
        **kwargs,  # type: ignore[arg-type]
    )


def run(
    fr: FakeRuntime, command: Sequence[str] = (), name: str = "app", **kwargs: object
) -> tuple[str, str]:
    """A sandbox with one started container; returns (sandbox id, container id)."""
    sb_config = sandbox_config()
    existing = [s for s in fr.list_sandboxes() if s.uid == sb_config.uid]
    sid = existing[0].id if existing else fr.run_sandbox(sb_config)
    cid = fr.create_container(sid, container_config(name, command, **kwargs), sb_config)
    fr.start_container(cid)
    return sid, cid


def sh(script: str) -> tuple[str, ...]:
    return ("sh", "-c", script)


# -- protocols and contract ----------------------------------------------------------------------


def test_implements_the_protocols(fr: FakeRuntime) -> None:
    assert isinstance(fr, ContainerRuntime)
    assert isinstance(fr, Puller)
    assert isinstance(FakeHealthChecker(fr), HealthChecker)


def test_deterministic_ids_and_ips(fr: FakeRuntime) -> None:
    s1 = fr.run_sandbox(sandbox_config(uid="a"))
    s2 = fr.run_sandbox(sandbox_config(uid="b"))
    c1 = fr.create_container(s1, container_config(), sandbox_config(uid="a"))
    assert (s1, s2, c1) == ("sandbox-1", "sandbox-2", "container-1")
    ip1, ip2 = fr.sandbox_status(s1).ip, fr.sandbox_status(s2).ip
    assert ip1.startswith("10.88.") and ip2.startswith("10.88.") and ip1 != ip2


def test_host_network_sandbox_gets_the_node_ip(clock: ManualClock) -> None:
    fr = FakeRuntime(clock, node_ip="10.88.0.1")
    sid = fr.run_sandbox(SandboxConfig(name="h", namespace="n", uid="u", host_network=True))
    assert fr.sandbox_status(sid).ip == "10.88.0.1"


def test_labels_and_annotations_come_back_unchanged(fr: FakeRuntime) -> None:
    sid, cid = run(fr)
    sb, c = fr.sandbox_status(sid), fr.container_status(cid)
    assert dict(sb.labels) == dict(sandbox_config().labels)
    assert dict(sb.annotations) == {"note": "a/b=c d"}
    assert dict(c.labels) == dict(container_config().labels)
    assert dict(c.annotations) == {"io.kubernetes.container.hash": "abc"}
    listed = fr.list_containers()[0]
    assert listed == c


def test_stop_and_remove_are_idempotent_and_missing_ids_are_typed(fr: FakeRuntime) -> None:
    sid, cid = run(fr)
    fr.stop_container(cid, 10)
    fr.stop_container(cid, 10)
    fr.remove_container(cid)
    fr.remove_container(cid)
    fr.stop_container("nope", 1)
    fr.remove_container("nope")
    fr.stop_sandbox(sid)
    fr.stop_sandbox(sid)
    fr.remove_sandbox(sid)
    fr.remove_sandbox(sid)
    fr.stop_sandbox("nope")
    fr.remove_sandbox("nope")
    with pytest.raises(ContainerNotFound):
        fr.container_status(cid)
    with pytest.raises(ContainerNotFound):
        fr.start_container(cid)
    with pytest.raises(ContainerNotFound):
        fr.exec_sync(cid, ["true"], 1)
    with pytest.raises(ContainerNotFound):
        fr.logs(cid)
    with pytest.raises(SandboxNotFound):
        fr.sandbox_status(sid)
    with pytest.raises(SandboxNotFound):
        fr.create_container(sid, container_config(), sandbox_config())


def test_create_needs_a_present_image(clock: ManualClock) -> None:
    fr = FakeRuntime(clock)
    sid = fr.run_sandbox(sandbox_config())
    with pytest.raises(ImageNotFound):
        fr.create_container(sid, container_config(), sandbox_config())
    fr.pull("busybox:1.36")
    assert fr.create_container(sid, container_config(), sandbox_config())


def test_start_in_a_stopped_sandbox_says_the_sandbox_is_unusable(fr: FakeRuntime) -> None:
    sid = fr.run_sandbox(sandbox_config())
    cid = fr.create_container(sid, container_config(), sandbox_config())
    fr.stop_sandbox(sid)
    assert fr.sandbox_status(sid).state is SandboxState.NOTREADY
    with pytest.raises(SandboxUnusable):
        fr.start_container(cid)


def test_duplicate_names_are_conflicts(fr: FakeRuntime) -> None:
    sid = fr.run_sandbox(sandbox_config())
    with pytest.raises(Conflict):
        fr.run_sandbox(sandbox_config())
    fr.create_container(sid, container_config(), sandbox_config())
    with pytest.raises(Conflict):
        fr.create_container(sid, container_config(), sandbox_config())
    fr.create_container(sid, container_config(attempt=1), sandbox_config())


def test_start_is_idempotent_while_running_and_refused_after_exit(fr: FakeRuntime) -> None:
    _, cid = run(fr)
    fr.start_container(cid)
    fr.exit(cid, 0)
    with pytest.raises(Conflict):
        fr.start_container(cid)


def test_remove_sandbox_removes_its_containers(fr: FakeRuntime) -> None:
    sid, _cid = run(fr)
    fr.remove_sandbox(sid)
    assert fr.snapshot().containers == ()
    assert fr.snapshot().sandboxes == ()


def test_stop_sandbox_kills_running_containers(fr: FakeRuntime) -> None:
    sid, cid = run(fr)
    fr.stop_sandbox(sid)
    status = fr.container_status(cid)
    assert (status.state, status.exit_code) == (RuntimeState.EXITED, 137)


# -- the reading of commands, in virtual time ---------------------------------------------------


@pytest.mark.parametrize(
    ("command", "code", "logs"),
    [
        (("true",), 0, []),
        (("false",), 1, []),
        (("/bin/echo", "hello"), 0, ["hello"]),
        (sh("exit 3"), 3, []),
        (sh("echo crashing; exit 1"), 1, ["crashing"]),
        (sh("echo $GREETING world"), 0, ["hi world"]),
    ],
)
def test_short_commands_exit_at_once(
    fr: FakeRuntime, command: tuple[str, ...], code: int, logs: list[str]
) -> None:
    _, cid = run(fr, command, env=(("GREETING", "hi"),))
    status = fr.container_status(cid)
    assert (status.state, status.exit_code) == (RuntimeState.EXITED, code)
    assert status.reason == ("Completed" if code == 0 else "Error")
    assert [line.decode() for line in fr.logs(cid)] == [f"{line}\n" for line in logs]


def test_sleep_exits_after_virtual_seconds(fr: FakeRuntime, clock: ManualClock) -> None:
    _, cid = run(fr, ("sleep", "5"))
    clock.advance(4.9)
    assert fr.container_status(cid).state is RuntimeState.RUNNING
    clock.advance(0.2)
    status = fr.container_status(cid)
    assert (status.state, status.exit_code) == (RuntimeState.EXITED, 0)
    assert status.finished_at == pytest.approx(status.started_at + 5.0, abs=0.11)  # type: ignore[operator]


def test_unknown_commands_run_until_stopped(fr: FakeRuntime, clock: ManualClock) -> None:
    _, cid = run(fr, ("nginx", "-g", "daemon off;"))
    clock.advance(3600)
    assert fr.container_status(cid).state is RuntimeState.RUNNING
    fr.stop_container(cid, 30)
    status = fr.container_status(cid)
    assert (status.exit_code, fr.signals(cid)) == (0, ("TERM",))


def test_stop_of_a_term_ignoring_container_waits_the_grace_period(
    fr: FakeRuntime, clock: ManualClock
) -> None:
    _, cid = run(fr, sh("while true; do sleep 1; done"))
    before = clock.monotonic()
    fr.stop_container(cid, 30)
    assert clock.monotonic() - before == pytest.approx(30)
    status = fr.container_status(cid)
    assert (status.exit_code, fr.signals(cid)) == (137, ("TERM", "KILL"))


def test_a_trap_makes_a_shell_exit_on_term(fr: FakeRuntime, clock: ManualClock) -> None:
    _, cid = run(fr, sh("trap 'exit 0' TERM; while true; do sleep 1; done"))
    before = clock.monotonic()
    fr.stop_container(cid, 30)
    assert clock.monotonic() == before
    assert fr.container_status(cid).exit_code == 0


def test_timeline_of_the_liveness_example(fr: FakeRuntime, clock: ManualClock) -> None:
    """The Kubernetes docs' liveness example: the file disappears after 30 s."""
    _, cid = run(fr, sh("touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600"))
    assert fr.exec_sync(cid, ["cat", "/tmp/healthy"], 1).exit_code == 0
    clock.advance(31)
    result = fr.exec_sync(cid, ["cat", "/tmp/healthy"], 1)
    assert result.exit_code == 1 and b"No such file" in result.stderr
    clock.advance(600)
    assert fr.container_status(cid).exit_code == 0


def test_delayed_log_lines_carry_their_time(fr: FakeRuntime, clock: ManualClock) -> None:
    _, cid = run(fr, sh("echo one; sleep 10; echo two; sleep 100"))
    clock.advance(11)
    lines = list(fr.logs(cid, timestamps=True))
    assert [line.split(b" ", 1)[1] for line in lines] == [b"one\n", b"two\n"]
    start = fr.container_status(cid).started_at
    assert start is not None
    assert list(fr.logs(cid, since=start + 5)) == [b"two\n"]
    assert list(fr.logs(cid, tail=1)) == [b"two\n"]
    assert list(fr.logs(cid, tail=0)) == []


def test_scripts_override_the_reading(fr: FakeRuntime, clock: ManualClock) -> None:
    fr.script(image=IMAGE, behaviour=Behaviour(exit_code=2, after=3, logs=["boot"]))
    fr.script(command="special", behaviour=Behaviour(fail_start="exec: special: not found"))
    _, cid = run(fr, ("true",))
    assert fr.container_status(cid).state is RuntimeState.RUNNING
    clock.advance(3)
    status = fr.container_status(cid)
    assert (status.exit_code, list(fr.logs(cid))) == (2, [b"boot\n"])
    sid = fr.list_sandboxes()[0].id
    other = fr.create_container(sid, container_config("b", ("special",)), sandbox_config())
    with pytest.raises(ContainerRuntimeError, match="not found"):
        fr.start_container(other)
    failed = fr.container_status(other)
    assert (failed.state, failed.reason, failed.exit_code) == (
        RuntimeState.CREATED,
        "ContainerCannotRun",
        128,
    )


def test_oom(fr: FakeRuntime, clock: ManualClock) -> None:
    events: list[RuntimeEvent] = []
    fr.watch_events(events.append)
    fr.script(command="hog", behaviour=Behaviour(memory_bytes=512 * 2**20, after=2))
    _, cid = run(fr, ("hog",), memory_limit=64 * 2**20)
    clock.advance(2)
    status = fr.container_status(cid)
    assert (status.exit_code, status.reason) == (137, "OOMKilled")
    assert [e.type for e in events][-2:] == [RuntimeEventType.OOM, RuntimeEventType.DIED]
    _, other = run(fr, name="b")
    fr.oom_kill(other)
    assert fr.container_status(other).reason == "OOMKilled"


def test_exit_and_crash_controls(fr: FakeRuntime) -> None:
    _, cid = run(fr)
    fr.crash(cid, 7, "boom")
    status = fr.container_status(cid)
    assert (status.exit_code, status.reason, status.message) == (7, "Error", "boom")
    with pytest.raises(Conflict):
        fr.exit(cid, 0)


# -- exec ------------------------------------------------------------------------------------------


def test_exec_defaults_and_timeouts(fr: FakeRuntime, clock: ManualClock) -> None:
    _, cid = run(fr)
    assert fr.exec_sync(cid, ["true"], 1).exit_code == 0
    assert fr.exec_sync(cid, ["false"], 1).exit_code == 1
    assert fr.exec_sync(cid, ["echo", "hi"], 1) == ExecResult(0, b"hi\n")
    assert fr.exec_sync(cid, list(sh("echo a; exit 4")), 1) == ExecResult(4, b"a\n")
    assert fr.exec_sync(cid, ["anything", "else"], 1).exit_code == 0
    before = clock.monotonic()
    with pytest.raises(RuntimeTimeout):
        fr.exec_sync(cid, ["sleep", "30"], 2)
    assert clock.monotonic() - before == pytest.approx(2)
    fr.write_file(cid, "/etc/motd", "welcome\n")
    assert fr.exec_sync(cid, ["cat", "/etc/motd"], 1).stdout == b"welcome\n"


def test_exec_handlers(fr: FakeRuntime, clock: ManualClock) -> None:
    _, cid = run(fr)
    seen: list[ExecRequest] = []

    def handler(request: ExecRequest) -> ExecResult:
        seen.append(request)
        return ExecResult(0, b"pong")

    fr.on_exec(("ping",), handler)
    fr.on_exec("check health", 3, container="app")
    fr.on_exec(lambda argv: argv[0] == "slow", lambda r: (clock.advance(5), 0)[1])
    assert fr.exec_sync(cid, ["ping", "x"], 1).stdout == b"pong"
    assert seen[0].argv == ("ping", "x") and seen[0].container.id == cid
    assert fr.exec_sync(cid, ["check", "health"], 1).exit_code == 3
    with pytest.raises(RuntimeTimeout):
        fr.exec_sync(cid, ["slow"], 1)


def test_exec_in_a_stopped_container_is_a_conflict(fr: FakeRuntime) -> None:
    _, cid = run(fr)
    fr.exit(cid, 0)
    with pytest.raises(Conflict):
        fr.exec_sync(cid, ["true"], 1)


def test_containers_of_a_sandbox_share_listening_ports(fr: FakeRuntime) -> None:
    _, server = run(fr, sh("nc -lk -p 8080 -e true & wait"), name="server")
    _, client = run(fr, ("sleep", "infinity"), name="client")
    assert fr.exec_sync(client, ["nc", "-z", "127.0.0.1", "8080"], 1).exit_code == 0
    assert fr.exec_sync(client, ["nc", "-z", "127.0.0.1", "9090"], 1).exit_code == 1
    fr.stop_container(server, 0)
    assert fr.exec_sync(client, ["nc", "-z", "127.0.0.1", "8080"], 1).exit_code == 1


# -- logs ------------------------------------------------------------------------------------------


def test_follow_returns_when_the_container_stops(fr: FakeRuntime) -> None:
    _, cid = run(fr, sh("echo first; while true; do sleep 1; done"))
    got: list[bytes] = []
    ready = threading.Event()

    def reader() -> None:
        for line in fr.logs(cid, follow=True):
            got.append(line)
            ready.set()

    thread = threading.Thread(target=reader)
    thread.start()
    assert ready.wait(5)
    fr.write_log(cid, "second")
    fr.exit(cid, 0)
    thread.join(5)
    assert not thread.is_alive()
    assert got == [b"first\n", b"second\n"]


def test_follow_on_an_exited_container_returns_at_once(fr: FakeRuntime) -> None:
    _, cid = run(fr, sh("echo done"))
    assert list(fr.logs(cid, follow=True)) == [b"done\n"]


# -- images ----------------------------------------------------------------------------------------


def test_images_pullable_sets_sizes_and_usage(clock: ManualClock) -> None:
    fr = FakeRuntime(clock, images={"busybox:1.36": 5_000_000, "nginx": 50_000_000})
    fr.set_image_fs_capacity(100_000_000)
    with pytest.raises(ImagePullError):
        fr.pull("redis:7")
    progress: list[PullProgress] = []
    image_id = fr.pull("nginx", progress=progress.append)
    assert progress[-1].status == "Pull complete"
    status = fr.image_status("nginx:latest")
    assert status is not None and status.id == image_id and status.size == 50_000_000
    assert fr.image_status(image_id) == status
    fr.pull("busybox:1.36")
    usage = fr.image_fs_usage()
    assert (usage.used_bytes, usage.capacity_bytes) == (55_000_000, 100_000_000)
    fr.remove_image("nginx")
    fr.remove_image("nginx")
    assert fr.image_status("nginx") is None
    assert [i.tags for i in fr.list_images()] == [("busybox:1.36",)]


def test_image_in_use_cannot_be_removed(fr: FakeRuntime) -> None:
    _, cid = run(fr)
    with pytest.raises(Conflict):
        fr.remove_image(IMAGE)
    fr.remove_container(cid)
    fr.remove_image(IMAGE)
    assert fr.image_status(IMAGE) is None


def test_pull_with_auth(clock: ManualClock) -> None:
    fr = FakeRuntime(clock)
    fr.require_auth("private/app:1", RegistryAuth("me", "secret"))
    with pytest.raises(ImagePullError, match="unauthorized"):
        fr.pull("private/app:1")
    with pytest.raises(ImagePullError):
        fr.pull("private/app:1", RegistryAuth("me", "wrong"))
    assert fr.pull("private/app:1", RegistryAuth("me", "secret"))


def test_pulled_images_and_aliases(clock: ManualClock) -> None:
    fr = FakeRuntime(clock, pulled={"busybox": 1000})
    assert fr.image_status("busybox:latest") is not None
    shared = fr.add_image("busybox:1.36", image_id=fr.image_status("busybox").id)  # type: ignore[union-attr]
    fr.pull("busybox:1.36")
    assert len(fr.list_images()) == 1
    assert fr.list_images()[0].tags == ("busybox:latest", "busybox:1.36")
    assert fr.image_status("busybox:1.36").id == shared  # type: ignore[union-attr]


# -- faults, latency, calls ------------------------------------------------------------------------


def test_fail_next(fr: FakeRuntime) -> None:
    fr.fail_next("snapshot", 2)
    for _ in range(2):
        with pytest.raises(ContainerRuntimeError, match="injected"):
            fr.snapshot()
    fr.snapshot()
    fr.fail_next("*", error=RuntimeUnavailable("engine down"))
    with pytest.raises(RuntimeUnavailable):
        fr.version()
    fr.version()
    with pytest.raises(ValueError, match="unknown operation"):
        fr.fail_next("snapshott")


def test_every_recorded_operation_can_be_targeted() -> None:
    """``OPERATIONS`` names every operation the fake records, so ``fail_next``, ``add_latency``
    and ``call_count`` accept each of them."""
    tree = ast.parse(inspect.getsource(kubecore_fake._runtime))
    recorded = {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "_enter"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }
    assert "update_container_resources" in recorded
    assert recorded == OPERATIONS


def test_latency_advances_a_manual_clock(fr: FakeRuntime, clock: ManualClock) -> None:
    fr.add_latency("pull", 2.5)
    before = clock.monotonic()
    fr.pull("x:1")
    assert clock.monotonic() - before == pytest.approx(2.5)
    fr.add_latency("pull", 0)
    fr.pull("x:1")
    assert clock.monotonic() - before == pytest.approx(2.5)


def test_latency_lets_timed_behaviour_happen(fr: FakeRuntime) -> None:
    _, _cid = run(fr, ("sleep", "1"))
    fr.add_latency("snapshot", 2)
    snap = fr.snapshot()
    assert snap.containers[0].state is RuntimeState.EXITED


def test_call_log(fr: FakeRuntime) -> None:
    _sid, cid = run(fr)
    assert fr.call_count("run_sandbox") == 1
    assert ("start_container", (cid,)) in fr.calls
    assert fr.call_count("*") == len(fr.calls)


# -- events ----------------------------------------------------------------------------------------


def test_events_for_the_lifecycle(fr: FakeRuntime, clock: ManualClock) -> None:
    events: list[RuntimeEvent] = []
    sub = fr.watch_events(events.append)
    assert sub is not None
    _, cid = run(fr, ("sleep", "3"))
    clock.advance(3)
    fr.remove_container(cid)
    assert [e.type for e in events] == [
        RuntimeEventType.CREATED,
        RuntimeEventType.STARTED,
        RuntimeEventType.DIED,
        RuntimeEventType.DELETED,
    ]
    assert events[2].exit_code == 0 and events[2].pod_uid == "uid-1"
    assert events[2].container_name == "app"
    sub.close()
    run(fr, name="later")
    assert len(events) == 4


def test_event_handlers_run_outside_the_lock(fr: FakeRuntime) -> None:
    """A handler may call back into the runtime (from another thread too) without deadlock."""
    statuses: list[RuntimeState] = []

    def handler(event: RuntimeEvent) -> None:
        if event.type is RuntimeEventType.DIED:
            result: list[RuntimeState] = []
            t = threading.Thread(
                target=lambda: result.append(fr.container_status(event.container_id).state)
            )
            t.start()
            t.join(5)
            statuses.extend(result)

    fr.watch_events(handler)
    _, cid = run(fr)
    fr.exit(cid, 1)
    assert statuses == [RuntimeState.EXITED]


def test_a_failing_handler_does_not_break_the_runtime(fr: FakeRuntime) -> None:
    def bad(event: RuntimeEvent) -> None:
        raise ValueError("handler bug")

    got: list[RuntimeEvent] = []
    fr.watch_events(bad)
    fr.watch_events(got.append)
    run(fr)
    assert len(got) == 2


def test_events_can_be_switched_off(clock: ManualClock) -> None:
    assert FakeRuntime(clock, events=False).watch_events(lambda e: None) is None


# -- unmanaged objects -----------------------------------------------------------------------------


def test_unmanaged_objects_are_never_listed_and_touches_are_recorded(fr: FakeRuntime) -> None:
    foreign = fr.add_unmanaged_container("someone-elses", labels={"app": "db"})
    foreign_sb = fr.add_unmanaged_sandbox("theirs")
    events: list[RuntimeEvent] = []
    fr.watch_events(events.append)
    run(fr)
    snap = fr.snapshot()
    assert foreign not in {c.id for c in snap.containers}
    assert foreign_sb not in {s.id for s in snap.sandboxes}
    assert foreign not in {c.id for c in fr.list_containers()}
    assert foreign_sb not in {s.id for s in fr.list_sandboxes()}
    assert foreign not in {s.container_id for s in fr.container_stats()}
    assert fr.unmanaged_calls == []
    fr.stop_container(foreign, 1)
    assert [op for op, _ in fr.unmanaged_calls] == ["stop_container"]
    assert all(e.container_id != foreign for e in events)


# -- stats, close, health checker ------------------------------------------------------------------


def test_container_stats(fr: FakeRuntime, clock: ManualClock) -> None:
    fr.script(command="busy", behaviour=Behaviour(cpu_fraction=0.5, memory_bytes=1000))
    _, cid = run(fr, ("busy",))
    clock.advance(10)
    (stats,) = fr.container_stats()
    assert stats.container_id == cid
    assert stats.cpu_usage_nanos == pytest.approx(5e9)
    assert stats.memory_working_set_bytes == 1000


def test_close_makes_calls_fail(clock: ManualClock) -> None:
    fr = FakeRuntime(clock)
    fr.close()
    fr.close()
    with pytest.raises(RuntimeUnavailable):
        fr.snapshot()


def test_real_clock_timers_fire_and_are_cancelled() -> None:
    fr = FakeRuntime()
    fr.pull(IMAGE)
    fr.script(command="quick", behaviour=Behaviour(exit_code=0, after=0.01))
    done = threading.Event()
    fr.watch_events(lambda e: done.set() if e.type is RuntimeEventType.DIED else None)
    _, _cid = run(fr, ("quick",))  # after subscribing: on a busy machine it may die at once
    assert done.wait(5)
    fr.script(command="slow", behaviour=Behaviour(exit_code=0, after=60))
    run(fr, ("slow",), name="slow")
    fr.close()
    assert fr._engine.timers == set()


def test_health_checker(fr: FakeRuntime) -> None:
    checker = FakeHealthChecker(fr)
    sid, cid = run(fr, sh("touch /tmp/ok; nc -lk -p 8080 & wait"), name="web")
    ip = fr.sandbox_status(sid).ip
    target = ProbeTarget(cid, ip, {"http": 8080})
    ok = checker.check(Probe(exec=ExecAction(("cat", "/tmp/ok"))), target)
    assert ok.outcome is ProbeOutcome.SUCCESS
    bad = checker.check(Probe(exec=ExecAction(("cat", "/tmp/missing"))), target)
    assert bad.outcome is ProbeOutcome.FAILURE
    assert checker.check(Probe(http_get=HTTPGetAction("http")), target).outcome is (
        ProbeOutcome.SUCCESS
    )
    assert checker.check(Probe(tcp_socket=TCPSocketAction(9999)), target).outcome is (
        ProbeOutcome.FAILURE
    )
    assert checker.check(Probe(tcp_socket=TCPSocketAction("nope")), target).outcome is (
        ProbeOutcome.FAILURE
    )
    checker.set_probe("web", "http", [False, True])
    probe = Probe(http_get=HTTPGetAction(8080))
    outcomes = [checker.check(probe, target).outcome for _ in range(3)]
    assert outcomes == [ProbeOutcome.FAILURE, ProbeOutcome.SUCCESS, ProbeOutcome.SUCCESS]
    checker.set_probe(cid, "any", ProbeResult(ProbeOutcome.UNKNOWN, "why"))
    assert checker.check(probe, target).message == "why"
    checker.clear_probe(cid)
    checker.clear_probe("web", "http")
    fr.stop_container(cid, 0)
    assert checker.check(probe, target).outcome is ProbeOutcome.FAILURE
    assert checker.check(Probe(), target).outcome is ProbeOutcome.UNKNOWN
    missing = ProbeTarget("gone", ip)
    assert checker.check(probe, missing).outcome is ProbeOutcome.UNKNOWN
    assert len(checker.checks) == 12


def test_exec_probe_timeout_is_a_failure(fr: FakeRuntime) -> None:
    checker = FakeHealthChecker(fr)
    _, cid = run(fr)
    result = checker.check(
        Probe(exec=ExecAction(("sleep", "10")), timeout_seconds=1), ProbeTarget(cid, "")
    )
    assert result.outcome is ProbeOutcome.FAILURE and "timed out" in result.message


# -- threads ---------------------------------------------------------------------------------------


def test_concurrent_calls_keep_the_invariants(clock: ManualClock) -> None:
    fr = FakeRuntime(clock)
    fr.pull(IMAGE)
    events: list[RuntimeEvent] = []
    lock = threading.Lock()

    def record(event: RuntimeEvent) -> None:
        with lock:
            events.append(event)

    fr.watch_events(record)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(15):
                sb = sandbox_config(name=f"p{n}", uid=f"u{n}", attempt=i)
                sid = fr.run_sandbox(sb)
                cids = [
                    fr.create_container(
                        sid, container_config(f"c{k}", ("sleep", "2"), attempt=i), sb
                    )
                    for k in range(3)
                ]
                for cid in cids:
                    fr.start_container(cid)
                fr.snapshot()
                if n % 2:
                    clock.advance(1)
                fr.stop_container(cids[0], 0)
                if i % 2:
                    fr.remove_sandbox(sid)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    snap = fr.snapshot()
    sandbox_ids = {s.id for s in snap.sandboxes}
    assert len(snap.sandboxes) == 8 * 8  # even attempts were kept
    assert all(c.sandbox_id in sandbox_ids for c in snap.containers)
    assert len(snap.containers) == 3 * len(snap.sandboxes)
    assert len({c.id for c in snap.containers}) == len(snap.containers)
    assert fr.call_count("start_container") == 8 * 15 * 3
    for c in snap.containers:
        assert (c.state is RuntimeState.EXITED) == (c.exit_code is not None)
    created = sum(1 for e in events if e.type is RuntimeEventType.CREATED)
    started = sum(1 for e in events if e.type is RuntimeEventType.STARTED)
    assert created == started == 8 * 15 * 3
    died = {e.container_id for e in events if e.type is RuntimeEventType.DIED}
    assert all(c.id in died for c in snap.containers if c.state is RuntimeState.EXITED)


# -- the reader, as properties ---------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(
    code=st.integers(0, 255),
    words=st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), max_size=4),
)
def test_echo_then_exit_reads_back(code: int, words: list[str]) -> None:
    text = " ".join(words)
    program = read_program(sh(f"echo {text}; exit {code}"), {})
    assert program.exit_code == code
    assert program.timeline == (TimedLog(0.0, text),)
    outcome = read_exec(sh(f"echo {text}; exit {code}"), {}, {}, frozenset())
    assert (outcome.exit_code, outcome.stdout) == (code, text + "\n")


@settings(max_examples=50, deadline=None)
@given(script=st.text(max_size=60))
def test_the_reader_never_raises(script: str) -> None:
    read_program(sh(script), {})
    read_exec(sh(script), {}, {}, frozenset())


# -- a model-based check of the lifecycle ----------------------------------------------------------


class LifecycleMachine(RuleBasedStateMachine):
    """Random sequences of runtime calls agree with a small model of the contract."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock()
        self.fr = FakeRuntime(self.clock)
        self.fr.pull(IMAGE)
        self.sandboxes: dict[str, SandboxState] = {}
        # container id -> [sandbox id, state, exit code, virtual end time or None]
        self.containers: dict[str, list[object]] = {}
        self.removed: set[str] = set()
        self.serial = 0

    sandbox_ids = Bundle("sandbox_ids")
    container_ids = Bundle("container_ids")

    @rule(target=sandbox_ids)
    def run_sandbox(self) -> str:
        self.serial += 1
        sid = self.fr.run_sandbox(sandbox_config(uid=f"u{self.serial}"))
        self.sandboxes[sid] = SandboxState.READY
        return sid

    @rule(sid=sandbox_ids)
    def stop_sandbox(self, sid: str) -> None:
        self.fr.stop_sandbox(sid)
        if sid in self.sandboxes:
            self.sandboxes[sid] = SandboxState.NOTREADY
            for entry in self.containers.values():
                if entry[0] == sid and entry[1] is RuntimeState.RUNNING:
                    entry[1:] = [RuntimeState.EXITED, 137, None]

    @rule(sid=sandbox_ids)
    def remove_sandbox(self, sid: str) -> None:
        self.fr.remove_sandbox(sid)
        self.sandboxes.pop(sid, None)
        for cid in [c for c, entry in self.containers.items() if entry[0] == sid]:
            del self.containers[cid]
            self.removed.add(cid)

    @rule(
        target=container_ids,
        sid=sandbox_ids,
        sleep=st.one_of(st.none(), st.integers(0, 20)),
    )
    def create(self, sid: str, sleep: int | None) -> str:
        self.serial += 1
        script = "while true; do sleep 1; done" if sleep is None else f"sleep {sleep}"
        config = container_config(f"c{self.serial}", sh(f"trap 'exit 0' TERM; {script}"))
        if sid not in self.sandboxes:
            with pytest.raises(SandboxNotFound):
                self.fr.create_container(sid, config, sandbox_config())
            return "missing-" + str(self.serial)
        cid = self.fr.create_container(sid, config, sandbox_config())
        self.containers[cid] = [sid, RuntimeState.CREATED, None, sleep]
        return cid

    @rule(cid=container_ids)
    def start(self, cid: str) -> None:
        entry = self.containers.get(cid)
        if entry is None:
            with pytest.raises(ContainerNotFound):
                self.fr.start_container(cid)
        elif entry[1] is RuntimeState.RUNNING:
            self.fr.start_container(cid)  # idempotent
        elif entry[1] is RuntimeState.EXITED:
            with pytest.raises(Conflict):
                self.fr.start_container(cid)
        elif self.sandboxes[str(entry[0])] is not SandboxState.READY:
            with pytest.raises(SandboxUnusable):
                self.fr.start_container(cid)
        else:
            self.fr.start_container(cid)
            sleep = entry[3]
            if sleep == 0:
                entry[1:] = [RuntimeState.EXITED, 0, None]
            else:
                end = None if sleep is None else self.clock.monotonic() + float(str(sleep))
                entry[1:] = [RuntimeState.RUNNING, None, end]

    @rule(cid=container_ids)
    def stop(self, cid: str) -> None:
        self.fr.stop_container(cid, 5)
        entry = self.containers.get(cid)
        if entry is not None and entry[1] is RuntimeState.RUNNING:
            entry[1:] = [RuntimeState.EXITED, 0, None]

    @rule(cid=container_ids)
    def remove(self, cid: str) -> None:
        self.fr.remove_container(cid)
        if self.containers.pop(cid, None) is not None:
            self.removed.add(cid)

    @rule(seconds=st.integers(1, 10))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)
        now = self.clock.monotonic()
        for entry in self.containers.values():
            end = entry[3]
            if entry[1] is RuntimeState.RUNNING and end is not None and float(str(end)) <= now:
                entry[1:] = [RuntimeState.EXITED, 0, None]

    @invariant()
    def snapshot_matches_the_model(self) -> None:
        snap = self.fr.snapshot()
        assert {s.id: s.state for s in snap.sandboxes} == self.sandboxes
        got = {c.id: (c.sandbox_id, c.state, c.exit_code) for c in snap.containers}
        assert got == {cid: (e[0], e[1], e[2]) for cid, e in self.containers.items()}
        assert not self.removed & set(got)

    @invariant()
    def cached_views_match_fresh_ones(self) -> None:
        """The views snapshot reuses equal views built afresh from the records."""
        snap = self.fr.snapshot()
        records = self.fr._engine.containers.values()
        assert list(snap.containers) == [container_view(r) for r in records if r.managed]
        sandboxes = self.fr._engine.sandboxes.values()
        assert list(snap.sandboxes) == [sandbox_view(s) for s in sandboxes if s.managed]
        assert self.fr.list_containers() == list(snap.containers)
        assert self.fr.list_sandboxes() == list(snap.sandboxes)
        for view in snap.containers:
            assert self.fr.container_status(view.id) == view


LifecycleMachine.TestCase.settings = settings(
    max_examples=20, stateful_step_count=20, deadline=None
)
test_lifecycle_against_a_model = LifecycleMachine.TestCase


def test_container_names_are_unique_per_pod_across_sandboxes(fr: FakeRuntime) -> None:
    """As with dockershim's names: a new sandbox does not free the old attempt's name."""
    first = fr.run_sandbox(sandbox_config(attempt=0))
    fr.create_container(first, container_config(), sandbox_config(attempt=0))
    fr.stop_sandbox(first)
    second = fr.run_sandbox(sandbox_config(attempt=1))
    with pytest.raises(Conflict, match="already in use"):
        fr.create_container(second, container_config(), sandbox_config(attempt=1))
    fr.create_container(second, container_config(attempt=1), sandbox_config(attempt=1))


# -- snapshot reuses the views of unchanged objects ---------------------------------------------


def test_snapshot_reuses_views_until_an_object_changes(fr: FakeRuntime, clock: ManualClock) -> None:
    sid, short = run(fr, ["sleep", "5"], name="short")
    long = fr.create_container(sid, container_config("long", ["sleep", "100"]), sandbox_config())
    fr.start_container(long)
    first = fr.snapshot()
    clock.advance(1)
    second = fr.snapshot()
    assert second.containers is first.containers and second.sandboxes is first.sandboxes
    assert second.taken_at == first.taken_at + 1
    clock.advance(4)  # the timed exit happens in virtual time, before the next snapshot
    third = {c.id: c for c in fr.snapshot().containers}
    assert (third[short].state, third[short].exit_code) == (RuntimeState.EXITED, 0)
    assert third[short].finished_at == clock.now()
    before = {c.id: c for c in first.containers}
    assert third[long] is before[long]
    assert third[short] is not before[short]
    assert third[short].labels is before[short].labels  # one copy of the labels per object


def test_snapshot_sees_every_kind_of_change(fr: FakeRuntime) -> None:
    fr.script(command="fails", behaviour=Behaviour(fail_start="no such binary"))
    sid = fr.run_sandbox(sandbox_config())
    cid = fr.create_container(sid, container_config("bad", ["fails"]), sandbox_config())
    assert [c.state for c in fr.snapshot().containers] == [RuntimeState.CREATED]
    with pytest.raises(ContainerRuntimeError):
        fr.start_container(cid)
    (bad,) = fr.snapshot().containers
    assert (bad.exit_code, bad.reason, bad.message) == (128, "ContainerCannotRun", "no such binary")
    assert fr.container_status(cid) is bad
    fr.stop_sandbox(sid)
    assert [s.state for s in fr.snapshot().sandboxes] == [SandboxState.NOTREADY]
    assert fr.sandbox_status(sid).state is SandboxState.NOTREADY
    fr.remove_container(cid)
    assert fr.snapshot().containers == ()
    fr.remove_sandbox(sid)
    assert fr.snapshot().sandboxes == () and fr.list_sandboxes() == []


def test_a_reused_snapshot_still_is_a_call_and_can_fail(fr: FakeRuntime) -> None:
    run(fr)
    fr.snapshot()
    count = fr.call_count("snapshot")
    fr.fail_next("snapshot", error=RuntimeUnavailable("down"))
    with pytest.raises(RuntimeUnavailable, match="down"):
        fr.snapshot()
    assert len(fr.snapshot().containers) == 1
    assert fr.call_count("snapshot") == count + 2


def test_unmanaged_objects_stay_out_of_a_cached_snapshot(fr: FakeRuntime) -> None:
    run(fr)
    cached = fr.snapshot()
    fr.add_unmanaged_container("foreign")
    fr.add_unmanaged_sandbox("foreign")
    again = fr.snapshot()
    assert [c.id for c in again.containers] == [c.id for c in cached.containers]
    assert [s.id for s in again.sandboxes] == [s.id for s in cached.sandboxes]


def test_the_exit_event_is_made_only_for_a_waiter(clock: ManualClock) -> None:
    fr = FakeRuntime(clock)
    fr.pull(IMAGE)
    _, cid = run(fr, ["sleep", "100"])
    assert fr._engine.containers[cid].exited is None
    fr.stop_container(cid, 3)  # a bare sleep does not trap TERM: killed after the grace period
    assert fr.signals(cid) == ("TERM", "KILL")
    assert fr.container_status(cid).exit_code == 137
    exited = fr._engine.containers[cid].exited
    assert exited is not None and exited.is_set()


def test_an_exit_during_the_grace_period_ends_the_wait(clock: ManualClock) -> None:
    fr = FakeRuntime(clock)
    fr.pull(IMAGE)
    fr.script(command="slow", behaviour=Behaviour(exit_code=0, after=2, traps_term=False))
    _, cid = run(fr, ["slow"])
    fr.stop_container(cid, 10)
    assert fr.signals(cid) == ("TERM",)  # exited by itself at 2 s: never killed
    status = fr.container_status(cid)
    assert (status.exit_code, status.reason) == (0, "Completed")
    exited = fr._engine.containers[cid].exited
    assert exited is not None and exited.is_set()


def test_the_docs_configmap_volume_pod_lists_the_keys(tmp_path: Path) -> None:
    """``ls /etc/config/`` of a ConfigMap volume prints its keys, as the docs show."""
    text = (CORPUS / "volumes-configmap-ls.yaml").read_text()
    with FakeNode(tmp_path) as node:
        node.apply(text)
        node.run_until(lambda: node.status("dapi-test-pod").phase == "Succeeded", timeout=60)
        runtime = node.kubelet._rooms.runtime
        (container,) = runtime.list_containers()
        assert b"".join(runtime.logs(container.id)) == b"SPECIAL_LEVEL\nSPECIAL_TYPE\n"


def test_files_written_into_an_empty_dir_are_seen_by_the_pods_other_containers(
    tmp_path: Path,
) -> None:
    """The docs' startup coordination: the sidecar writes /config/app.conf into the shared
    emptyDir, the app ``cat``s it. A write under a hostPath mount stays in the container."""
    text = (CORPUS / "sidecars-startup-coordination.yaml").read_text()
    host = tmp_path / "host"
    host.mkdir()
    text = (
        text.replace(
            "  volumes:\n",
            "  volumes:\n  - name: host\n    hostPath: {path: " + str(host) + "}\n",
        )
        .replace(
            'echo "greeting=hello" > /config/app.conf;',
            'echo "greeting=hello" > /config/app.conf; echo x > /host/x;',
        )
        .replace(
            "    volumeMounts:\n    - name: config\n      mountPath: /config\n  containers:",
            "    volumeMounts:\n    - name: config\n      mountPath: /config\n"
            "    - name: host\n      mountPath: /host\n  containers:",
        )
    )
    assert "echo x > /host/x" in text and "mountPath: /host" in text and str(host) in text
    config = KubeletConfig(allowed_host_paths=(str(host),))
    with FakeNode(tmp_path / "node", config=config) as node:
        node.apply(text)
        node.run_until(
            lambda: node.status("startup-coordination-example").phase == "Running", timeout=60
        )
        runtime = node.kubelet._rooms.runtime
        (app,) = [c for c in runtime.list_containers() if c.name.endswith("main-app")]
        assert b"".join(runtime.logs(app.id)) == b"greeting=hello\n"
    assert not (host / "x").exists()
