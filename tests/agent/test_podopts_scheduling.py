"""Scheduler and API-server fields: accepted, validated, dumped; nodeSelector and required node
affinity checked against the node's labels; resources the node does not have refused."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from kubecore import KubeletConfig
from kubecore._agent.admission.admit import Admission
from kubecore._agent.admission.node_fit import (
    insufficient_resource,
    machine_arch,
    node_labels,
    parse_node_labels,
    pod_matches_node,
    requirement_matches,
    term_matches,
)
from kubecore._cli.settings import UsageError, kubelet_config_values
from kubecore._contract.errors import ValidationError
from kubecore._model.v1 import NodeSelectorRequirement, NodeSelectorTerm
from kubecore.manifest import load_pods_from_string, pod_from_dict, pod_to_dict
from tests.agent.support import make_node
from tests.builders import ctr, make_pod

SCHEDULER_FIELDS: dict[str, Any] = {
    "tolerations": [
        {"key": "example-key", "operator": "Exists", "effect": "NoSchedule"},
        {
            "key": "k",
            "operator": "Equal",
            "value": "v",
            "effect": "NoExecute",
            "tolerationSeconds": 0,
        },
    ],
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            "minDomains": 2,
        }
    ],
    "schedulingGates": [{"name": "example.com/foo"}],
    "priority": 0,
    "priorityClassName": "high-priority",
    "preemptionPolicy": "Never",
    "schedulerName": "my-scheduler",
    "affinity": {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {
                        "matchExpressions": [
                            {"key": "another-node-label-key", "operator": "In", "values": ["x"]}
                        ]
                    },
                }
            ]
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": "security", "operator": "In", "values": ["S1"]}
                        ]
                    },
                    "topologyKey": "topology.kubernetes.io/zone",
                }
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"security": "S2"}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        },
    },
    "serviceAccountName": "robot",
    "serviceAccount": "robot",
    "automountServiceAccountToken": False,
    "overhead": {"cpu": "250m", "memory": "120Mi"},
    "readinessGates": [{"conditionType": "www.example.com/feature-1"}],
    "os": {"name": "linux"},
    "enableServiceLinks": False,
}


def pod_data(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}], **spec},
    }


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        pod_from_dict(data)
    return [str(p) for p in info.value.problems]


def test_scheduler_fields_are_accepted_and_round_trip() -> None:
    pod = pod_from_dict(pod_data(**SCHEDULER_FIELDS))
    assert pod.spec.priority == 0
    assert pod.spec.tolerations[1].toleration_seconds == 0
    assert pod.spec.affinity is not None and pod.spec.affinity.pod_anti_affinity is not None
    dumped = pod_to_dict(pod)["spec"]
    for key, value in SCHEDULER_FIELDS.items():
        assert dumped[key] == value, key
    assert pod_from_dict(pod_to_dict(pod)) == pod


def test_a_typo_inside_a_scheduler_field_is_an_error_with_its_path() -> None:
    data = pod_data(tolerations=[{"key": "k", "operater": "Exists"}])
    assert problems(data) == [
        "spec.tolerations[0].operater: unknown field (did you mean 'operator'?)"
    ]
    data = pod_data(
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Has"}]}]
                }
            }
        }
    )
    assert problems(data) == [
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].operator: unsupported value 'Has': must be one"
        " of In, NotIn, Exists, DoesNotExist, Gt, Lt"
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"tolerations": [{"operator": "Equal", "value": "v"}]},
            "spec.tolerations[0].operator: must be Exists when key is empty",
        ),
        (
            {"tolerations": [{"key": "k", "effect": "NoSchedul"}]},
            "spec.tolerations[0].effect: unsupported value 'NoSchedul': must be one of "
            "NoSchedule, PreferNoSchedule, NoExecute",
        ),
        (
            {"os": {"name": "windows"}},
            "spec.os.name: unsupported value 'windows': kubecore runs Linux containers",
        ),
        (
            {"preemptionPolicy": "Sometimes"},
            "spec.preemptionPolicy: unsupported value 'Sometimes': must be one of"
            " PreemptLowerPriority, Never",
        ),
        ({"priority": "high"}, "spec.priority: expected an integer, got 'high'"),
        (
            {"overhead": {"cpu": "lots"}},
            "spec.overhead[cpu]: invalid quantity 'lots': expected a number with an optional"
            " suffix (m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like e3)",
        ),
        (
            {
                "topologySpreadConstraints": [
                    {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            },
            "spec.topologySpreadConstraints[0].maxSkew: must be at least 1, got 0",
        ),
        (
            {"serviceAccount": "a", "serviceAccountName": "b"},
            "spec.serviceAccount: must equal serviceAccountName ('b') when both are set",
        ),
    ],
)
def test_scheduler_field_values_are_validated(spec: dict[str, Any], expected: str) -> None:
    assert problems(pod_data(**spec)) == [expected]


def test_api_server_metadata_is_accepted_and_dropped_but_the_creation_time_kept() -> None:
    data = pod_data()
    data["metadata"].update(
        creationTimestamp="2024-01-01T00:00:00Z",
        resourceVersion="123",
        generation=1,
        finalizers=["example.com/keep"],
        ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": "u"}],
        managedFields=[{"manager": "kubectl"}],
        selfLink="/api/v1/namespaces/default/pods/web",
        generateName="web-",
    )
    pod = pod_from_dict(data)
    assert pod.metadata.generate_name == "web-"
    assert pod_to_dict(pod)["metadata"] == {
        "name": "web",
        "namespace": "default",
        "generateName": "web-",
        "creationTimestamp": "2024-01-01T00:00:00Z",
    }


def test_a_pod_being_deleted_is_refused_with_a_reason() -> None:
    data = pod_data()
    data["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    (problem,) = problems(data)
    assert problem.startswith("metadata.deletionTimestamp: set by the API server")


def test_generate_name_does_not_replace_the_name() -> None:
    data = pod_data()
    data["metadata"] = {"generateName": "web-"}
    assert problems(data) == ["metadata.name: required"]


# --- node labels and affinity -------------------------------------------------------------


def req(key: str, operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key, operator, values)


@pytest.mark.parametrize(
    ("requirement", "matches"),
    [
        (req("disk", "In", "ssd", "nvme"), True),
        (req("disk", "In", "hdd"), False),
        (req("missing", "In", "x"), False),
        (req("disk", "NotIn", "hdd"), True),
        (req("disk", "NotIn", "ssd"), False),
        (req("missing", "NotIn", "x"), True),
        (req("disk", "Exists"), True),
        (req("missing", "Exists"), False),
        (req("missing", "DoesNotExist"), True),
        (req("disk", "DoesNotExist"), False),
        (req("cores", "Gt", "4"), True),
        (req("cores", "Gt", "8"), False),
        (req("cores", "Lt", "9"), True),
        (req("cores", "Lt", "8"), False),
        (req("disk", "Gt", "1"), False),
        (req("missing", "Lt", "1"), False),
    ],
)
def test_node_selector_operators(requirement: NodeSelectorRequirement, matches: bool) -> None:
    assert requirement_matches(requirement, {"disk": "ssd", "cores": "8"}) is matches


def test_match_fields_compare_the_node_name_and_an_empty_term_matches_nothing() -> None:
    by_name = NodeSelectorTerm(match_fields=(req("metadata.name", "In", "node-a"),))
    assert term_matches(by_name, {}, "node-a")
    assert not term_matches(by_name, {}, "node-b")
    assert not term_matches(NodeSelectorTerm(), {"a": "b"}, "node-a")


def test_well_known_labels_and_node_labels_flag() -> None:
    labels = node_labels("node-a", parse_node_labels(["disk=ssd,zone=z1", "gpu="]))
    assert labels["kubernetes.io/hostname"] == "node-a"
    assert labels["kubernetes.io/os"] == labels["beta.kubernetes.io/os"] == "linux"
    assert labels["kubernetes.io/arch"] == labels["beta.kubernetes.io/arch"] == machine_arch()
    assert (labels["disk"], labels["zone"], labels["gpu"]) == ("ssd", "z1", "")
    assert machine_arch("x86_64") == "amd64" and machine_arch("aarch64") == "arm64"
    with pytest.raises(ValueError, match="expected key=value"):
        parse_node_labels(["disk"])
    with pytest.raises(ValueError, match="invalid label value"):
        parse_node_labels(["disk=a b"])


def test_node_labels_setting_is_checked_and_reaches_the_config() -> None:
    values = kubelet_config_values_for(("disk=ssd",))
    assert KubeletConfig(**values).labels()["disk"] == "ssd"
    with pytest.raises(UsageError, match="--node-labels: node label 'oops'"):
        kubelet_config_values_for(("oops",))


def kubelet_config_values_for(labels: tuple[str, ...]) -> dict[str, Any]:
    from kubecore._cli.settings import RUN_SETTINGS

    settings = {s.dest: s.default() for s in RUN_SETTINGS}
    settings["node_labels"] = labels
    settings["node_name"] = "node-a"
    return kubelet_config_values(settings)


AFFINITY_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: with-node-affinity
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: topology.kubernetes.io/zone
            operator: In
            values:
            - antarctica-east1
            - antarctica-west1
  containers:
  - name: with-node-affinity
    image: registry.k8s.io/pause:3.8
"""


def test_required_node_affinity_and_node_selector_at_admission() -> None:
    (pod,) = load_pods_from_string(AFFINITY_POD)
    assert not pod_matches_node(pod, node_labels("n"), "n")
    assert pod_matches_node(pod, {"topology.kubernetes.io/zone": "antarctica-west1"}, "n")
    selector = make_pod("sel", ctr(), node_selector={"disktype": "ssd"})
    assert pod_matches_node(selector, {"disktype": "ssd"}, "n")
    assert not pod_matches_node(selector, {"disktype": "hdd"}, "n")
    admission = Admission(node_name="n", labels={"disktype": "ssd"})
    admitted, rejected = admission.admit([selector, pod])
    assert [p.metadata.name for p in admitted] == ["sel"]
    ((refused, rejection),) = rejected
    assert refused is pod
    assert rejection.reason == "NodeAffinity"
    assert rejection.message == (
        "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node"
        " affinity/selector"
    )


def test_a_node_selector_mismatch_fails_the_pod_on_the_agent(tmp_path: Path) -> None:
    node = make_node(tmp_path, node_labels=("disktype=ssd",))
    node.kubelet.set_pods(
        [
            make_pod("fits", ctr(), node_selector={"disktype": "ssd"}),
            make_pod("misfit", ctr(), node_selector={"disktype": "hdd"}),
            make_pod("named", ctr(), node_selector={"kubernetes.io/hostname": "elsewhere"}),
        ]
    )
    node.converge()
    assert node.running_names() == [("fits", "app")]
    for name in ("misfit", "named"):
        status = node.status(name)
        assert (status.phase, status.reason) == ("Failed", "NodeAffinity")
    assert node.kubelet.views.recent_events(name="misfit", reason="NodeAffinity")


# --- resources the node does not have -------------------------------------------------------


def with_resources(requests: dict[str, str], limits: dict[str, str]) -> Any:
    from kubecore._model.v1 import ResourceRequirements

    return make_pod("dongle", ctr(resources=ResourceRequirements(requests, limits)))


def test_extended_resources_and_hugepages_are_refused_with_out_of_reason() -> None:
    pod = with_resources({"example.com/dongle": "3"}, {"example.com/dongle": "3"})
    assert insufficient_resource(pod, {}) == (
        "OutOfexample.com/dongle",
        "Node didn't have enough resource: example.com/dongle, requested: 3, used: 0, capacity: 0",
    )
    huge = with_resources({}, {"hugepages-2Mi": "4Mi", "memory": "64Mi"})
    assert insufficient_resource(huge, {}) == (
        "OutOfhugepages-2Mi",
        "Node didn't have enough resource: hugepages-2Mi, requested: 4194304, used: 0, capacity: 0",
    )
    storage = with_resources({"ephemeral-storage": "1Gi"}, {"ephemeral-storage": "2Gi"})
    assert insufficient_resource(storage, {}) is None
    _, rejected = Admission().admit([pod, storage])
    ((refused, rejection),) = rejected
    assert refused is pod
    assert rejection.reason == "OutOfexample.com/dongle"
    assert rejection.message.startswith("Pod was rejected: Node didn't have enough resource")


def test_extended_resource_quantity_rules() -> None:
    def resources(requests: dict[str, str], limits: dict[str, str]) -> dict[str, Any]:
        return pod_data(
            containers=[
                {
                    "name": "app",
                    "image": "busybox:1.35",
                    "resources": {"requests": requests, "limits": limits},
                }
            ]
        )

    base = "spec.containers[0].resources"
    assert problems(resources({"example.com/dongle": "1"}, {"example.com/dongle": "2"})) == [
        f"{base}.requests[example.com/dongle]: must be equal to the example.com/dongle limit"
        " (2), got 1"
    ]
    assert problems(resources({"example.com/dongle": "500m"}, {})) == [
        f"{base}.requests[example.com/dongle]: must be a whole number, got '500m'"
    ]
    assert problems(resources({"kubernetes.io/thing": "1"}, {})) == [
        f"{base}.requests[kubernetes.io/thing]: unsupported resource name 'kubernetes.io/thing':"
        " expected cpu, memory, ephemeral-storage, hugepages-<size> or an extended resource"
        " such as example.com/dongle"
    ]
    pod_from_dict(resources({"ephemeral-storage": "1Gi"}, {"example.com/dongle": "1"}))


# --- readiness gates, the debug log ---------------------------------------------------------


def test_readiness_gates_keep_the_pod_not_ready(tmp_path: Path) -> None:
    from kubecore._model.v1 import PodReadinessGate

    node = make_node(tmp_path)
    gated = make_pod(
        "gated", ctr(), readiness_gates=(PodReadinessGate("www.example.com/feature-1"),)
    )
    node.kubelet.set_pods([gated])
    node.converge()
    status = node.status("gated")
    assert status.phase == "Running"
    conditions = {c.type: c for c in status.conditions}
    assert conditions["ContainersReady"].status == "True"
    ready = conditions["Ready"]
    assert (ready.status, ready.reason) == ("False", "ReadinessGatesNotReady")
    assert ready.message == (
        'corresponding condition of pod readiness gate "www.example.com/feature-1" does not exist.'
    )


def test_scheduler_fields_are_listed_once_per_pod_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pod = pod_from_dict(pod_data(tolerations=[{"operator": "Exists"}], priorityClassName="high"))
    admission = Admission()
    with caplog.at_level(logging.DEBUG, logger="kubecore._agent.admission.admit"):
        admission.admit([pod])
        admission.admit([pod])
    lines = [r.getMessage() for r in caplog.records if "scheduler" in r.getMessage()]
    assert lines == [
        "pod default/web: accepted, not acted on by a node (scheduler / API server fields):"
        " tolerations, priorityClassName"
    ]


def test_the_etcd_node_carries_the_node_labels(tmp_path: Path) -> None:
    from kubecore_etcd import node_document

    node = make_node(tmp_path, node_name="node-a", node_labels=("disk=ssd",))
    document = node_document(node.kubelet, "node-a", ready=True, reason="")
    labels = document["metadata"]["labels"]
    assert labels["disk"] == "ssd"
    assert labels["kubernetes.io/hostname"] == "node-a"
    assert labels["kubernetes.io/arch"] == machine_arch()
    assert document["status"]["nodeInfo"]["architecture"] == machine_arch()
