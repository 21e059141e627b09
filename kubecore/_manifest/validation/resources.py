"""The rules about resources: resource names, quantities, requests within limits, resize policies,
and the pod-level resources."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

from kubecore._contract.errors import FieldError
from kubecore._manifest.decoding import _field, _item, _Problems
from kubecore._manifest.validation.names import check_enum, qualified_name_problem
from kubecore._model import v1 as m
from kubecore._model.quantity import parse_quantity

_HUGEPAGES_PREFIX = "hugepages-"


def is_extended_resource(name: str) -> bool:
    """A resource named by a domain (``example.com/dongle``) outside ``kubernetes.io``."""
    domain, slash, _ = name.partition("/")
    return bool(slash) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


def _resource_name_problem(name: str) -> str | None:
    if name in ("cpu", "memory", "ephemeral-storage"):
        return None
    if name.startswith(_HUGEPAGES_PREFIX):
        try:
            parse_quantity(name[len(_HUGEPAGES_PREFIX) :])
        except ValueError:
            return f"invalid hugepages resource name {name!r}: expected e.g. hugepages-2Mi"
        return None
    if is_extended_resource(name):
        return qualified_name_problem(name)
    return (
        f"unsupported resource name {name!r}: expected cpu, memory, ephemeral-storage, "
        "hugepages-<size> or an extended resource such as example.com/dongle"
    )


def _can_overcommit(name: str) -> bool:
    # Kubernetes: hugepages and extended resources are handed out whole, never overcommitted.
    return not (name.startswith(_HUGEPAGES_PREFIX) or is_extended_resource(name))


def check_quantities(errs: _Problems, path: str, values: Mapping[str, str]) -> dict[str, Decimal]:
    parsed: dict[str, Decimal] = {}
    for name, text in values.items():
        where = _item(path, name)
        problem = _resource_name_problem(name)
        if problem:
            errs.append(FieldError(where, problem))
            continue
        try:
            value = parse_quantity(text)
        except ValueError as exc:
            errs.append(FieldError(where, str(exc)))
            continue
        if value < 0:
            errs.append(FieldError(where, f"must not be negative, got {text!r}"))
            continue
        if is_extended_resource(name) and value != value.to_integral_value():
            errs.append(FieldError(where, f"must be a whole number, got {text!r}"))
            continue
        parsed[name] = value
    return parsed


def check_resources(errs: _Problems, path: str, resources: m.ResourceRequirements) -> None:
    requests = check_quantities(errs, _field(path, "requests"), resources.requests)
    limits = check_quantities(errs, _field(path, "limits"), resources.limits)
    for name, request in requests.items():
        limit = limits.get(name)
        where = _item(_field(path, "requests"), name)
        if limit is None:
            if not _can_overcommit(name):
                errs.append(
                    FieldError(
                        _item(_field(path, "limits"), name),
                        f"required: {name} cannot be overcommitted, so its request needs a limit",
                    )
                )
        elif not _can_overcommit(name) and request != limit:
            errs.append(
                FieldError(
                    where,
                    f"must be equal to the {name} limit ({resources.limits[name]}), "
                    f"got {resources.requests[name]}",
                )
            )
        elif request > limit:
            errs.append(
                FieldError(
                    where,
                    f"must be less than or equal to the {name} limit "
                    f"({resources.limits[name]}), got {resources.requests[name]}",
                )
            )


_RESIZABLE = ("cpu", "memory")
_RESIZE_RESTART_POLICIES = ("NotRequired", "RestartContainer")


def check_resize_policy(
    errs: _Problems, path: str, policies: Sequence[m.ContainerResizePolicy]
) -> None:
    seen: dict[str, int] = {}
    for i, policy in enumerate(policies):
        where = _item(path, i)
        name = policy.resource_name
        check_enum(errs, _field(where, "resourceName"), name, _RESIZABLE)
        check_enum(
            errs, _field(where, "restartPolicy"), policy.restart_policy, _RESIZE_RESTART_POLICIES
        )
        if name in seen:
            errs.append(
                FieldError(
                    _field(where, "resourceName"),
                    f"duplicate resource {name!r} (also resizePolicy[{seen[name]}])",
                )
            )
        else:
            seen[name] = i


_POD_RESOURCES = ("cpu", "memory")


def check_pod_resources(errs: _Problems, path: str, spec: m.PodSpec) -> None:
    resources = spec.resources
    if resources is None:
        return
    for group, values in (("requests", resources.requests), ("limits", resources.limits)):
        for name in values:
            if name not in _POD_RESOURCES:
                errs.append(
                    FieldError(
                        _item(_field(path, group), name),
                        f"unsupported pod-level resource {name!r}: must be cpu or memory",
                    )
                )
    check_resources(
        errs,
        path,
        m.ResourceRequirements(
            {k: v for k, v in resources.requests.items() if k in _POD_RESOURCES},
            {k: v for k, v in resources.limits.items() if k in _POD_RESOURCES},
        ),
    )
    for name, text in resources.requests.items():
        if name not in _POD_RESOURCES:
            continue
        try:
            pod_request = parse_quantity(text)
            containers = sum(
                (
                    parse_quantity(c.resources.requests[name])
                    for c in spec.containers
                    if name in c.resources.requests
                ),
                Decimal(0),
            )
        except ValueError:
            continue
        if containers > pod_request:
            errs.append(
                FieldError(
                    _item(_field(path, "requests"), name),
                    f"must be at least the sum of the containers' {name} requests, got {text}",
                )
            )
