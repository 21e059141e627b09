"""Properties of the planner for any pod and any observed state.

(a) planning is deterministic (and does not depend on the order the runtime lists things in);
(b) convergence: applying the plan to the observed state with a tiny pure simulator of the
    executor, and planning again, reaches a no-op within a few rounds, with every app container
    running exactly once in the pod's sandbox unless its restart policy says it is done.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import attrs
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubecore import Pod
from kubecore._contract.labels import (
    CONTAINER_NAME_LABEL,
    HASH_ANNOTATION,
    INIT_CONTAINER_ANNOTATION,
    RESTART_COUNT_ANNOTATION,
    SANDBOX_HASH_ANNOTATION,
)
from kubecore._contract.observed import ObservedPod
from kubecore._kuberuntime.translate import container_config, sandbox_config
from kubecore._model.spec_hash import container_hash
from kubecore._model.v1 import ContainerRestartRule, ContainerRestartRuleOnExitCodes
from kubecore._planner import plan as _planner
from kubecore._planner.actions import PodActions, PodHistory
from kubecore._planner.plan import compute_pod_actions
from kubecore._planner.restart_rules import container_should_restart, is_container_restartable
from kubecore._status.compute import compute_pod_status
from kubecore.runtime import RuntimeContainer, RuntimeSandbox, RuntimeState, SandboxState
from kubecore.testing.strategies import pods
from kubecore.v1 import Container, ObjectMeta, PodSpec

H = PodHistory()
MAX_ROUNDS = 6
KILLED = 137

# --- generated observed states --------------------------------------------------------------


def _volume_paths(pod: Pod) -> dict[str, str]:
    return {v.name: f"/vol/{v.name}" for v in pod.spec.volumes}


def _new_container(
    pod: Pod,
    name: str,
    *,
    id: str,
    sandbox_id: str,
    restart: int,
    created: float,
    state: RuntimeState,
    exit_code: int | None = None,
    reason: str = "",
) -> RuntimeContainer:
    spec = {c.name: (c, False) for c in pod.spec.containers}
    spec.update({c.name: (c, True) for c in pod.spec.init_containers})
    if name in spec:
        container, is_init = spec[name]
        config = container_config(
            pod, container, restart_count=restart, volume_paths=_volume_paths(pod), is_init=is_init
        )
        labels, annotations, image = dict(config.labels), dict(config.annotations), container.image
    else:
        labels = {CONTAINER_NAME_LABEL: name}
        annotations = {RESTART_COUNT_ANNOTATION: str(restart)}
        image = "ghost:1"
    dead = state in (RuntimeState.EXITED, RuntimeState.CREATED)
    return RuntimeContainer(
        id=id,
        sandbox_id=sandbox_id,
        name=name,
        image=image,
        state=state,
        created_at=created,
        attempt=restart,
        started_at=None if state is RuntimeState.CREATED else created,
        finished_at=created + 0.5 if dead else None,
        exit_code=exit_code if dead else None,
        reason=reason,
        labels=labels,
        annotations=annotations,
    )


def _new_sandbox(pod: Pod, id: str, attempt: int, created: float, ready: bool) -> RuntimeSandbox:
    config = sandbox_config(pod, attempt, dns=None)
    return RuntimeSandbox(
        id=id,
        name=pod.metadata.name,
        namespace=pod.metadata.namespace,
        uid=pod.uid,
        attempt=attempt,
        state=SandboxState.READY if ready else SandboxState.NOTREADY,
        created_at=created,
        ip="10.0.0.2",
        labels=dict(config.labels),
        annotations=dict(config.annotations),
    )


@st.composite
def observed_states(draw: Any, pod: Pod) -> ObservedPod:
    sandboxes = []
    for i in range(draw(st.integers(0, 3))):
        sb = _new_sandbox(
            pod,
            f"sb-{i}",
            attempt=draw(st.integers(0, 3)),
            created=float(draw(st.integers(0, 50))),
            ready=draw(st.booleans()),
        )
        if draw(st.integers(0, 5)) == 0:
            sb = attrs.evolve(sb, annotations={SANDBOX_HASH_ANNOTATION: "ffffffffffffffff"})
        sandboxes.append(sb)
    names = [c.name for c in pod.spec.containers + pod.spec.init_containers] + ["ghost"]
    sandbox_ids = [s.id for s in sandboxes] + ["sb-gone"]
    containers = []
    for i in range(draw(st.integers(0, 7))):
        state = draw(st.sampled_from(RuntimeState))
        c = _new_container(
            pod,
            draw(st.sampled_from(names)),
            id=f"c-{i}",
            sandbox_id=draw(st.sampled_from(sandbox_ids)),
            restart=draw(st.integers(0, 3)),
            created=float(draw(st.integers(0, 60))),
            state=state,
            exit_code=draw(st.sampled_from((0, 1, KILLED, None))),
            reason=draw(st.sampled_from(("", "Error", "ContainerCannotRun"))),
        )
        hash_choice = draw(st.sampled_from(("keep", "keep", "wrong", "absent")))
        annotations = dict(c.annotations)
        if hash_choice == "wrong":
            annotations[HASH_ANNOTATION] = "0000000000000000"
        elif hash_choice == "absent":
            annotations.pop(HASH_ANNOTATION, None)
        if draw(st.integers(0, 4)) == 0:
            annotations.pop(INIT_CONTAINER_ANNOTATION, None)
        containers.append(attrs.evolve(c, annotations=annotations))
    return ObservedPod(sandboxes=tuple(sandboxes), containers=tuple(containers))


@st.composite
def small_pods(draw: Any) -> Pod:
    """Few, fixed names (so observed containers collide often) and cheap specs."""
    apps = draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3, unique=True))
    inits = draw(st.lists(st.sampled_from(("i0", "i1")), max_size=2, unique=True))
    image = st.sampled_from(("busybox:1.36", "nginx:1.25"))

    def own_restart(*policies: str | None) -> dict[str, Any]:
        policy = draw(st.sampled_from(policies))
        if policy is None:
            return {}
        rules = draw(st.lists(st.sampled_from(_RULES), max_size=2))
        return {"restart_policy": policy, "restart_policy_rules": tuple(rules)}

    return Pod(
        metadata=ObjectMeta(name="p", uid="uid-p"),
        spec=PodSpec(
            containers=tuple(
                Container(n, draw(image), **own_restart(None, "Always", "OnFailure", "Never"))
                for n in apps
            ),
            init_containers=tuple(
                Container(n, draw(image), **own_restart(None, "OnFailure", "Never")) for n in inits
            ),
            restart_policy=draw(st.sampled_from(("Always", "OnFailure", "Never"))),
        ),
    )


_RULES = tuple(
    ContainerRestartRule("Restart", ContainerRestartRuleOnExitCodes(operator, values))
    for operator, values in (("In", (1,)), ("NotIn", (0,)), ("In", (0, 137)), ("NotIn", ()))
)


@st.composite
def scenarios(draw: Any, pod_strategy: st.SearchStrategy[Pod]) -> tuple[Pod, ObservedPod]:
    pod = draw(pod_strategy)
    return pod, draw(observed_states(pod))


# Small pods find planner bugs fastest; the full pod strategy checks nothing in real specs upsets
# the planner (ports, probes, volumes, hostNetwork, odd names).
SMALL = scenarios(small_pods())
REAL = scenarios(pods(with_status=False))


# --- a pure simulator of the executor ---------------------------------------------------------


def _live(c: RuntimeContainer) -> bool:
    return c.state in (RuntimeState.RUNNING, RuntimeState.UNKNOWN)


def _killed(c: RuntimeContainer, now: float) -> RuntimeContainer:
    return attrs.evolve(c, state=RuntimeState.EXITED, exit_code=KILLED, finished_at=now)


def _restart_count(c: RuntimeContainer) -> int:
    return int(c.annotations.get(RESTART_COUNT_ANNOTATION, c.attempt))


def _name(c: RuntimeContainer) -> str:
    return c.labels.get(CONTAINER_NAME_LABEL) or c.name


def apply_actions(pod: Pod, observed: ObservedPod, actions: PodActions, now: float) -> ObservedPod:
    """What a correct executor leaves behind: kills, removals, a new sandbox, new containers
    (app containers keep running, init containers complete at once with exit 0)."""
    sandboxes = {s.id: s for s in observed.sandboxes}
    containers = {c.id: c for c in observed.containers}
    if actions.kill_pod:
        containers = {i: _killed(c, now) if _live(c) else c for i, c in containers.items()}
        sandboxes = {i: attrs.evolve(s, state=SandboxState.NOTREADY) for i, s in sandboxes.items()}
    for kill in actions.containers_to_kill:
        assert kill.container_id in containers, "kills a container that is not there"
        containers[kill.container_id] = _killed(containers[kill.container_id], now)
    for sandbox_id in actions.sandboxes_to_remove:
        assert sandbox_id in sandboxes, "removes a sandbox that is not there"
        assert not any(_live(c) and c.sandbox_id == sandbox_id for c in containers.values()), (
            "removes a sandbox something still runs in"
        )
        del sandboxes[sandbox_id]
        containers = {i: c for i, c in containers.items() if c.sandbox_id != sandbox_id}
    target = actions.sandbox_id
    if actions.create_sandbox:
        assert actions.attempt > max((s.attempt for s in observed.sandboxes), default=-1)
        target = f"sb-new-{now}"
        sandboxes[target] = _new_sandbox(pod, target, actions.attempt, now, ready=True)
    starts: list[tuple[str, int, RuntimeState, int | None, str]] = []
    init = actions.next_init_container
    if init is not None:
        name = pod.spec.init_containers[init.index].name
        starts.append((name, init.restart_count, RuntimeState.EXITED, 0, init.replaces))
    for start in actions.containers_to_start:
        name = pod.spec.containers[start.index].name
        starts.append((name, start.restart_count, RuntimeState.RUNNING, None, start.replaces))
    for n, (name, restart, state, code, replaces) in enumerate(starts):
        assert target in sandboxes and sandboxes[target].state is SandboxState.READY
        if replaces:
            replaced = containers.pop(replaces, None)
            assert replaced is not None and _never_started(replaced), "replaces a started one"
        same = [_restart_count(c) for c in containers.values() if _name(c) == name]
        assert restart > max(same, default=-1), "a restart count is reused"
        new = _new_container(
            pod,
            name,
            id=f"new-{now}-{n}",
            sandbox_id=target,
            restart=restart,
            created=now,
            state=state,
            exit_code=code,
        )
        containers[new.id] = new
    # Between syncs, running init containers complete.
    init_names = {c.name for c in pod.spec.init_containers}
    for i, c in containers.items():
        if c.state is RuntimeState.RUNNING and _name(c) in init_names:
            is_app = c.annotations.get(INIT_CONTAINER_ANNOTATION) == "false"
            if not is_app:
                containers[i] = attrs.evolve(
                    c, state=RuntimeState.EXITED, exit_code=0, finished_at=now
                )
    return ObservedPod(
        sandboxes=tuple(sorted(sandboxes.values(), key=lambda s: s.id)),
        containers=tuple(sorted(containers.values(), key=lambda c: c.id)),
    )


# --- checks ---------------------------------------------------------------------------------


def _key(c: RuntimeContainer) -> tuple[float, int, str]:
    return (c.created_at, _restart_count(c), c.id)


def _never_started(c: RuntimeContainer) -> bool:
    return c.state is RuntimeState.CREATED and not c.exit_code and not c.reason


def _done_per_policy(c: RuntimeContainer, container: Container, policy: str) -> bool:
    """A dead container its restart rules and policy (else the pod's) do not start again."""
    if _never_started(c):
        return False
    return not container_should_restart(container, policy, c.exit_code)


def check_converged(pod: Pod, observed: ObservedPod, actions: PodActions) -> None:
    assert actions.is_noop, actions.summary()
    live = [c for c in observed.containers if _live(c)]
    ready = [s for s in observed.sandboxes if s.state is SandboxState.READY]
    if actions.terminal or not ready:
        # Terminal, or (restartPolicy Never) not started over after its sandbox died.
        assert actions.terminal or pod.spec.restart_policy == "Never"
        assert not live and not ready
        return
    current = max(ready, key=lambda s: (s.created_at, s.attempt, s.id))
    app = {c.name: c for c in pod.spec.containers}
    for c in live:
        assert c.sandbox_id == current.id, "something runs outside the pod's sandbox"
        assert _name(c) in app, "something not in the spec runs"
        assert c.annotations.get(HASH_ANNOTATION) in (None, container_hash(app[_name(c)]))
    for name in app:
        running = [c for c in live if _name(c) == name]
        if running:
            assert len(running) == 1, f"{name} runs {len(running)} times"
            continue
        records = [c for c in observed.containers if _name(c) == name]
        assert records, f"{name} never ran"
        policy = pod.spec.restart_policy
        started = [c for c in records if not _never_started(c)]
        if started and not is_container_restartable(app[name], policy):
            # A container that cannot restart never runs again once it has run: a newer
            # instance that was never started does not count.
            records = started
        newest = max(records, key=_key)
        assert _done_per_policy(newest, app[name], policy), f"{name} should run"


def full_plan(pod: Pod, observed: ObservedPod, now: float) -> PodActions:
    """The plan without the steady-state shortcut."""
    with mock.patch.object(_planner, "steady_plan", lambda *args: None):
        return compute_pod_actions(pod, observed, H, now)


def converge(pod: Pod, observed: ObservedPod) -> None:
    now = 100.0
    init_names = {c.name for c in pod.spec.init_containers}
    for _ in range(MAX_ROUNDS):
        actions = compute_pod_actions(pod, observed, H, now)
        init_runs = any(
            c.state is RuntimeState.RUNNING and _name(c) in init_names for c in observed.containers
        )
        if actions.is_noop and not init_runs:
            break
        observed = apply_actions(pod, observed, actions, now)
        now += 1.0
    final = compute_pod_actions(pod, observed, H, now)
    check_converged(pod, observed, final)
    assert full_plan(pod, observed, now) == final, "the shortcut disagrees with the full plan"
    phase = compute_pod_status(pod, observed, H, final, now).phase
    if final.terminal:
        assert phase == ("Failed" if final.pod_failed else "Succeeded")
    else:
        assert phase in ("Pending", "Running")


def shuffled(observed: ObservedPod, rnd: Any) -> ObservedPod:
    containers, sandboxes = list(observed.containers), list(observed.sandboxes)
    rnd.shuffle(containers)
    rnd.shuffle(sandboxes)
    return ObservedPod(sandboxes=tuple(sandboxes), containers=tuple(containers))


FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(SMALL, st.randoms(use_true_random=False))
def test_planning_is_deterministic(scenario: tuple[Pod, ObservedPod], rnd: Any) -> None:
    pod, observed = scenario
    first = compute_pod_actions(pod, observed, H, 100.0)
    assert compute_pod_actions(pod, observed, H, 100.0) == first
    assert compute_pod_actions(pod, shuffled(observed, rnd), H, 100.0) == first
    assert full_plan(pod, observed, 100.0) == first


def _init_failed_then_restart_interrupted() -> tuple[Pod, ObservedPod]:
    """A counterexample hypothesis found: a Never pod whose sandbox is gone, its first init
    container (policy Never) failed to start, then a newer instance of it was created but never
    started, beside an init container with an OnFailure policy of its own. The failed start
    decides (the pod fails); the unstarted instance does not count."""
    images = {"image": "busybox:1.36"}
    spec = PodSpec(
        containers=(Container(name="a", **images), Container(name="b", **images)),
        init_containers=(
            Container(name="i0", **images),
            Container(name="i1", restart_policy="OnFailure", **images),
        ),
        restart_policy="Never",
    )
    pod = Pod(metadata=ObjectMeta(name="p", namespace="default", uid="uid-p"), spec=spec)
    state = RuntimeState.CREATED
    failed = _new_container(
        pod, "i0", id="c-0", sandbox_id="sb-gone", restart=0, created=0.0, state=state,
        exit_code=1,
    )  # fmt: skip
    unstarted = _new_container(
        pod, "i0", id="c-1", sandbox_id="sb-gone", restart=0, created=0.0, state=state,
        exit_code=0,
    )  # fmt: skip
    return pod, ObservedPod(sandboxes=(), containers=(failed, unstarted))


@FAST
@given(SMALL)
@example(_init_failed_then_restart_interrupted())
def test_plans_converge(scenario: tuple[Pod, ObservedPod]) -> None:
    converge(*scenario)


@SLOW
@given(REAL, st.randoms(use_true_random=False))
def test_real_pods_plan_deterministically_and_converge(
    scenario: tuple[Pod, ObservedPod], rnd: Any
) -> None:
    pod, observed = scenario
    first = compute_pod_actions(pod, observed, H, 100.0)
    assert compute_pod_actions(pod, shuffled(observed, rnd), H, 100.0) == first
    converge(pod, observed)
