"""The rules about the fields only a scheduler reads: node selectors, affinity, tolerations,
topology spread, priority and the OS."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kubecore._contract.errors import FieldError
from kubecore._manifest.decoding import _field, _item, _Problems
from kubecore._manifest.validation.names import (
    check_enum,
    check_label_key,
    check_label_value,
    check_name,
    dns_label_problem,
    dns_subdomain_problem,
    one_of,
)
from kubecore._manifest.validation.resources import check_quantities
from kubecore._model import v1 as m

_TOLERATION_OPERATORS = ("Equal", "Exists")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_INCLUSION_POLICIES = ("Honor", "Ignore")
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_OS_NAMES = ("linux", "windows")
_NODE_NAME_FIELD = "metadata.name"


def _check_values_for_operator(
    errs: _Problems, path: str, operator: str, values: Sequence[str]
) -> None:
    where = _field(path, "values")
    if operator in ("In", "NotIn") and not values:
        errs.append(FieldError(where, f"required: at least one value for operator {operator}"))
    elif operator in ("Exists", "DoesNotExist") and values:
        errs.append(FieldError(where, f"must be empty for operator {operator}"))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(FieldError(where, f"must have exactly one value for operator {operator}"))
        elif not re.fullmatch(r"-?[0-9]{1,18}", values[0]):
            errs.append(
                FieldError(
                    _item(where, 0),
                    f"must be an integer for operator {operator}, got {values[0]!r}",
                )
            )


def _check_label_selector(errs: _Problems, path: str, selector: m.LabelSelector | None) -> None:
    if selector is None:
        return
    for key, value in selector.match_labels.items():
        where = _item(_field(path, "matchLabels"), key)
        check_label_key(errs, where, key)
        check_label_value(errs, where, value)
    for i, req in enumerate(selector.match_expressions):
        where = _item(_field(path, "matchExpressions"), i)
        check_label_key(errs, _field(where, "key"), req.key)
        if req.operator not in _LABEL_SELECTOR_OPERATORS:
            errs.append(
                FieldError(
                    _field(where, "operator"), one_of(req.operator, _LABEL_SELECTOR_OPERATORS)
                )
            )
        else:
            _check_values_for_operator(errs, where, req.operator, req.values)


def _check_node_selector_term(errs: _Problems, path: str, term: m.NodeSelectorTerm) -> None:
    for i, req in enumerate(term.match_expressions):
        where = _item(_field(path, "matchExpressions"), i)
        check_label_key(errs, _field(where, "key"), req.key)
        if req.operator not in _NODE_SELECTOR_OPERATORS:
            errs.append(
                FieldError(
                    _field(where, "operator"), one_of(req.operator, _NODE_SELECTOR_OPERATORS)
                )
            )
        else:
            _check_values_for_operator(errs, where, req.operator, req.values)
    for i, req in enumerate(term.match_fields):
        where = _item(_field(path, "matchFields"), i)
        if req.key != _NODE_NAME_FIELD:
            errs.append(
                FieldError(
                    _field(where, "key"),
                    f"unsupported field {req.key!r}: must be {_NODE_NAME_FIELD}",
                )
            )
        if req.operator not in ("In", "NotIn"):
            errs.append(
                FieldError(_field(where, "operator"), one_of(req.operator, ("In", "NotIn")))
            )
        elif len(req.values) != 1:
            errs.append(
                FieldError(_field(where, "values"), "must have exactly one value (a node name)")
            )


def _check_weight(errs: _Problems, path: str, weight: int) -> None:
    if not 1 <= weight <= 100:
        errs.append(FieldError(path, f"must be 1-100, got {weight}"))


def _check_node_affinity(errs: _Problems, path: str, affinity: m.NodeAffinity) -> None:
    required = affinity.required_during_scheduling_ignored_during_execution
    if required is not None:
        where = _field(path, "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms")
        if not required.node_selector_terms:
            errs.append(FieldError(where, "required: at least one term"))
        for i, term in enumerate(required.node_selector_terms):
            _check_node_selector_term(errs, _item(where, i), term)
    preferred = affinity.preferred_during_scheduling_ignored_during_execution
    for i, weighted in enumerate(preferred):
        where = _item(_field(path, "preferredDuringSchedulingIgnoredDuringExecution"), i)
        _check_weight(errs, _field(where, "weight"), weighted.weight)
        _check_node_selector_term(errs, _field(where, "preference"), weighted.preference)


def _check_pod_affinity_term(errs: _Problems, path: str, term: m.PodAffinityTerm) -> None:
    check_label_key(errs, _field(path, "topologyKey"), term.topology_key)
    _check_label_selector(errs, _field(path, "labelSelector"), term.label_selector)
    _check_label_selector(errs, _field(path, "namespaceSelector"), term.namespace_selector)
    for i, namespace in enumerate(term.namespaces):
        check_name(errs, _item(_field(path, "namespaces"), i), namespace, dns_label_problem)


def _check_pod_affinity(errs: _Problems, path: str, affinity: m.PodAffinity) -> None:
    required = affinity.required_during_scheduling_ignored_during_execution
    for i, term in enumerate(required):
        _check_pod_affinity_term(
            errs, _item(_field(path, "requiredDuringSchedulingIgnoredDuringExecution"), i), term
        )
    preferred = affinity.preferred_during_scheduling_ignored_during_execution
    for i, weighted in enumerate(preferred):
        where = _item(_field(path, "preferredDuringSchedulingIgnoredDuringExecution"), i)
        _check_weight(errs, _field(where, "weight"), weighted.weight)
        _check_pod_affinity_term(errs, _field(where, "podAffinityTerm"), weighted.pod_affinity_term)


def _check_tolerations(errs: _Problems, path: str, tolerations: Sequence[m.Toleration]) -> None:
    for i, toleration in enumerate(tolerations):
        where = _item(path, i)
        operator = toleration.operator or "Equal"
        if toleration.key:
            check_label_key(errs, _field(where, "key"), toleration.key)
        elif operator != "Exists":
            errs.append(FieldError(_field(where, "operator"), "must be Exists when key is empty"))
        if operator not in _TOLERATION_OPERATORS:
            errs.append(
                FieldError(_field(where, "operator"), one_of(operator, _TOLERATION_OPERATORS))
            )
        elif operator == "Exists" and toleration.value:
            errs.append(FieldError(_field(where, "value"), "must be empty when operator is Exists"))
        if toleration.effect and toleration.effect not in _TAINT_EFFECTS:
            errs.append(
                FieldError(_field(where, "effect"), one_of(toleration.effect, _TAINT_EFFECTS))
            )
        if toleration.toleration_seconds is not None and toleration.effect != "NoExecute":
            errs.append(
                FieldError(
                    _field(where, "effect"),
                    "must be NoExecute when tolerationSeconds is set",
                )
            )


def _check_spread_constraints(
    errs: _Problems, path: str, constraints: Sequence[m.TopologySpreadConstraint]
) -> None:
    for i, constraint in enumerate(constraints):
        where = _item(path, i)
        if constraint.max_skew < 1:
            errs.append(
                FieldError(
                    _field(where, "maxSkew"), f"must be at least 1, got {constraint.max_skew}"
                )
            )
        check_label_key(errs, _field(where, "topologyKey"), constraint.topology_key)
        check_enum(
            errs,
            _field(where, "whenUnsatisfiable"),
            constraint.when_unsatisfiable,
            _WHEN_UNSATISFIABLE,
        )
        if constraint.min_domains is not None:
            if constraint.min_domains < 1:
                errs.append(
                    FieldError(
                        _field(where, "minDomains"),
                        f"must be at least 1, got {constraint.min_domains}",
                    )
                )
            elif constraint.when_unsatisfiable != "DoNotSchedule":
                errs.append(
                    FieldError(
                        _field(where, "minDomains"),
                        "can only be set when whenUnsatisfiable is DoNotSchedule",
                    )
                )
        for name, policy in (
            ("nodeAffinityPolicy", constraint.node_affinity_policy),
            ("nodeTaintsPolicy", constraint.node_taints_policy),
        ):
            if policy and policy not in _INCLUSION_POLICIES:
                errs.append(FieldError(_field(where, name), one_of(policy, _INCLUSION_POLICIES)))
        _check_label_selector(errs, _field(where, "labelSelector"), constraint.label_selector)


def check_scheduling(errs: _Problems, path: str, spec: m.PodSpec) -> None:
    """The fields only a scheduler or an API server acts on (the node checks nodeSelector and
    required node affinity at admission): their values must still be well formed."""
    for key, value in spec.node_selector.items():
        where = _item(_field(path, "nodeSelector"), key)
        check_label_key(errs, where, key)
        check_label_value(errs, where, value)
    affinity = spec.affinity
    if affinity is not None:
        where = _field(path, "affinity")
        if affinity.node_affinity is not None:
            _check_node_affinity(errs, _field(where, "nodeAffinity"), affinity.node_affinity)
        if affinity.pod_affinity is not None:
            _check_pod_affinity(errs, _field(where, "podAffinity"), affinity.pod_affinity)
        if affinity.pod_anti_affinity is not None:
            _check_pod_affinity(errs, _field(where, "podAntiAffinity"), affinity.pod_anti_affinity)
    _check_tolerations(errs, _field(path, "tolerations"), spec.tolerations)
    _check_spread_constraints(
        errs, _field(path, "topologySpreadConstraints"), spec.topology_spread_constraints
    )
    gates: set[str] = set()
    for i, gate in enumerate(spec.scheduling_gates):
        where = _field(_item(_field(path, "schedulingGates"), i), "name")
        check_label_key(errs, where, gate.name)
        if gate.name in gates:
            errs.append(FieldError(where, f"duplicate scheduling gate {gate.name!r}"))
        gates.add(gate.name)
    if spec.preemption_policy:
        check_enum(
            errs, _field(path, "preemptionPolicy"), spec.preemption_policy, _PREEMPTION_POLICIES
        )
    for name, value in (
        ("schedulerName", spec.scheduler_name),
        ("priorityClassName", spec.priority_class_name),
        ("serviceAccountName", spec.service_account_name),
        ("serviceAccount", spec.service_account),
    ):
        if value and (problem := dns_subdomain_problem(value)):
            errs.append(FieldError(_field(path, name), problem))
    if (
        spec.service_account
        and spec.service_account_name
        and spec.service_account != spec.service_account_name
    ):
        errs.append(
            FieldError(
                _field(path, "serviceAccount"),
                f"must equal serviceAccountName ({spec.service_account_name!r}) when both are set",
            )
        )
    check_quantities(errs, _field(path, "overhead"), spec.overhead)
    for i, readiness_gate in enumerate(spec.readiness_gates):
        check_label_key(
            errs,
            _field(_item(_field(path, "readinessGates"), i), "conditionType"),
            readiness_gate.condition_type,
        )
    if spec.os is not None:
        where = _field(path, "os.name")
        if spec.os.name == "windows":
            errs.append(
                FieldError(where, "unsupported value 'windows': kubecore runs Linux containers")
            )
        elif spec.os.name != "linux":
            check_enum(errs, where, spec.os.name, _OS_NAMES)
