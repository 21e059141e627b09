"""``restartPolicy`` and ``restartPolicyRules`` on containers (KEP-5307) in manifests: read,
written back, and refused as the API server refuses them, each problem at its field path."""

from __future__ import annotations

from typing import Any

import pytest

from kubecore._contract.errors import ValidationError
from kubecore._manifest import load_pods_from_string, pod_from_dict, pod_to_dict
from kubecore._model.v1 import ContainerRestartRule, ContainerRestartRuleOnExitCodes
from tests.unit.manifest.support import problems_of

ON_42 = {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}
RESTART_ALL_ON_88 = {
    "action": "RestartAllContainers",
    "exitCodes": {"operator": "In", "values": [88]},
}


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "job"}, "spec": spec}


def ctr(name: str = "main", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox:1.36", **fields}


def exit_rule(action: str = "Restart", operator: str = "In", *values: Any) -> dict[str, Any]:
    return {"action": action, "exitCodes": {"operator": operator, "values": list(values)}}


def test_rules_are_read_into_the_model_and_written_back() -> None:
    data = pod(ctr(restartPolicy="Never", restartPolicyRules=[ON_42]))
    (container,) = pod_from_dict(data).spec.containers
    assert container.restart_policy == "Never"
    assert container.restart_policy_rules == (
        ContainerRestartRule("Restart", ContainerRestartRuleOnExitCodes("In", (42,))),
    )
    written = pod_to_dict(pod_from_dict(data))["spec"]["containers"][0]
    assert written["restartPolicy"] == "Never"
    assert written["restartPolicyRules"] == [ON_42]


@pytest.mark.parametrize("policy", ["Always", "OnFailure", "Never"])
def test_every_container_may_set_its_own_restart_policy(policy: str) -> None:
    data = pod(ctr(restartPolicy=policy), init=(ctr("setup", restartPolicy=policy),))
    spec = pod_from_dict(data).spec
    assert spec.containers[0].restart_policy == spec.init_containers[0].restart_policy == policy


def test_a_regular_init_container_may_have_rules() -> None:
    data = pod(ctr(), init=(ctr("setup", restartPolicy="Never", restartPolicyRules=[ON_42]),))
    assert pod_from_dict(data).spec.init_containers[0].restart_policy_rules


def test_restart_policy_rules_is_no_unknown_field() -> None:
    problems = problems_of(pod(ctr(restartPolicyRules=[ON_42])))
    assert not any("unknown field" in p for p in problems)


@pytest.mark.parametrize(
    ("containers", "init", "problems"),
    [
        (
            [ctr(restartPolicy="Sometimes")],
            (),
            [
                "spec.containers[0].restartPolicy: unsupported value 'Sometimes': must be one of"
                " Always, OnFailure, Never"
            ],
        ),
        (
            [ctr(restartPolicyRules=[ON_42])],
            (),
            [
                "spec.containers[0].restartPolicy: required: must specify restartPolicy when"
                " restart rules are used"
            ],
        ),
        (
            [ctr()],
            (ctr("setup", restartPolicyRules=[ON_42]),),
            [
                "spec.initContainers[0].restartPolicy: required: must specify restartPolicy when"
                " restart rules are used"
            ],
        ),
        (
            [ctr(restartPolicy="Never", restartPolicyRules=[ON_42] * 21)],
            (),
            ["spec.containers[0].restartPolicyRules: must have at most 20 rules, got 21"],
        ),
        (
            [
                ctr(
                    restartPolicy="Never",
                    restartPolicyRules=[
                        exit_rule("Restart", "In", *range(256))
                    ],
                )
            ],
            (),
            [
                "spec.containers[0].restartPolicyRules[0].exitCodes.values: must have at most 255"
                " values, got 256"
            ],
        ),
        (
            [ctr(restartPolicy="Never", restartPolicyRules=[ON_42, exit_rule("Ignore")])],
            (),
            [
                "spec.containers[0].restartPolicyRules[1].action: unsupported value 'Ignore':"
                " must be one of Restart"
            ],
        ),
        (
            [ctr(restartPolicy="OnFailure", restartPolicyRules=[exit_rule("Restart", "Above", 1)])],
            (),
            [
                "spec.containers[0].restartPolicyRules[0].exitCodes.operator: unsupported value"
                " 'Above': must be one of In, NotIn"
            ],
        ),
        (
            [ctr(restartPolicy="Never", restartPolicyRules=[{"action": "Restart"}])],
            (),
            ["spec.containers[0].restartPolicyRules[0].exitCodes: required"],
        ),
        (
            [ctr(restartPolicy="Never", restartPolicyRules=[{"exitCodes": {"values": [1]}}])],
            (),
            [
                "spec.containers[0].restartPolicyRules[0].action: required",
                "spec.containers[0].restartPolicyRules[0].exitCodes.operator: required",
            ],
        ),
        (
            [ctr()],
            (ctr("log", restartPolicy="Always", restartPolicyRules=[ON_42]),),
            [
                "spec.initContainers[0].restartPolicyRules: restartPolicyRules are not allowed for"
                " init containers with restart policy Always"
            ],
        ),
        (
            [ctr(restartPolicy="Never", restartPolicyRules=[RESTART_ALL_ON_88])],
            (),
            [
                "spec.containers[0].restartPolicyRules[0].action: not supported by kubecore:"
                " RestartAllContainers restarts every container of the pod in place, a separate"
                " feature (alpha, KEP-5532, off by default in Kubernetes)"
            ],
        ),
        (
            [ctr(restartPolicy="Never", restartPolicyRules=[exit_rule("Restart", "In", "42")])],
            (),
            [
                "spec.containers[0].restartPolicyRules[0].exitCodes.values[0]: expected an"
                " integer, got '42'"
            ],
        ),
    ],
)  # fmt: skip
def test_refused_as_the_api_server_refuses_it(
    containers: list[dict[str, Any]], init: tuple[dict[str, Any], ...], problems: list[str]
) -> None:
    assert sorted(problems_of(pod(*containers, init=init))) == sorted(problems)


# The docs' pods/restart-policy/restart-all-containers.yaml (Kubernetes website), as written.
RESTART_ALL_CONTAINERS = """\
---
{
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: "ml-worker",
  },
  spec: {
    restartPolicy: "Never", # The pod itself should not restart unless explicitly told to.
    initContainers: [{
      name: "setup-environment",
      image: "registry.k8s.io/busybox:1.27.2",
      command: [
        "sh",
        "-c",
        "echo \\"Setting up environment\\"",
      ],
      # This init container runs once to prepare the environment.
      # It will run again after a RestartAllContainers action.
    }, {
      name: "watcher-sidecar",
      image: "registry.k8s.io/busybox:1.27.2",
      # In a real-world scenario, this would be a dedicated watcher image.
      # This command simulates the watcher exiting with a special code.
      command: [
        "sh",
        "-c",
        "sleep 60; exit 88",
      ],
      restartPolicy: "Always",
      restartPolicyRules: [{
        action: "RestartAllContainers",
        exitCodes: {
          # Exit code 88 triggers a full pod restart.
          operator: "In",
          values: [
            88,
          ],
        },
      }],
    }],
    containers: [{
      name: "main-application",
      image: "registry.k8s.io/busybox:1.27.2",
      command: [
        "sh",
        "-c",
        "echo \\"Application is running\\"; sleep 3600",
      ],
    }],
  },
}
"""


def test_the_docs_restart_all_containers_pod_is_refused_at_its_action() -> None:
    with pytest.raises(ValidationError) as info:
        load_pods_from_string(RESTART_ALL_CONTAINERS)
    (problem,) = info.value.problems
    assert problem.path == "spec.initContainers[1].restartPolicyRules[0].action"
    assert problem.message.startswith("not supported by kubecore: RestartAllContainers")
    assert "(alpha, KEP-5532" in problem.message
    assert "unknown field" not in str(info.value)


def test_a_sidecar_rule_with_both_actions_gets_both_problems() -> None:
    restart_all = {
        "action": "RestartAllContainers",
        "exitCodes": {"operator": "In", "values": [88]},
    }
    data = pod(
        ctr(), init=(ctr("log", restartPolicy="Always", restartPolicyRules=[restart_all, ON_42]),)
    )
    assert sorted(p.split(":")[0] for p in problems_of(data)) == [
        "spec.initContainers[0].restartPolicyRules",
        "spec.initContainers[0].restartPolicyRules[0].action",
    ]
