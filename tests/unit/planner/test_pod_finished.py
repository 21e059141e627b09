""" "Is the pod finished" is one rule (``_restart_rules.pod_finished``): the planner's terminal
state, the status's phase and the CLI's verdict read it alike, whatever the restart policies
(the pod's, a container's own with its ``restartPolicyRules``) and with sidecars."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubecore._contract.observed import ObservedPod, View
from kubecore._model.v1 import Container, ContainerRestartRule, ContainerRestartRuleOnExitCodes
from kubecore._planner.pod_info import pod_info
from kubecore._planner.restart_rules import container_finished, pod_finished
from kubecore._planner.terminal import terminal_state
from kubecore._status.compute import pod_verdict
from tests.agent.support import make_node
from tests.builders import ctr, make_pod

RESTART_ON_1 = (ContainerRestartRule("Restart", ContainerRestartRuleOnExitCodes("In", (1,))),)


def exits(name: str, code: int, **kw: Any) -> Container:
    return ctr(name, command=("sh", "-c", f"exit {code}"), **kw)


SIDECAR = ctr("proxy", restart_policy="Always")

CASES = {
    # pod policy, app containers, init containers -> phase, verdict
    "never-success": ("Never", (exits("app", 0),), (), "Succeeded", "ok"),
    "never-failure": ("Never", (exits("app", 1),), (), "Failed", "failed"),
    "onfailure-success": ("OnFailure", (exits("app", 0),), (), "Succeeded", "ok"),
    "sidecar-stopped-after-the-app": ("Never", (exits("app", 0),), (SIDECAR,), "Succeeded", "ok"),
    "own-never-under-always": (
        "Always",
        (exits("app", 0, restart_policy="Never"),),
        (),
        "Succeeded",
        "ok",
    ),
    "a-rule-restarts-exit-1-under-never": (
        "Never",
        (exits("app", 1, restart_policy="Never", restart_policy_rules=RESTART_ON_1),),
        (),
        "Running",
        "failed",  # crash-looping
    ),
    "a-rule-does-not-match-exit-2": (
        "Always",
        (exits("app", 2, restart_policy="Never", restart_policy_rules=RESTART_ON_1),),
        (),
        "Failed",
        "failed",
    ),
    "one-finished-beside-one-running": (
        "Never",
        (exits("app", 0), ctr("web")),
        (),
        "Running",
        "ok",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_planner_the_phase_and_the_verdict_agree(tmp_path: Path, case: str) -> None:
    policy, containers, init, phase, verdict = CASES[case]
    node = make_node(tmp_path)
    pod = make_pod("web", *containers, restart_policy=policy, init_containers=init)
    node.kubelet.set_pods([pod])
    for _ in range(40):
        node.kubelet.sync()
        node.clock.advance(1)
    status = node.status()
    assert (status.phase, pod_verdict(node.kubelet.get_pod("default", "web"))[0]) == (
        phase,
        verdict,
    )
    observed = ObservedPod(
        tuple(node.runtime.list_sandboxes()), tuple(node.runtime.find_containers(pod_name="web"))
    )
    terminal, failed = terminal_state(pod, View(pod_info(pod), observed))
    assert terminal == (phase in ("Succeeded", "Failed"))
    assert failed == (phase == "Failed")
    if terminal:
        assert not node.running("web")  # sidecars included


def test_an_unknown_exit_code_is_a_failure_and_an_unfinished_container_holds_the_pod() -> None:
    app, other = exits("app", 0), exits("other", 0)
    assert container_finished(app, "Never", True, None)
    assert not container_finished(app, "OnFailure", True, None)  # restarted: a failure
    assert not container_finished(app, "Never", False, None)
    assert pod_finished("Never", [(app, True, None), (other, True, 0)]) == (True, True)
    assert pod_finished("Never", [(app, True, 0), (other, False, None)]) == (False, False)
    assert pod_finished("OnFailure", [(app, True, 0), (other, True, 0)]) == (True, False)
