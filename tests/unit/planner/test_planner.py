"""Table-driven tests of the pure planner, starting with "everything is fine: do nothing"."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from kubecore import Pod
from kubecore._contract.labels import (
    CONTAINER_NAME_LABEL,
    RESTART_COUNT_ANNOTATION,
    SANDBOX_HASH_ANNOTATION,
)
from kubecore._contract.observed import ObservedPod
from kubecore._planner.actions import (
    BackoffEntry,
    ContainerToStart,
    KillReason,
    PodHistory,
    ProbeState,
)
from kubecore._planner.plan import compute_pod_actions
from kubecore.runtime import RuntimeState
from tests.builders import (
    BASE_POD,
    INIT_POD,
    NOW,
    SB,
    T0,
    crash,
    dead,
    healthy,
    sandbox,
    swap,
    with_spec,
)
from tests.builders import observed_ctr as ctr
from tests.unit.planner.support import expect, plain

EXPIRED = BackoffEntry(delay=20.0, until=NOW - 1, last_failure=NOW - 21)
H = PodHistory()
K = KillReason

# --- the table --------------------------------------------------------------------------------

CASES: list[tuple[str, Pod, ObservedPod, PodHistory, dict[str, Any]]] = [
    # everything is fine: do nothing
    ("everything is fine", BASE_POD, healthy(), H, expect()),
    (
        "fine under Never",
        with_spec(BASE_POD, restart_policy="Never"),
        healthy(),
        H,
        expect(),
    ),
    (
        "fine under OnFailure",
        with_spec(BASE_POD, restart_policy="OnFailure"),
        healthy(),
        H,
        expect(),
    ),
    ("fine with init containers done", INIT_POD, healthy(INIT_POD), H, expect()),
    ("fine with an absent hash", BASE_POD, swap(healthy(), ctr("app", hash="")), H, expect()),
    (
        "fine with an old dead instance",
        BASE_POD,
        swap(
            healthy(),
            ctr("app", restart=1, created=T0 + 10),
            dead("app", 1, restart=0, created=T0 + 1),
        ),
        H,
        expect(),
    ),
    (
        "fine while not ready (readiness never restarts)",
        BASE_POD,
        healthy(),
        PodHistory(probes={"app-0": ProbeState(ready=False, started=True)}),
        expect(),
    ),
    (
        "fine: backoff only matters for starts",
        BASE_POD,
        healthy(),
        PodHistory(crash_backoff={"app": crash()}, image_backoff={"app": crash()}),
        expect(),
    ),
    # sandboxes
    (
        "no sandbox: create one and start everything",
        BASE_POD,
        ObservedPod(),
        H,
        expect(create_sandbox=True, containers_to_start=(0, 1), restart_counts=(0, 0)),
    ),
    (
        "dead sandbox: kill the pod, new attempt, restart counts go on",
        BASE_POD,
        attrs.evolve(healthy(), sandboxes=(sandbox(ready=False),)),
        H,
        expect(
            kill_pod=True,
            kill_pod_reason=K.SANDBOX_DEAD,
            create_sandbox=True,
            attempt=1,
            containers_to_start=(0, 1),
            restart_counts=(1, 1),
        ),
    ),
    (
        "dead sandbox, nothing runs: no kill, the empty sandbox is removed",
        BASE_POD,
        ObservedPod(sandboxes=(sandbox(ready=False, attempt=3),)),
        H,
        expect(
            create_sandbox=True,
            attempt=4,
            containers_to_start=(0, 1),
            restart_counts=(0, 0),
            sandboxes_to_remove=(SB,),
        ),
    ),
    (
        "changed sandbox (ports): kill the pod and recreate",
        BASE_POD,
        attrs.evolve(
            healthy(),
            sandboxes=(
                attrs.evolve(sandbox(), annotations={SANDBOX_HASH_ANNOTATION: "0123456789abcdef"}),
            ),
        ),
        H,
        expect(
            kill_pod=True,
            kill_pod_reason=K.SANDBOX_CHANGED,
            create_sandbox=True,
            attempt=1,
            containers_to_start=(0, 1),
            restart_counts=(1, 1),
        ),
    ),
    (
        "the newest ready sandbox is the pod's; an empty older one is removed",
        BASE_POD,
        attrs.evolve(
            healthy(),
            sandboxes=(sandbox(id="sb-0", ready=False, created=T0 - 100), sandbox()),
        ),
        H,
        expect(sandboxes_to_remove=("sb-0",)),
    ),
    (
        "an older sandbox holding a container's newest instance is kept",
        with_spec(BASE_POD, restart_policy="OnFailure"),
        ObservedPod(
            sandboxes=(sandbox(id="sb-0", ready=False, created=T0 - 100), sandbox()),
            containers=(dead("app", 0, sandbox_id="sb-0"), ctr("sidecar", restart=1)),
        ),
        H,
        expect(),
    ),
    (
        "a container running outside the pod's sandbox is killed and started in it",
        BASE_POD,
        ObservedPod(
            sandboxes=(sandbox(id="sb-0", ready=False, created=T0 - 100), sandbox()),
            containers=(ctr("app", sandbox_id="sb-0"), ctr("sidecar", restart=1)),
        ),
        H,
        expect(
            containers_to_kill=(("app-0", K.SANDBOX_CHANGED),),
            containers_to_start=(0,),
            restart_counts=(1,),
        ),
    ),
    # containers
    (
        "duplicates: keep the newest",
        BASE_POD,
        swap(healthy(), ctr("app", id="old"), ctr("app", id="new", restart=1, created=T0 + 9)),
        H,
        expect(containers_to_kill=(("old", K.DUPLICATE),)),
    ),
    (
        "spec changed: kill and start",
        BASE_POD,
        swap(healthy(), ctr("app", hash="0000000000000000")),
        H,
        expect(
            containers_to_kill=(("app-0", K.SPEC_CHANGED),),
            containers_to_start=(0,),
            restart_counts=(1,),
        ),
    ),
    (
        "spec changed restarts even under Never and in crash backoff",
        with_spec(BASE_POD, restart_policy="Never"),
        swap(healthy(), ctr("app", hash="0000000000000000")),
        PodHistory(crash_backoff={"app": crash()}),
        expect(
            containers_to_kill=(("app-0", K.SPEC_CHANGED),),
            containers_to_start=(0,),
            restart_counts=(1,),
        ),
    ),
    (
        "not in the spec: kill",
        BASE_POD,
        swap(healthy(), ctr("ghost")),
        H,
        expect(containers_to_kill=(("ghost-0", K.NOT_IN_SPEC),)),
    ),
    (
        "liveness failed: kill and restart",
        BASE_POD,
        healthy(),
        PodHistory(probes={"app-0": ProbeState(liveness_failed=True)}),
        expect(
            containers_to_kill=(("app-0", K.LIVENESS_FAILED),),
            containers_to_start=(0,),
            restart_counts=(1,),
        ),
    ),
    (
        "liveness failed under OnFailure: kill and restart",
        with_spec(BASE_POD, restart_policy="OnFailure"),
        healthy(),
        PodHistory(probes={"app-0": ProbeState(liveness_failed=True)}),
        expect(
            containers_to_kill=(("app-0", K.LIVENESS_FAILED),),
            containers_to_start=(0,),
            restart_counts=(1,),
        ),
    ),
    (
        "startup probe failed: kill (as a startup failure) and restart",
        BASE_POD,
        healthy(),
        PodHistory(
            probes={"app-0": ProbeState(liveness_failed=True, startup_failed=True)},
        ),
        expect(
            containers_to_kill=(("app-0", K.STARTUP_FAILED),),
            containers_to_start=(0,),
            restart_counts=(1,),
        ),
    ),
    (
        "liveness failed under Never: kill only",
        with_spec(BASE_POD, restart_policy="Never"),
        healthy(),
        PodHistory(probes={"app-0": ProbeState(liveness_failed=True)}),
        expect(containers_to_kill=(("app-0", K.LIVENESS_FAILED),)),
    ),
    (
        "liveness failed in crash backoff: kill, then wait",
        BASE_POD,
        healthy(),
        PodHistory(
            probes={"app-0": ProbeState(liveness_failed=True)}, crash_backoff={"app": crash()}
        ),
        expect(
            containers_to_kill=(("app-0", K.LIVENESS_FAILED),),
            waiting=(("app", "CrashLoopBackOff"),),
        ),
    ),
    (
        "postStart failed: kill",
        BASE_POD,
        healthy(),
        PodHistory(post_start_failed=frozenset({"sidecar-0"})),
        expect(containers_to_kill=(("sidecar-0", K.POST_START_FAILED),)),
    ),
    (
        "unknown state: kill and restart",
        BASE_POD,
        swap(healthy(), ctr("app", state=RuntimeState.UNKNOWN)),
        H,
        expect(
            containers_to_kill=(("app-0", K.UNKNOWN_STATE),),
            containers_to_start=(0,),
            restart_counts=(1,),
        ),
    ),
    # dead containers and restart policy
    (
        "dead, Always, exit 0: restart",
        BASE_POD,
        swap(healthy(), dead("app", 0, restart=2)),
        H,
        expect(containers_to_start=(0,), restart_counts=(3,)),
    ),
    (
        "dead, OnFailure, exit 0: stay dead",
        with_spec(BASE_POD, restart_policy="OnFailure"),
        swap(healthy(), dead("app", 0)),
        H,
        expect(),
    ),
    (
        "dead, OnFailure, exit 1: restart",
        with_spec(BASE_POD, restart_policy="OnFailure"),
        swap(healthy(), dead("app", 1)),
        H,
        expect(containers_to_start=(0,), restart_counts=(1,)),
    ),
    (
        "dead, OnFailure, no exit code: a failure, restart",
        with_spec(BASE_POD, restart_policy="OnFailure"),
        swap(healthy(), attrs.evolve(dead("app", 0), exit_code=None)),
        H,
        expect(containers_to_start=(0,), restart_counts=(1,)),
    ),
    (
        "dead, Never, exit 1: stay dead",
        with_spec(BASE_POD, restart_policy="Never"),
        swap(healthy(), dead("app", 1)),
        H,
        expect(),
    ),
    (
        "judged from the newest dead instance",
        with_spec(BASE_POD, restart_policy="OnFailure"),
        swap(
            healthy(),
            dead("app", 1, restart=0, created=T0 + 1),
            dead("app", 0, restart=1, created=T0 + 20),
        ),
        H,
        expect(),
    ),
    (
        "created but never started: started in its place (not a restart), even under Never",
        with_spec(BASE_POD, restart_policy="Never"),
        swap(healthy(), ctr("app", state=RuntimeState.CREATED)),
        H,
        expect(containers_to_start=(0,), restart_counts=(0,)),
    ),
    (
        "a failed start (ContainerCannotRun) follows the policy",
        with_spec(BASE_POD, restart_policy="Never"),
        swap(
            healthy(),
            ctr("app", state=RuntimeState.CREATED, exit_code=127, reason="ContainerCannotRun"),
        ),
        H,
        expect(),
    ),
    (
        "crash backoff active: CrashLoopBackOff, no start",
        BASE_POD,
        swap(healthy(), dead("app", 1)),
        PodHistory(crash_backoff={"app": crash()}),
        expect(waiting=(("app", "CrashLoopBackOff"),)),
    ),
    (
        "crash backoff expired: restart",
        BASE_POD,
        swap(healthy(), dead("app", 1)),
        PodHistory(crash_backoff={"app": EXPIRED}),
        expect(containers_to_start=(0,), restart_counts=(1,)),
    ),
    (
        "missing container: start",
        BASE_POD,
        ObservedPod(sandboxes=(sandbox(),), containers=(ctr("sidecar"),)),
        H,
        expect(containers_to_start=(0,), restart_counts=(0,)),
    ),
    (
        "missing container in image backoff: ImagePullBackOff",
        BASE_POD,
        ObservedPod(sandboxes=(sandbox(),), containers=(ctr("sidecar"),)),
        PodHistory(image_backoff={"app": crash()}),
        expect(waiting=(("app", "ImagePullBackOff"),)),
    ),
    (
        "missing container ignores crash backoff",
        BASE_POD,
        ObservedPod(sandboxes=(sandbox(),), containers=(ctr("sidecar"),)),
        PodHistory(crash_backoff={"app": crash()}),
        expect(containers_to_start=(0,), restart_counts=(0,)),
    ),
    # init containers
    (
        "init: none ran yet, start the first",
        INIT_POD,
        ObservedPod(sandboxes=(sandbox(INIT_POD),)),
        H,
        expect(
            next_init_container=0,
            waiting=(("app", "PodInitializing"), ("sidecar", "PodInitializing")),
        ),
    ),
    (
        "init: one at a time",
        INIT_POD,
        ObservedPod(sandboxes=(sandbox(INIT_POD),), containers=(ctr("setup", INIT_POD),)),
        H,
        expect(waiting=(("app", "PodInitializing"), ("sidecar", "PodInitializing"))),
    ),
    (
        "init: the next after a success",
        INIT_POD,
        ObservedPod(sandboxes=(sandbox(INIT_POD),), containers=(dead("setup", 0, pod=INIT_POD),)),
        H,
        expect(
            next_init_container=1,
            waiting=(("app", "PodInitializing"), ("sidecar", "PodInitializing")),
        ),
    ),
    (
        "init: all done, start the app containers",
        INIT_POD,
        ObservedPod(
            sandboxes=(sandbox(INIT_POD),),
            containers=(dead("setup", 0, pod=INIT_POD), dead("migrate", 0, pod=INIT_POD)),
        ),
        H,
        expect(containers_to_start=(0, 1), restart_counts=(0, 0)),
    ),
    (
        "init: a failure is restarted under Always",
        INIT_POD,
        ObservedPod(
            sandboxes=(sandbox(INIT_POD),),
            containers=(dead("setup", 0, pod=INIT_POD), dead("migrate", 2, pod=INIT_POD)),
        ),
        H,
        expect(
            next_init_container=1,
            init_restart_count=1,
            waiting=(("app", "PodInitializing"), ("sidecar", "PodInitializing")),
        ),
    ),
    (
        "init: a failure in crash backoff waits",
        INIT_POD,
        ObservedPod(
            sandboxes=(sandbox(INIT_POD),),
            containers=(dead("setup", 1, pod=INIT_POD),),
        ),
        PodHistory(crash_backoff={"setup": crash()}),
        expect(
            waiting=(
                ("setup", "CrashLoopBackOff"),
                ("app", "PodInitializing"),
                ("sidecar", "PodInitializing"),
            )
        ),
    ),
    (
        "init: a failure under Never fails the pod",
        with_spec(INIT_POD, restart_policy="Never"),
        ObservedPod(
            sandboxes=(sandbox(INIT_POD),),
            containers=(dead("setup", 1, pod=INIT_POD),),
        ),
        H,
        expect(
            kill_pod=True,
            kill_pod_reason=K.POD_TERMINAL,
            pod_failed=True,
            terminal=True,
        ),
    ),
    (
        "init: progress counts only the current sandbox",
        INIT_POD,
        ObservedPod(
            sandboxes=(sandbox(INIT_POD, "sb-0", ready=False, created=T0 - 100), sandbox(INIT_POD)),
            containers=(
                dead("setup", 0, pod=INIT_POD, sandbox_id="sb-0", created=T0 - 90),
                dead("migrate", 0, pod=INIT_POD, sandbox_id="sb-0", created=T0 - 80),
            ),
        ),
        H,
        expect(
            next_init_container=0,
            init_restart_count=1,
            waiting=(("app", "PodInitializing"), ("sidecar", "PodInitializing")),
        ),
    ),
    (
        "init: a new sandbox starts with the first init container",
        INIT_POD,
        attrs.evolve(healthy(INIT_POD), sandboxes=(sandbox(INIT_POD, ready=False),)),
        H,
        expect(
            kill_pod=True,
            kill_pod_reason=K.SANDBOX_DEAD,
            create_sandbox=True,
            attempt=1,
            next_init_container=0,
            init_restart_count=1,
            waiting=(("app", "PodInitializing"), ("sidecar", "PodInitializing")),
        ),
    ),
    (
        "init: an unknown init container is killed even once init is done",
        INIT_POD,
        swap(healthy(INIT_POD), ctr("setup", INIT_POD, state=RuntimeState.UNKNOWN)),
        H,
        expect(containers_to_kill=(("setup-0", K.UNKNOWN_STATE),)),
    ),
    # terminal pods and new sandboxes
    (
        "Never, all exited: terminal and failed, the sandbox goes",
        with_spec(BASE_POD, restart_policy="Never"),
        swap(healthy(), dead("app", 0), dead("sidecar", 3)),
        H,
        expect(kill_pod=True, kill_pod_reason=K.POD_TERMINAL, pod_failed=True, terminal=True),
    ),
    (
        "OnFailure, all succeeded: terminal",
        with_spec(BASE_POD, restart_policy="OnFailure"),
        swap(healthy(), dead("app", 0), dead("sidecar", 0)),
        H,
        expect(kill_pod=True, kill_pod_reason=K.POD_TERMINAL, terminal=True),
    ),
    (
        "terminal and already torn down: nothing to do",
        with_spec(BASE_POD, restart_policy="OnFailure"),
        ObservedPod(
            sandboxes=(sandbox(ready=False),), containers=(dead("app", 0), dead("sidecar", 0))
        ),
        H,
        expect(terminal=True),
    ),
    (
        "new sandbox under OnFailure: succeeded containers are not started again",
        with_spec(BASE_POD, restart_policy="OnFailure"),
        ObservedPod(sandboxes=(sandbox(ready=False),), containers=(dead("app", 0), ctr("sidecar"))),
        H,
        expect(
            kill_pod=True,
            kill_pod_reason=K.SANDBOX_DEAD,
            create_sandbox=True,
            attempt=1,
            containers_to_start=(1,),
            restart_counts=(1,),
        ),
    ),
    (
        "new sandbox: crash backoff still applies",
        BASE_POD,
        ObservedPod(
            sandboxes=(sandbox(ready=False),), containers=(dead("app", 1), dead("sidecar"))
        ),
        PodHistory(crash_backoff={"app": crash()}),
        expect(
            create_sandbox=True,
            attempt=1,
            containers_to_start=(1,),
            restart_counts=(1,),
            waiting=(("app", "CrashLoopBackOff"),),
        ),
    ),
    (
        "Never with a dead sandbox after containers ran: no new sandbox",
        with_spec(BASE_POD, restart_policy="Never"),
        ObservedPod(sandboxes=(sandbox(ready=False),), containers=(ctr("app"), dead("sidecar", 0))),
        H,
        expect(kill_pod=True, kill_pod_reason=K.SANDBOX_DEAD, sandbox_id=""),
    ),
]


@pytest.mark.parametrize(
    ("pod", "observed", "history", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_compute_pod_actions(
    pod: Pod, observed: ObservedPod, history: PodHistory, expected: dict[str, Any]
) -> None:
    assert plain(compute_pod_actions(pod, observed, history, NOW)) == expected


def test_crash_loop_message_names_delay_container_and_pod() -> None:
    actions = compute_pod_actions(
        BASE_POD,
        swap(healthy(), dead("app", 1)),
        PodHistory(crash_backoff={"app": crash(delay=80.0)}),
        NOW,
    )
    (waiting,) = actions.waiting
    assert (
        waiting.message == "back-off 1m20s restarting failed container=app pod=web_default(uid-1)"
    )


def test_image_backoff_message_names_the_image() -> None:
    actions = compute_pod_actions(
        BASE_POD,
        ObservedPod(sandboxes=(sandbox(),), containers=(ctr("sidecar"),)),
        PodHistory(image_backoff={"app": crash()}),
        NOW,
    )
    assert actions.waiting[0].message == 'Back-off pulling image "nginx:1.25"'


def test_kill_order_does_not_depend_on_observation_order() -> None:
    observed = swap(healthy(), ctr("zz"), ctr("aa"), ctr("app", hash="0000000000000000"))
    backwards = attrs.evolve(observed, containers=observed.containers[::-1])
    first = compute_pod_actions(BASE_POD, observed, H, NOW)
    assert first == compute_pod_actions(BASE_POD, backwards, H, NOW)
    assert [k.name for k in first.containers_to_kill] == ["aa", "app", "zz"]


def test_container_name_comes_from_the_label() -> None:
    relabelled = attrs.evolve(ctr("app"), name="k8s_app_web_default_uid-1_0")
    assert relabelled.labels[CONTAINER_NAME_LABEL] == "app"
    observed = ObservedPod(sandboxes=(sandbox(),), containers=(relabelled, ctr("sidecar")))
    assert compute_pod_actions(BASE_POD, observed, H, NOW).is_noop


def test_restart_count_falls_back_to_attempt_without_annotation() -> None:
    record = dead("app", 1, restart=4)
    annotations = {k: v for k, v in record.annotations.items() if k != RESTART_COUNT_ANNOTATION}
    actions = compute_pod_actions(
        BASE_POD, swap(healthy(), attrs.evolve(record, annotations=annotations)), H, NOW
    )
    assert actions.containers_to_start == (ContainerToStart(0, restart_count=5, after_crash=True),)


def test_steady_state_returns_a_shared_noop_value() -> None:
    observed = healthy()
    first = compute_pod_actions(BASE_POD, observed, H, NOW)
    assert first.is_noop and first.sandbox_id == SB
    assert compute_pod_actions(BASE_POD, observed, H, NOW) is first


def test_planner_reads_no_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    def forbidden() -> float:
        raise AssertionError("the planner must not read the clock")

    monkeypatch.setattr(time, "time", forbidden)
    monkeypatch.setattr(time, "monotonic", forbidden)
    for _, pod, observed, history, _ in CASES:
        compute_pod_actions(pod, observed, history, NOW)


def test_under_never_an_unstarted_newer_instance_does_not_run_the_container_again() -> None:
    pod = with_spec(BASE_POD, restart_policy="Never")
    observed = ObservedPod(
        sandboxes=(sandbox(pod),),
        containers=(
            dead("app", 1, pod=pod, id="app-run", created=T0 + 1),
            ctr("app", pod, id="app-unstarted", state=RuntimeState.CREATED, created=T0 + 2),
            dead("sidecar", 0, pod=pod, id="sidecar-run", created=T0 + 1),
        ),
    )
    actions = compute_pod_actions(pod, observed, PodHistory(), NOW)
    assert actions.containers_to_start == ()
    assert actions.terminal and actions.pod_failed


def test_a_start_says_whether_it_follows_a_crash() -> None:
    """The plan decides whether a start grows the crash back-off: after a death (or a start that
    never came up) it does; a first start or a spec change (the instance still runs) does not."""
    first = compute_pod_actions(BASE_POD, ObservedPod(), H, NOW)
    assert [s.after_crash for s in first.containers_to_start] == [False, False]
    crashed = compute_pod_actions(BASE_POD, swap(healthy(), dead("app", 1)), H, NOW)
    assert crashed.containers_to_start == (ContainerToStart(0, restart_count=1, after_crash=True),)
    changed = compute_pod_actions(
        BASE_POD, swap(healthy(), ctr("app", hash="0000000000000000")), H, NOW
    )
    assert changed.containers_to_start == (ContainerToStart(0, restart_count=1),)
    unstarted = ctr("app", state=RuntimeState.CREATED)
    retried = compute_pod_actions(BASE_POD, swap(healthy(), unstarted), H, NOW)
    # in its place: the unstarted instance goes, and its restart count is not spent
    assert retried.containers_to_start == (
        ContainerToStart(0, restart_count=0, after_crash=True, replaces=unstarted.id),
    )


def test_an_init_container_start_carries_its_restart_count() -> None:
    observed = ObservedPod(
        sandboxes=(sandbox(INIT_POD),), containers=(dead("setup", 1, pod=INIT_POD, restart=2),)
    )
    actions = compute_pod_actions(INIT_POD, observed, H, NOW)
    assert actions.next_init_container == ContainerToStart(0, restart_count=3, after_crash=True)


def test_the_planner_keeps_its_per_pod_facts_on_the_pod() -> None:
    import importlib
    import pkgutil

    import kubecore._planner as planner

    pod = attrs.evolve(BASE_POD)
    compute_pod_actions(pod, healthy(pod), H, NOW)
    assert "planner" in pod.derived
    for part in pkgutil.iter_modules(planner.__path__):
        module = importlib.import_module(f"{planner.__name__}.{part.name}")
        assert not any(
            isinstance(value, dict) and value
            for name, value in vars(module).items()
            if not name.startswith("__")
        ), module.__name__


def test_a_restart_count_stays_above_an_unstarted_instance_set_aside_under_never() -> None:
    # A hypothesis counterexample (test_plans_converge): under Never, the newer never-started
    # instance of an init container is set aside (the pod is judged by the failed start before
    # it); run again in a new sandbox, the container must not reuse that instance's count.
    pod = with_spec(INIT_POD, restart_policy="Never")
    old = "sb-0"
    observed = ObservedPod(
        sandboxes=(sandbox(pod, old, ready=False, created=T0 - 10), sandbox(pod)),
        containers=(
            ctr("setup", pod, id="c-0", state=RuntimeState.CREATED, sandbox_id=old,
                exit_code=0, reason="Error", created=T0 - 9),
            ctr("setup", pod, id="c-1", state=RuntimeState.CREATED, sandbox_id=old,
                restart=1, created=T0 - 9),
        ),
    )  # fmt: skip
    actions = compute_pod_actions(pod, observed, H, NOW)
    init = actions.next_init_container
    assert init is not None and (init.index, init.restart_count) == (0, 2)


def test_a_start_an_earlier_agent_never_saw_end_is_replaced_not_counted() -> None:
    # containerd fails a start whose caller was killed (exit 128, never ran): the next agent,
    # told by its start journal, replaces that instance at its restart count instead of
    # counting a crash and leaving it beside a second one.
    never_ran = attrs.evolve(
        dead("app", 128, reason="ContainerCannotRun", id="app-cut"), started_at=None
    )
    observed = swap(healthy(), never_ran)
    cut = PodHistory(interrupted_starts=frozenset({"app-cut"}))
    replaced = compute_pod_actions(BASE_POD, observed, cut, NOW)
    assert replaced.containers_to_start == (
        ContainerToStart(
            0,
            restart_count=0,
            after_crash=True,
            replaces="app-cut",
            replaced_end="exit 128 ContainerCannotRun",
        ),
    )
    # Without the journal's word it is a start that failed: a restart, the instance kept.
    counted = compute_pod_actions(BASE_POD, observed, H, NOW)
    assert counted.containers_to_start == (ContainerToStart(0, restart_count=1, after_crash=True),)
    # One that ran (it has a start time) crashed, journal or not.
    ran = swap(healthy(), dead("app", 128, id="app-cut"))
    assert compute_pod_actions(BASE_POD, ran, cut, NOW).containers_to_start == (
        ContainerToStart(0, restart_count=1, after_crash=True),
    )
