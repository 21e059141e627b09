"""The rules about one container (init, sidecar, app or ephemeral): its fields, ports, restart rules
and volume mounts; and the host ports of all of them."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from kubecore._contract.errors import FieldError
from kubecore._manifest.decoding import _PROTOCOLS, _field, _item, _Problems
from kubecore._manifest.validation.env import check_container_env
from kubecore._manifest.validation.names import (
    check_enum,
    check_name,
    check_port_number,
    dns_label_problem,
    one_of,
    port_name_problem,
    relative_path_problem,
)
from kubecore._manifest.validation.probes import check_container_hooks
from kubecore._manifest.validation.resources import check_resize_policy, check_resources
from kubecore._model import v1 as m

RESTART_POLICIES = ("Always", "OnFailure", "Never")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")


def _check_ports(
    errs: _Problems, path: str, container: m.Container, host_network: bool
) -> frozenset[str]:
    names: dict[str, int] = {}
    for i, port in enumerate(container.ports):
        where = _item(path, i)
        check_port_number(errs, _field(where, "containerPort"), port.container_port)
        check_port_number(errs, _field(where, "hostPort"), port.host_port, low=0)
        if port.protocol not in _PROTOCOLS:
            errs.append(FieldError(_field(where, "protocol"), one_of(port.protocol, _PROTOCOLS)))
        if port.host_ip:
            try:
                ipaddress.ip_address(port.host_ip)
            except ValueError:
                errs.append(
                    FieldError(_field(where, "hostIP"), f"invalid IP address {port.host_ip!r}")
                )
        if host_network and port.host_port and port.host_port != port.container_port:
            errs.append(
                FieldError(
                    _field(where, "hostPort"),
                    f"must match containerPort ({port.container_port}) when hostNetwork is true",
                )
            )
        if port.name:
            problem = port_name_problem(port.name)
            if problem:
                errs.append(FieldError(_field(where, "name"), problem))
            elif port.name in names:
                errs.append(
                    FieldError(
                        _field(where, "name"),
                        f"duplicate port name {port.name!r} (also ports[{names[port.name]}])",
                    )
                )
            else:
                names[port.name] = i
    return frozenset(names)


_MAX_RESTART_RULES = 20
_MAX_RESTART_RULE_EXIT_CODES = 255
_RESTART_RULE_ACTIONS = ("Restart",)
_RESTART_RULE_OPERATORS = ("In", "NotIn")
RESTART_ALL_CONTAINERS = "RestartAllContainers"
RESTART_ALL_CONTAINERS_REASON = (
    "not supported by kubecore: RestartAllContainers restarts every container of the pod in"
    " place, a separate feature (alpha, KEP-5532, off by default in Kubernetes)"
)


SIDECAR_RULES_REASON = (
    "restartPolicyRules are not allowed for init containers with restart policy Always"
)


def _check_restart_rules(errs: _Problems, path: str, container: m.Container, *, init: bool) -> None:
    """A container's own ``restartPolicy`` and ``restartPolicyRules`` (KEP-5307), as the API
    server checks them: rules need the container's policy; a sidecar (an init container with
    ``Always``) takes no rules."""
    policy, rules = container.restart_policy, container.restart_policy_rules
    if policy is None:
        if rules:
            errs.append(
                FieldError(
                    _field(path, "restartPolicy"),
                    "required: must specify restartPolicy when restart rules are used",
                )
            )
            if not init:  # as the API server: an init container's rules are not read further
                _check_restart_rule_list(errs, path, rules)
        return
    check_enum(errs, _field(path, "restartPolicy"), policy, RESTART_POLICIES)
    if init and policy == "Always":
        _check_sidecar_rules(errs, path, rules)
    else:
        _check_restart_rule_list(errs, path, rules)


def _check_sidecar_rules(
    errs: _Problems, path: str, rules: Sequence[m.ContainerRestartRule]
) -> None:
    where = _field(path, "restartPolicyRules")
    for i, rule in enumerate(rules):
        if rule.action == RESTART_ALL_CONTAINERS:
            errs.append(
                FieldError(_field(_item(where, i), "action"), RESTART_ALL_CONTAINERS_REASON)
            )
    if any(rule.action != RESTART_ALL_CONTAINERS for rule in rules):
        errs.append(FieldError(where, SIDECAR_RULES_REASON))


def _check_restart_rule_list(
    errs: _Problems, path: str, rules: Sequence[m.ContainerRestartRule]
) -> None:
    where = _field(path, "restartPolicyRules")
    if len(rules) > _MAX_RESTART_RULES:
        errs.append(
            FieldError(where, f"must have at most {_MAX_RESTART_RULES} rules, got {len(rules)}")
        )
    for i, rule in enumerate(rules):
        rule_path = _item(where, i)
        if rule.action == RESTART_ALL_CONTAINERS:
            errs.append(FieldError(_field(rule_path, "action"), RESTART_ALL_CONTAINERS_REASON))
        else:
            check_enum(errs, _field(rule_path, "action"), rule.action, _RESTART_RULE_ACTIONS)
        codes = rule.exit_codes
        if codes is None:
            errs.append(FieldError(_field(rule_path, "exitCodes"), "required"))
            continue
        codes_path = _field(rule_path, "exitCodes")
        check_enum(errs, _field(codes_path, "operator"), codes.operator, _RESTART_RULE_OPERATORS)
        if len(codes.values) > _MAX_RESTART_RULE_EXIT_CODES:
            errs.append(
                FieldError(
                    _field(codes_path, "values"),
                    f"must have at most {_MAX_RESTART_RULE_EXIT_CODES} values,"
                    f" got {len(codes.values)}",
                )
            )


def check_container(
    errs: _Problems,
    path: str,
    container: m.Container,
    *,
    init: bool,
    volume_names: frozenset[str],
    host_network: bool,
) -> None:
    check_name(errs, _field(path, "name"), container.name, dns_label_problem)
    if container.image == "":
        errs.append(FieldError(_field(path, "image"), "required"))
    elif any(c.isspace() for c in container.image):
        errs.append(
            FieldError(
                _field(path, "image"),
                f"must not contain whitespace, got {container.image!r}",
            )
        )
    check_enum(errs, _field(path, "imagePullPolicy"), container.image_pull_policy, _PULL_POLICIES)
    if container.termination_message_path == "":
        errs.append(FieldError(_field(path, "terminationMessagePath"), "required"))
    check_enum(
        errs,
        _field(path, "terminationMessagePolicy"),
        container.termination_message_policy,
        _TERMINATION_MESSAGE_POLICIES,
    )
    _check_restart_rules(errs, path, container, init=init)
    check_resize_policy(errs, _field(path, "resizePolicy"), container.resize_policy)
    # A sidecar (a restartable init container) runs beside the app: probes and hooks apply.
    init = init and not container.is_sidecar
    port_names = _check_ports(errs, _field(path, "ports"), container, host_network)

    check_container_env(errs, path, container)
    _check_volume_mounts(errs, path, container, volume_names)
    check_resources(errs, _field(path, "resources"), container.resources)
    check_container_hooks(errs, path, container, port_names, init=init)


def _check_volume_mounts(
    errs: _Problems, path: str, container: m.Container, volume_names: frozenset[str]
) -> None:
    mount_paths: dict[str, int] = {}
    for i, mount in enumerate(container.volume_mounts):
        where = _item(_field(path, "volumeMounts"), i)
        if mount.name == "":
            errs.append(FieldError(_field(where, "name"), "required"))
        elif mount.name not in volume_names:
            errs.append(
                FieldError(_field(where, "name"), f"no volume named {mount.name!r} in the pod")
            )
        mount_where = _field(where, "mountPath")
        if mount.mount_path == "":
            errs.append(FieldError(mount_where, "required"))
        elif not mount.mount_path.startswith("/"):
            errs.append(
                FieldError(mount_where, f"must be an absolute path, got {mount.mount_path!r}")
            )
        elif mount.mount_path in mount_paths:
            errs.append(
                FieldError(
                    mount_where,
                    f"duplicate mount path {mount.mount_path!r} "
                    f"(also volumeMounts[{mount_paths[mount.mount_path]}])",
                )
            )
        else:
            mount_paths[mount.mount_path] = i
        _check_volume_mount(errs, where, mount, container)


_MOUNT_PROPAGATIONS = ("None", "HostToContainer", "Bidirectional")


def _check_volume_mount(
    errs: _Problems, where: str, mount: m.VolumeMount, container: m.Container
) -> None:
    if mount.sub_path and (problem := relative_path_problem(mount.sub_path)) is not None:
        errs.append(FieldError(_field(where, "subPath"), problem))
    if mount.sub_path_expr:
        if mount.sub_path:
            errs.append(
                FieldError(_field(where, "subPathExpr"), "may not be set together with subPath")
            )
        if (problem := relative_path_problem(mount.sub_path_expr)) is not None:
            errs.append(FieldError(_field(where, "subPathExpr"), problem))
    if mount.mount_propagation is not None:
        at = _field(where, "mountPropagation")
        check_enum(errs, at, mount.mount_propagation, _MOUNT_PROPAGATIONS)
        if mount.mount_propagation == "Bidirectional" and not container.privileged:
            errs.append(
                FieldError(
                    at, "Bidirectional mount propagation is available only to privileged containers"
                )
            )


def check_host_ports(errs: _Problems, path: str, containers: Sequence[m.Container]) -> None:
    seen: dict[tuple[int, str, str], str] = {}
    for c, container in enumerate(containers):
        for p, port in enumerate(container.ports):
            if not port.host_port:
                continue
            where = _field(_item(_field(_item(path, c), "ports"), p), "hostPort")
            key = (port.host_port, port.protocol, port.host_ip)
            if key in seen:
                errs.append(
                    FieldError(
                        where,
                        f"duplicate host port {port.host_port}/{port.protocol} (also {seen[key]})",
                    )
                )
            else:
                seen[key] = where
