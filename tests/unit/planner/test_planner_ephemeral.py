"""The pure planner on ephemeral containers: started once (in the target's pid namespace), even
while init runs, never restarted nor killed to converge, left out of every spec hash."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from kubecore._contract.labels import EPHEMERAL_CONTAINER_ANNOTATION
from kubecore._contract.observed import ObservedPod
from kubecore._planner.actions import ContainerToStart, KillReason, PodActions, PodHistory
from kubecore._planner.ephemeral import CREATE_CONTAINER_CONFIG_ERROR
from kubecore._planner.plan import compute_pod_actions
from kubecore._planner.pod_info import pod_info
from kubecore.runtime import RuntimeContainer, RuntimeState
from kubecore.v1 import EphemeralContainer, Pod
from tests.builders import BASE_POD, INIT_POD, NOW, SB, dead, healthy, sandbox, swap, with_spec
from tests.builders import observed_ctr as ctr

DEBUGGER = EphemeralContainer("debugger", "busybox:1.36", target_container_name="app")
POD = with_spec(BASE_POD, ephemeral_containers=(DEBUGGER,))


def ephemeral(state: RuntimeState = RuntimeState.RUNNING, **kw: Any) -> RuntimeContainer:
    """The debugger as the runtime shows it once started (marked ephemeral)."""
    c = ctr("debugger", POD, id="dbg-0", state=state, **kw)
    return attrs.evolve(c, annotations={**c.annotations, EPHEMERAL_CONTAINER_ANNOTATION: "true"})


def plan(observed: ObservedPod, pod: Pod = POD) -> PodActions:
    return compute_pod_actions(pod, observed, PodHistory(), NOW)


def test_it_starts_once_in_the_targets_pid_namespace_and_nothing_else_moves() -> None:
    actions = plan(healthy(POD))
    assert actions.ephemeral_containers_to_start == (ContainerToStart(0, target_id="app-0"),)
    assert not actions.containers_to_start and not actions.containers_to_kill
    assert not actions.kill_pod and not actions.create_sandbox
    assert "start ephemeral [0]" in actions.summary()


def test_without_a_target_it_joins_the_pods_namespaces() -> None:
    pod = with_spec(
        BASE_POD, ephemeral_containers=(attrs.evolve(DEBUGGER, target_container_name=""),)
    )
    (start,) = plan(healthy(pod), pod).ephemeral_containers_to_start
    assert start.target_id == ""


def test_running_it_is_the_steady_state() -> None:
    actions = plan(swap(healthy(POD), ephemeral()))
    assert actions.is_noop and actions == PodActions(sandbox_id=SB)


@given(
    policy=st.sampled_from(["Always", "OnFailure", "Never"]),
    exit_code=st.integers(min_value=0, max_value=255),
    hash=st.sampled_from([None, "", "stale"]),
)
def test_once_it_ran_it_is_never_started_again_nor_killed(
    policy: str, exit_code: int, hash: str | None
) -> None:
    pod = with_spec(POD, restart_policy=policy)
    for instance in (
        ephemeral(RuntimeState.EXITED, exit_code=exit_code, hash=hash),
        ephemeral(hash=hash),
    ):
        actions = plan(swap(healthy(pod), instance), pod)
        assert actions.is_noop, actions.summary()
        assert not actions.ephemeral_containers_to_start


def test_it_changes_no_spec_hash() -> None:
    plain, with_one = pod_info(BASE_POD), pod_info(POD)
    assert with_one.app_hashes == plain.app_hashes
    assert with_one.sandbox_hash == plain.sandbox_hash
    two = with_spec(POD, ephemeral_containers=(DEBUGGER, attrs.evolve(DEBUGGER, name="more")))
    assert pod_info(two).app_hashes == plain.app_hashes


def test_it_waits_while_its_target_does_not_run() -> None:
    observed = swap(healthy(POD), dead("app", 1, pod=POD))
    actions = plan(observed)
    assert not actions.ephemeral_containers_to_start
    (waiting,) = [w for w in actions.waiting if w.name == "debugger"]
    assert waiting.reason == CREATE_CONTAINER_CONFIG_ERROR
    assert waiting.message == "unable to find target container app"


def test_it_starts_while_the_init_containers_run() -> None:
    pod = with_spec(
        INIT_POD,
        ephemeral_containers=(attrs.evolve(DEBUGGER, target_container_name="setup"),),
    )
    observed = ObservedPod(sandboxes=(sandbox(pod),), containers=(ctr("setup", pod),))
    actions = plan(observed, pod)
    assert actions.ephemeral_containers_to_start == (ContainerToStart(0, target_id="setup-0"),)
    assert actions.next_init_container is None and not actions.containers_to_start


def test_it_is_stopped_with_a_pod_that_ends() -> None:
    pod = with_spec(POD, restart_policy="Never")
    observed = ObservedPod(
        sandboxes=(sandbox(pod),),
        containers=(dead("app", 0, pod=pod), dead("sidecar", 0, pod=pod), ephemeral()),
    )
    actions = plan(observed, pod)
    assert actions.terminal and actions.kill_pod


def test_a_new_sandbox_does_not_start_it_again() -> None:
    observed = ObservedPod(
        sandboxes=(sandbox(POD, ready=False),),
        containers=(ephemeral(RuntimeState.EXITED, exit_code=0),),
    )
    actions = plan(observed)
    assert actions.create_sandbox and not actions.ephemeral_containers_to_start
    assert SB not in actions.sandboxes_to_remove  # it holds the debugger's only instance


def test_a_container_of_its_name_not_marked_ephemeral_is_a_stray() -> None:
    observed = swap(healthy(POD), ctr("debugger", POD, id="dbg-0"))
    actions = plan(observed)
    assert actions.ephemeral_containers_to_start
    assert [(k.name, k.reason) for k in actions.containers_to_kill] == [
        ("debugger", KillReason.NOT_IN_SPEC)
    ]
