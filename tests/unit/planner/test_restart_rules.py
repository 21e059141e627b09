"""Container restart policy and rules (KEP-5307): the pure decision, the planner, the pod's
phase, and whole pods on the in-memory runtime."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from kubecore import Pod
from kubecore._contract.labels import SIDECAR_ANNOTATION
from kubecore._contract.observed import ObservedPod
from kubecore._kuberuntime.translate import container_config
from kubecore._model.spec_hash import container_hash
from kubecore._model.v1 import ContainerRestartRule, ContainerRestartRuleOnExitCodes
from kubecore._planner.actions import PodHistory, ProbeState
from kubecore._planner.plan import compute_pod_actions
from kubecore._planner.restart_rules import (
    container_should_restart,
    is_container_restartable,
    rule_matches,
)
from kubecore._status.compute import compute_pod_status, pod_verdict
from kubecore.runtime import RuntimeState
from kubecore.testing import FakeNode
from kubecore.v1 import Container
from tests.builders import BASE_POD, NOW, T0, crash, dead, healthy, sandbox, swap, with_spec
from tests.builders import observed_ctr as ctr
from tests.unit.planner.support import expect, plain

H = PodHistory()


def rule(operator: str, *values: int, action: str = "Restart") -> ContainerRestartRule:
    return ContainerRestartRule(action, ContainerRestartRuleOnExitCodes(operator, values))


def app(policy: str | None = None, *rules: ContainerRestartRule, **kw: Any) -> Container:
    return Container("app", "busybox:1.36", restart_policy=policy, restart_policy_rules=rules, **kw)  # type: ignore[arg-type]


ON_42 = rule("In", 42)


# --- the decision -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operator", "values", "code", "matches"),
    [
        ("In", (42,), 42, True),
        ("In", (42,), 1, False),
        ("In", (), 0, False),
        ("NotIn", (0,), 3, True),
        ("NotIn", (0,), 0, False),
        ("NotIn", (), 7, True),  # an empty NotIn matches every exit code
        ("Between", (1,), 1, False),  # an operator kubecore does not know never matches
    ],
)
def test_a_rule_matches_the_exit_codes_of_its_operator(
    operator: str, values: tuple[int, ...], code: int, matches: bool
) -> None:
    assert rule_matches(rule(operator, *values), code) is matches


@pytest.mark.parametrize(
    ("container", "pod_policy", "code", "restarts"),
    [
        # a matching Restart rule restarts, whatever the policies say
        (app("Never", ON_42), "Never", 42, True),
        (app("Never", rule("NotIn", 0)), "Never", 3, True),
        (app("OnFailure", rule("In", 0)), "Never", 0, True),  # even a clean exit
        # no rule matches: the container's policy decides
        (app("Never", ON_42), "Never", 1, False),
        (app("Never", ON_42), "Always", 1, False),
        (app("OnFailure", ON_42), "Never", 1, True),
        (app("OnFailure", ON_42), "Never", 0, False),
        (app("Always", ON_42), "Never", 0, True),
        # the first rule that matches decides, the rest are not read
        (app("Never", rule("In", 1, action="Unknown"), rule("In", 1)), "Never", 1, False),
        (app("Never", rule("NotIn", 7), rule("In", 7, action="Unknown")), "Never", 1, True),
        # a container's own policy without rules overrides the pod's
        (app("Never"), "Always", 0, False),
        (app("Always"), "Never", 0, True),
        (app("OnFailure"), "Never", 2, True),
        # no policy of its own: the pod's
        (app(), "Always", 0, True),
        (app(), "OnFailure", 0, False),
        (app(), "OnFailure", 1, True),
        (app(), "Never", 1, False),
        # an unknown exit code matches no rule and is a failure
        (app("Never", rule("NotIn", 0)), "Never", None, False),
        (app("OnFailure", ON_42), "Never", None, True),
    ],
)
def test_container_should_restart(
    container: Container, pod_policy: str, code: int | None, restarts: bool
) -> None:
    assert container_should_restart(container, pod_policy, code) is restarts


@pytest.mark.parametrize(
    ("container", "pod_policy", "restartable"),
    [
        (app(), "Never", False),
        (app(), "OnFailure", True),
        (app("Never"), "Always", False),
        (app("Never", ON_42), "Never", True),
        (app("OnFailure"), "Never", True),
    ],
)
def test_is_container_restartable(container: Container, pod_policy: str, restartable: bool) -> None:
    assert is_container_restartable(container, pod_policy) is restartable


def test_the_new_fields_at_their_defaults_keep_todays_container_hash() -> None:
    plain_container = Container("app", "busybox:1.36")
    assert container_hash(plain_container) == container_hash(
        Container("app", "busybox:1.36", restart_policy=None, restart_policy_rules=())
    )
    assert container_hash(app("Never", ON_42)) != container_hash(app("Never"))


# --- the planner ------------------------------------------------------------------------------


def never_pod(*containers: Container, policy: str = "Never", **spec: Any) -> Pod:
    return with_spec(BASE_POD, containers=containers, restart_policy=policy, **spec)


def one_dead_app(pod: Pod, code: int, **kw: Any) -> ObservedPod:
    return ObservedPod(sandboxes=(sandbox(pod),), containers=(dead("app", code, pod=pod, **kw),))


def test_a_never_pod_restarts_a_container_whose_exit_code_a_rule_matches() -> None:
    pod = never_pod(app("Never", ON_42))
    actions = compute_pod_actions(pod, one_dead_app(pod, 42), H, NOW)
    assert plain(actions) == expect(containers_to_start=(0,), restart_counts=(1,))
    (start,) = actions.containers_to_start
    assert start.after_crash


def test_a_rule_restart_waits_out_the_crash_loop_back_off() -> None:
    pod = never_pod(app("Never", ON_42))
    history = PodHistory(crash_backoff={"app": crash()})
    actions = compute_pod_actions(pod, one_dead_app(pod, 42), history, NOW)
    assert plain(actions) == expect(waiting=(("app", "CrashLoopBackOff"),))
    assert not actions.terminal


def test_an_exit_code_no_rule_matches_ends_the_pod_as_the_containers_policy_says() -> None:
    pod = never_pod(app("Never", ON_42))
    actions = compute_pod_actions(pod, one_dead_app(pod, 1), H, NOW)
    assert actions.terminal and actions.pod_failed
    assert not actions.containers_to_start


def test_no_match_falls_back_to_the_containers_on_failure_policy() -> None:
    pod = never_pod(app("OnFailure", ON_42))
    failed = compute_pod_actions(pod, one_dead_app(pod, 1), H, NOW)
    assert plain(failed) == expect(containers_to_start=(0,), restart_counts=(1,))
    succeeded = compute_pod_actions(pod, one_dead_app(pod, 0), H, NOW)
    assert succeeded.terminal and not succeeded.pod_failed


def test_a_not_in_rule_restarts_every_other_exit_code() -> None:
    pod = never_pod(app("Never", rule("NotIn", 0)))
    assert compute_pod_actions(pod, one_dead_app(pod, 3), H, NOW).containers_to_start
    done = compute_pod_actions(pod, one_dead_app(pod, 0), H, NOW)
    assert done.terminal and not done.pod_failed


def test_a_containers_never_overrides_the_pods_always() -> None:
    pod = never_pod(app("Never"), Container("web", "nginx:1.25"), policy="Always")
    observed = ObservedPod(
        sandboxes=(sandbox(pod),),
        containers=(dead("app", 0, pod=pod), ctr("web", pod)),
    )
    actions = compute_pod_actions(pod, observed, H, NOW)
    assert plain(actions) == expect()  # app stays exited, web runs on
    assert phase(pod, observed) == "Running"


def test_a_pod_whose_containers_all_say_never_ends_even_under_always() -> None:
    pod = never_pod(app("Never"), policy="Always")
    actions = compute_pod_actions(pod, one_dead_app(pod, 0), H, NOW)
    assert actions.terminal and not actions.pod_failed


def test_a_containers_always_overrides_the_pods_never() -> None:
    pod = never_pod(app("Always"))
    actions = compute_pod_actions(pod, one_dead_app(pod, 0), H, NOW)
    assert plain(actions) == expect(containers_to_start=(0,), restart_counts=(1,))


def test_a_failed_liveness_probe_restarts_by_the_containers_policy_not_its_rules() -> None:
    # Still running when killed: no exit code for its rules.
    pod = never_pod(app("OnFailure"))
    observed = ObservedPod(sandboxes=(sandbox(pod),), containers=(ctr("app", pod),))
    history = PodHistory(probes={"app-0": ProbeState(liveness_failed=True, message="down")})
    actions = compute_pod_actions(pod, observed, history, NOW)
    assert [k.name for k in actions.containers_to_kill] == ["app"]
    assert [s.index for s in actions.containers_to_start] == [0]
    rules_only = never_pod(app("Never", rule("NotIn", 0)))
    actions = compute_pod_actions(rules_only, healthy(rules_only), history, NOW)
    assert [k.name for k in actions.containers_to_kill] == ["app"]
    assert not actions.containers_to_start


def test_an_init_container_restarted_by_its_rule_under_a_never_pod() -> None:
    setup = Container(
        "setup", "busybox:1.36", restart_policy="Never", restart_policy_rules=(ON_42,)
    )
    pod = never_pod(Container("web", "nginx:1.25"), init_containers=(setup,))
    observed = ObservedPod(sandboxes=(sandbox(pod),), containers=(dead("setup", 42, pod=pod),))
    actions = compute_pod_actions(pod, observed, H, NOW)
    assert actions.next_init_container is not None
    assert (actions.next_init_container.index, actions.next_init_container.restart_count) == (0, 1)
    failed = compute_pod_actions(pod, swap(observed, dead("setup", 1, pod=pod)), H, NOW)
    assert failed.terminal and failed.pod_failed


def test_an_init_container_with_never_fails_a_pod_that_says_always() -> None:
    once = Container("init-once", "busybox:1.36", restart_policy="Never")
    pod = never_pod(Container("web", "nginx:1.25"), policy="Always", init_containers=(once,))
    observed = ObservedPod(sandboxes=(sandbox(pod),), containers=(dead("init-once", 1, pod=pod),))
    actions = compute_pod_actions(pod, observed, H, NOW)
    assert actions.terminal and actions.pod_failed


def test_an_interrupted_start_of_a_rule_restart_is_started_again() -> None:
    # Under a Never pod whose container can restart, a newer created-but-never-started
    # instance is the restart in progress, not a stray to set aside.
    pod = never_pod(app("Never", ON_42))
    observed = ObservedPod(
        sandboxes=(sandbox(pod),),
        containers=(
            dead("app", 42, pod=pod),
            ctr("app", pod, id="app-1", restart=1, state=RuntimeState.CREATED, created=T0 + 9),
        ),
    )
    actions = compute_pod_actions(pod, observed, H, NOW)
    (start,) = actions.containers_to_start
    assert (start.index, start.restart_count, start.replaces) == (0, 1, "app-1")


# --- the pod's phase --------------------------------------------------------------------------


def phase(pod: Pod, observed: ObservedPod, history: PodHistory = H) -> str:
    return compute_pod_status(pod, observed, history, None, NOW).phase


def test_a_never_pod_whose_container_restarts_by_rule_stays_running() -> None:
    pod = never_pod(app("Never", ON_42))
    backing_off = PodHistory(crash_backoff={"app": crash()})
    assert phase(pod, one_dead_app(pod, 42), backing_off) == "Running"
    assert phase(pod, one_dead_app(pod, 1)) == "Failed"


def test_a_container_restarting_beside_a_finished_one_keeps_the_pod_running() -> None:
    pod = never_pod(
        app("Never"),
        Container("retry", "busybox:1.36", restart_policy="OnFailure"),
        policy="Always",
    )
    observed = ObservedPod(
        sandboxes=(sandbox(pod),),
        containers=(dead("app", 0, pod=pod), dead("retry", 1, pod=pod)),
    )
    assert phase(pod, observed, PodHistory(crash_backoff={"retry": crash()})) == "Running"
    done = swap(observed, dead("retry", 0, pod=pod))
    assert phase(pod, done) == "Succeeded"


def test_the_status_shows_the_rule_restart_with_its_count() -> None:
    pod = never_pod(app("Never", ON_42))
    observed = ObservedPod(
        sandboxes=(sandbox(pod),),
        containers=(
            dead("app", 42, pod=pod, created=T0 + 1),
            ctr("app", pod, id="app-1", restart=1, created=T0 + 20),
        ),
    )
    st = compute_pod_status(pod, observed, H, None, NOW)
    (cs,) = st.container_statuses
    assert st.phase == "Running"
    assert cs.restart_count == 1 and cs.last_state.terminated is not None
    assert cs.last_state.terminated.exit_code == 42


# --- whole pods on the in-memory runtime --------------------------------------------------------

RESTART_ON_42 = """
apiVersion: v1
kind: Pod
metadata: {name: job}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.36
    command: ['sh', '-c', 'sleep 5; exit {code}']
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
"""


def test_a_container_exiting_42_restarts_with_back_off_and_the_pod_keeps_running(
    tmp_path: Any,
) -> None:
    with FakeNode(tmp_path) as node:
        node.apply(RESTART_ON_42.replace("{code}", "42"))
        node.run_until(lambda: node.status("job").container_statuses[0].restart_count >= 2,
                       timeout=120)  # fmt: skip
        assert node.status("job").phase == "Running"
        assert node.events(reason="BackOff", pod="job")
        (status,) = node.status("job").container_statuses
        assert status.last_state.terminated is not None
        assert status.last_state.terminated.exit_code == 42


def test_a_container_exiting_with_another_code_fails_the_pod(tmp_path: Any) -> None:
    with FakeNode(tmp_path) as node:
        node.apply(RESTART_ON_42.replace("{code}", "3"))
        node.run_until(lambda: node.status("job").phase == "Failed", timeout=60)
        (status,) = node.status("job").container_statuses
        assert status.restart_count == 0
        assert status.state.terminated is not None and status.state.terminated.exit_code == 3


def test_a_settled_pod_with_a_try_once_container_that_failed_is_judged_failed() -> None:
    # The docs' on-failure-pod: under the pod's OnFailure, its try-once container (Never) that
    # exited 1 stays exited beside the running one: settled, with that failure.
    pod = never_pod(app("Never"), Container("keep", "busybox:1.36"), policy="OnFailure")
    observed = ObservedPod(
        sandboxes=(sandbox(pod),),
        containers=(dead("app", 1, pod=pod), ctr("keep", pod)),
    )
    reported = attrs.evolve(pod, status=compute_pod_status(pod, observed, H, None, NOW))
    assert reported.status is not None and reported.status.phase == "Running"
    assert pod_verdict(reported) == ("failed", "container app exited with 1")
    restarting = never_pod(app("OnFailure"), Container("keep", "busybox:1.36"), policy="Never")
    observed = ObservedPod(
        sandboxes=(sandbox(restarting),),
        containers=(dead("app", 1, pod=restarting), ctr("keep", restarting)),
    )
    status = compute_pod_status(restarting, observed, H, None, NOW)
    assert pod_verdict(attrs.evolve(restarting, status=status))[0] == "pending"


def test_an_app_container_with_its_own_always_is_no_sidecar_to_the_runtime() -> None:
    pod = never_pod(app("Always"))
    config = container_config(pod, pod.spec.containers[0], restart_count=0, volume_paths={})
    assert SIDECAR_ANNOTATION not in config.annotations
