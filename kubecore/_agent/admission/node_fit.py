"""Whether a pod fits this node, as the kubelet re-checks at admission what a scheduler decided:
the node's labels against ``nodeSelector`` and required node affinity, and the extended
resources and hugepages the pod requests against the node's (none).
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, Mapping
from decimal import Decimal

from kubecore._manifest.validation import is_extended_resource, label_problem
from kubecore._model.quantity import parse_quantity
from kubecore._model.rejection import Rejection
from kubecore._model.v1 import Container, NodeSelectorRequirement, NodeSelectorTerm, Pod

HOSTNAME_LABEL = "kubernetes.io/hostname"
OS_LABEL = "kubernetes.io/os"
ARCH_LABEL = "kubernetes.io/arch"
BETA_OS_LABEL = "beta.kubernetes.io/os"
BETA_ARCH_LABEL = "beta.kubernetes.io/arch"
NODE_NAME_FIELD = "metadata.name"

NODE_AFFINITY = "NodeAffinity"
NODE_AFFINITY_MESSAGE = (
    "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
)

_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_GO_ARCH.update({"armv7l": "arm", "armv6l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"})


def machine_arch(machine: str | None = None) -> str:
    """The architecture as Go (and so the ``kubernetes.io/arch`` label) names it."""
    machine = (machine if machine is not None else platform.machine()).lower()
    return _GO_ARCH.get(machine, machine)


def parse_node_labels(entries: Iterable[str]) -> dict[str, str]:
    """``k=v`` entries (each may hold several, comma separated, as ``--node-labels`` takes them);
    raises ``ValueError`` naming a bad one."""
    labels: dict[str, str] = {}
    for entry in entries:
        for part in entry.split(","):
            part = part.strip()
            if not part:
                continue
            key, equals, value = part.partition("=")
            if not equals:
                raise ValueError(f"node label {part!r}: expected key=value")
            problem = label_problem(key.strip(), value.strip())
            if problem:
                raise ValueError(f"node label {part!r}: {problem}")
            labels[key.strip()] = value.strip()
    return labels


def node_labels(node_name: str, extra: Mapping[str, str] = {}) -> dict[str, str]:
    """The labels a kubelet puts on its node (hostname, os, arch and their ``beta.`` forms),
    then ``extra`` (``--node-labels``), which may override them."""
    arch = machine_arch()
    return {
        BETA_ARCH_LABEL: arch,
        BETA_OS_LABEL: "linux",
        ARCH_LABEL: arch,
        HOSTNAME_LABEL: node_name,
        OS_LABEL: "linux",
        **extra,
    }


def _as_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def requirement_matches(req: NodeSelectorRequirement, values: Mapping[str, str]) -> bool:
    """One ``matchExpressions`` / ``matchFields`` entry against labels (or fields)."""
    present = req.key in values
    value = values.get(req.key, "")
    if req.operator == "In":
        return present and value in req.values
    if req.operator == "NotIn":
        return not present or value not in req.values
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    if req.operator in ("Gt", "Lt") and present and len(req.values) == 1:
        have, want = _as_int(value), _as_int(req.values[0])
        if have is None or want is None:
            return False
        return have > want if req.operator == "Gt" else have < want
    return False


def term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str) -> bool:
    """All of a term's requirements hold; a term with none matches no node (as Kubernetes)."""
    if not term.match_expressions and not term.match_fields:
        return False
    fields = {NODE_NAME_FIELD: node_name}
    return all(requirement_matches(r, labels) for r in term.match_expressions) and all(
        requirement_matches(r, fields) for r in term.match_fields
    )


def pod_matches_node(pod: Pod, labels: Mapping[str, str], node_name: str) -> bool:
    """``nodeSelector`` (every pair) and required node affinity (any term) both hold."""
    spec = pod.spec
    if any(labels.get(key) != value for key, value in spec.node_selector.items()):
        return False
    node_affinity = spec.affinity.node_affinity if spec.affinity else None
    required = (
        node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None
    )
    if required is None:
        return True
    return any(term_matches(t, labels, node_name) for t in required.node_selector_terms)


def scheduler_only_fields(pod: Pod) -> list[str]:
    """The v1 names of the fields a pod sets that only a scheduler or an API server acts on (the
    agent accepts them and does nothing with them)."""
    spec = pod.spec
    affinity = spec.affinity
    node_affinity = affinity.node_affinity if affinity else None
    present = {
        "tolerations": spec.tolerations,
        "topologySpreadConstraints": spec.topology_spread_constraints,
        "schedulingGates": spec.scheduling_gates,
        "priority": spec.priority is not None,
        "priorityClassName": spec.priority_class_name,
        "preemptionPolicy": spec.preemption_policy,
        "schedulerName": spec.scheduler_name,
        "affinity.podAffinity": affinity is not None and affinity.pod_affinity is not None,
        "affinity.podAntiAffinity": affinity is not None and affinity.pod_anti_affinity is not None,
        "affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution": (
            node_affinity is not None
            and node_affinity.preferred_during_scheduling_ignored_during_execution
        ),
        "serviceAccountName": spec.service_account_name,
        "serviceAccount": spec.service_account,
        "automountServiceAccountToken": spec.automount_service_account_token is not None,
        "overhead": spec.overhead,
        "os": spec.os is not None,
        "metadata.generateName": pod.metadata.generate_name,
    }
    return [name for name, value in present.items() if value]


# --- resources the node does not have ---------------------------------------------------------


def _is_scarce(name: str) -> bool:
    """Resources a node hands out whole and kubecore's node has none of."""
    return name.startswith("hugepages-") or is_extended_resource(name)


def _requests(container: Container) -> dict[str, Decimal]:
    # Kubernetes defaults the request of a resource that cannot be overcommitted to its limit.
    resources = container.resources
    wanted = {**resources.limits, **resources.requests}
    out: dict[str, Decimal] = {}
    for name, text in wanted.items():
        if _is_scarce(name):
            try:
                out[name] = parse_quantity(text)
            except ValueError:
                continue
    return out


def scarce_requests(pod: Pod) -> dict[str, Decimal]:
    """The pod's effective request of each hugepages or extended resource: the larger of the app
    containers' sum and any one init container's (they run one at a time)."""
    total: dict[str, Decimal] = {}
    for container in pod.spec.containers:
        for name, value in _requests(container).items():
            total[name] = total.get(name, Decimal(0)) + value
    for container in pod.spec.init_containers:
        for name, value in _requests(container).items():
            total[name] = max(total.get(name, Decimal(0)), value)
    return {name: value for name, value in total.items() if value > 0}


def _whole(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else str(value)


def insufficient_resource(
    pod: Pod, used: Mapping[str, Decimal], capacity: Mapping[str, Decimal] = {}
) -> tuple[str, str] | None:
    """(reason, message) for the first scarce resource the node cannot give the pod, as the
    kubelet says it (``OutOfexample.com/dongle``); None when it fits."""
    for name, requested in sorted(scarce_requests(pod).items()):
        have = capacity.get(name, Decimal(0))
        in_use = used.get(name, Decimal(0))
        if requested + in_use > have:
            return (
                f"OutOf{name}",
                f"Node didn't have enough resource: {name}, requested: {_whole(requested)},"
                f" used: {_whole(in_use)}, capacity: {_whole(have)}",
            )
    return None


def node_fit_rejection(pod: Pod, labels: Mapping[str, str], node_name: str) -> Rejection | None:
    """The pod's node selector and required node affinity against this node's labels."""
    if pod_matches_node(pod, labels, node_name):
        return None
    return Rejection(NODE_AFFINITY, f"Pod was rejected: {NODE_AFFINITY_MESSAGE}")
