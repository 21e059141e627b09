"""The pure planner on native sidecars (restartable init containers)."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore import Pod
from kubecore._contract.observed import ObservedPod
from kubecore._planner.actions import KillReason, PodActions, PodHistory, ProbeState
from kubecore._planner.plan import compute_pod_actions
from kubecore.runtime import RuntimeContainer, RuntimeState
from kubecore.v1 import Container, ExecAction, Probe
from tests.builders import BASE_POD, NOW, T0, crash, dead, sandbox, with_spec
from tests.builders import observed_ctr as ctr

STARTUP = Probe(exec=ExecAction(("check",)))
SIDECAR_POD = with_spec(
    BASE_POD,
    init_containers=(
        Container("log", "busybox:1.36", restart_policy="Always"),
        Container("setup", "busybox:1.36"),
        Container("proxy", "busybox:1.36", restart_policy="Always", startup_probe=STARTUP),
    ),
)
LOG, SETUP, PROXY = 0, 1, 2


NO_HISTORY = PodHistory()


def observed(*containers: RuntimeContainer) -> ObservedPod:
    return ObservedPod(sandboxes=(sandbox(SIDECAR_POD),), containers=containers)


def c(name: str, **kw: Any) -> RuntimeContainer:
    return ctr(name, SIDECAR_POD, **kw)


def gone(name: str, code: int = 0, **kw: Any) -> RuntimeContainer:
    return dead(name, code, pod=SIDECAR_POD, **kw)


def plan(obs: ObservedPod, history: PodHistory = NO_HISTORY, pod: Pod = SIDECAR_POD) -> PodActions:
    return compute_pod_actions(pod, obs, history, NOW)


def test_the_first_sidecar_starts_first() -> None:
    actions = plan(observed())
    assert actions.next_init_container.index == LOG


def test_a_running_sidecar_without_startup_probe_lets_the_next_start() -> None:
    actions = plan(observed(c("log", created=T0)))
    assert actions.next_init_container.index == SETUP


def test_the_next_waits_for_a_sidecar_startup_probe() -> None:
    obs = observed(c("log", created=T0), gone("setup", created=T0 + 1), c("proxy", created=T0 + 2))
    actions = plan(obs)
    assert actions.next_init_container is None and not actions.containers_to_start
    started = PodHistory(probes={"proxy-0": ProbeState(started=True)})
    assert [s.index for s in plan(obs, started).containers_to_start] == [0, 1]


def test_a_failed_startup_probe_restarts_the_sidecar_at_the_frontier() -> None:
    obs = observed(c("log", created=T0), gone("setup", created=T0 + 1), c("proxy", created=T0 + 2))
    failed = PodHistory(probes={"proxy-0": ProbeState(liveness_failed=True, startup_failed=True)})
    actions = plan(obs, failed)
    assert [(k.name, k.reason) for k in actions.containers_to_kill] == [
        ("proxy", KillReason.STARTUP_FAILED)
    ]
    assert actions.next_init_container.index == PROXY
    assert actions.next_init_container.restart_count == 1


def test_an_exited_sidecar_before_the_frontier_restarts_beside_the_running_init() -> None:
    obs = observed(gone("log", 1, created=T0), c("setup", created=T0 + 1))
    actions = plan(obs)
    assert [s.index for s in actions.sidecars_to_start] == [LOG]
    assert actions.next_init_container is None


def test_an_exited_sidecar_waits_out_its_crash_back_off() -> None:
    obs = observed(
        gone("log", 1, created=T0),
        gone("setup", created=T0 + 1),
        c("proxy", created=T0 + 2),
        c("app", created=T0 + 3),
        c("sidecar", created=T0 + 3),
    )
    actions = plan(obs, PodHistory(crash_backoff={"log": crash()}))
    assert not actions.sidecars_to_start
    assert [(w.name, w.reason) for w in actions.waiting] == [("log", "CrashLoopBackOff")]


def test_a_running_pod_with_sidecars_is_steady() -> None:
    obs = observed(
        c("log", created=T0),
        gone("setup", created=T0 + 1),
        c("proxy", created=T0 + 2),
        c("app", created=T0 + 3),
        c("sidecar", created=T0 + 3),
    )
    assert plan(obs).is_noop


@given(
    policy=st.sampled_from(["Always", "OnFailure", "Never"]),
    code=st.integers(0, 255),
    app_running=st.booleans(),
)
def test_an_exited_sidecar_never_fails_the_pod_and_is_started_again(
    policy: str, code: int, app_running: bool
) -> None:
    pod = with_spec(SIDECAR_POD, restart_policy=policy)
    apps = (
        (c("proxy", created=T0 + 2), c("app", created=T0 + 3), c("sidecar", created=T0 + 3))
        if app_running
        else ()
    )
    obs = observed(gone("log", code, created=T0), gone("setup", created=T0 + 1), *apps)
    if not app_running:
        obs = attrs.evolve(obs, containers=obs.containers[:1])
    actions = plan(obs, pod=pod)
    assert not actions.pod_failed and not actions.terminal
    starts = [s.index for s in actions.sidecars_to_start]
    init = actions.next_init_container
    assert starts == [LOG] or (init is not None and init.index == LOG)


@given(policy=st.sampled_from(["OnFailure", "Never"]), code=st.sampled_from([0]))
def test_finished_apps_end_the_pod_and_stop_the_sidecars(policy: str, code: int) -> None:
    pod = with_spec(SIDECAR_POD, restart_policy=policy)
    obs = observed(
        c("log", created=T0),
        gone("setup", created=T0 + 1),
        c("proxy", created=T0 + 2),
        gone("app", code, created=T0 + 3),
        gone("sidecar", code, created=T0 + 3),
    )
    actions = plan(obs, pod=pod)
    assert actions.terminal and actions.kill_pod
    assert actions.kill_pod_reason is KillReason.POD_TERMINAL
    assert not actions.sidecars_to_start


def test_a_sidecar_in_unknown_state_is_killed_and_started_again() -> None:
    obs = observed(
        c("log", created=T0, state=RuntimeState.UNKNOWN),
        gone("setup", created=T0 + 1),
        c("proxy", created=T0 + 2),
        c("app", created=T0 + 3),
        c("sidecar", created=T0 + 3),
    )
    actions = plan(obs)
    assert [k.name for k in actions.containers_to_kill] == ["log"]
    assert [s.index for s in actions.sidecars_to_start] == [LOG]


# --- a property over init sequences with sidecars --------------------------------------------

INIT_STATES = st.sampled_from(["running", "started", "exited0", "exited1", "created"])


Case = tuple[Pod, ObservedPod, PodHistory, int, str]


def init_case(
    kinds: str, policy: str, states: list[str]
) -> tuple[Pod, ObservedPod, PodHistory, int, str]:
    """``kinds``: one letter per init container, ``s`` a sidecar, ``p`` a sidecar with a startup
    probe, ``r`` a regular one; ``states``: the state of each up to the frontier (the last)."""
    inits = tuple(
        Container(
            f"i{i}",
            "busybox:1.36",
            restart_policy="Always" if kind in "sp" else None,
            startup_probe=STARTUP if kind == "p" else None,
        )
        for i, kind in enumerate(kinds)
    )
    pod = with_spec(BASE_POD, init_containers=inits, restart_policy=policy)
    containers = []
    probes = {}
    for i, (container, state) in enumerate(zip(inits, states, strict=False)):
        kw: dict[str, Any] = {"created": T0 + i}
        if state in ("running", "started"):
            rc = ctr(container.name, pod, **kw)
            probes[rc.id] = ProbeState(
                started=state == "started" or container.startup_probe is None
            )
        elif state == "created":
            rc = ctr(container.name, pod, state=RuntimeState.CREATED, **kw)
        else:
            rc = dead(container.name, 0 if state == "exited0" else 1, pod=pod, **kw)
        containers.append(rc)
    observed = ObservedPod(sandboxes=(sandbox(pod),), containers=tuple(containers))
    return pod, observed, PodHistory(probes=probes), len(states) - 1, states[-1]


@st.composite
def init_sequences(draw: st.DrawFn) -> Case:
    """A pod with 1-4 init containers (each a sidecar or not, a sidecar with or without a startup
    probe), the ones before a frontier done (regular: exited 0; sidecar: started, or exited),
    the frontier in any state, nothing after it, no app container yet."""
    kinds = "".join(draw(st.lists(st.sampled_from("spr"), min_size=1, max_size=4)))
    policy = draw(st.sampled_from(["Always", "OnFailure", "Never"]))
    frontier = draw(st.integers(0, len(kinds) - 1))
    states = [
        draw(st.sampled_from(["started", "exited1"])) if kind in "sp" else "exited0"
        for kind in kinds[:frontier]
    ]
    states.append(draw(INIT_STATES))
    return init_case(kinds, policy, states)


@given(init_sequences())
@example(init_case("ssr", "Never", ["started", "exited1", "exited1"]))  # the pod fails: no restart
def test_init_sequences_with_sidecars(case: Case) -> None:
    pod, observed, history, frontier, state = case
    inits = pod.spec.init_containers
    actions = compute_pod_actions(pod, observed, history, NOW)
    at = inits[frontier]
    done = (not at.is_sidecar and state == "exited0") or (
        at.is_sidecar and (state == "started" or (state == "running" and not at.startup_probe))
    )
    # Sidecars before the frontier that do not run are started again (unless the pod fails);
    # nothing else before it.
    dead_sidecars = [
        i
        for i, c in enumerate(inits[:frontier])
        if c.is_sidecar
        and next(o for o in observed.containers if o.name == c.name).state
        is not RuntimeState.RUNNING
    ]
    fails = not at.is_sidecar and state == "exited1" and pod.spec.restart_policy == "Never"
    assert [s.index for s in actions.sidecars_to_start] == ([] if fails else dead_sidecars)
    init = actions.next_init_container
    last = frontier == len(inits) - 1
    if done:
        assert (init.index if init else None) == (None if last else frontier + 1)
        assert bool(actions.containers_to_start) == last  # the app starts once init is done
    else:
        assert not actions.containers_to_start
        failed_here = not at.is_sidecar and state == "exited1"
        if failed_here and pod.spec.restart_policy == "Never":
            assert actions.pod_failed and init is None
        elif state in ("exited1", "created") or (at.is_sidecar and state == "exited0"):
            assert init is not None and init.index == frontier  # started again
        else:
            assert init is None  # it runs: wait for it (or for its startup probe)
    assert actions.pod_failed == fails  # a sidecar never fails the pod
