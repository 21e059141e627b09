"""The rules about a whole pod: its spec (containers, volumes, policies, DNS, host names) and
status; ``validate_pod`` for embedders who build pods in code."""

from __future__ import annotations

import ipaddress

from kubecore._contract.errors import FieldError
from kubecore._manifest.decoding import _field, _item, _Problems
from kubecore._manifest.security import check_security
from kubecore._manifest.validation.containers import (
    RESTART_POLICIES,
    check_container,
    check_host_ports,
)
from kubecore._manifest.validation.env import check_file_key_volumes
from kubecore._manifest.validation.ephemeral import check_ephemeral_containers
from kubecore._manifest.validation.metadata import check_metadata
from kubecore._manifest.validation.names import (
    check_enum,
    dns_label_problem,
    dns_subdomain_problem,
    one_of,
)
from kubecore._manifest.validation.resources import check_pod_resources
from kubecore._manifest.validation.scheduling import check_scheduling
from kubecore._manifest.validation.volumes import check_volumes
from kubecore._model import v1 as m

_DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_CONDITION_STATUSES = ("True", "False", "Unknown")


def _check_spec(errs: _Problems, path: str, spec: m.PodSpec) -> None:
    volume_names = check_volumes(errs, _field(path, "volumes"), spec.volumes)
    if not spec.containers:
        errs.append(FieldError(_field(path, "containers"), "required: at least one container"))
    container_names: dict[str, str] = {}
    groups = (
        ("initContainers", spec.init_containers, True),
        ("containers", spec.containers, False),
    )
    for group, containers, init in groups:
        for i, container in enumerate(containers):
            where = _item(_field(path, group), i)
            check_container(
                errs,
                where,
                container,
                init=init,
                volume_names=volume_names,
                host_network=spec.host_network,
            )
            if container.name in container_names:
                errs.append(
                    FieldError(
                        _field(where, "name"),
                        f"duplicate container name {container.name!r} "
                        f"(also {container_names[container.name]})",
                    )
                )
            elif container.name:
                container_names[container.name] = where
        check_host_ports(errs, _field(path, group), containers)
    check_ephemeral_containers(errs, path, spec, volume_names, container_names)
    for group, containers, _init in groups:
        for i, container in enumerate(containers):
            for j, env in enumerate(container.env):
                field = env.value_from.resource_field_ref if env.value_from else None
                if field is not None and field.container_name not in ("", *container_names):
                    errs.append(
                        FieldError(
                            f"{_item(_field(path, group), i)}.env[{j}].valueFrom"
                            ".resourceFieldRef.containerName",
                            f"no container named {field.container_name!r} in the pod",
                        )
                    )
    check_file_key_volumes(errs, path, spec, [(g, c) for g, c, _init in groups])
    check_security(errs, path, spec)
    check_enum(errs, _field(path, "restartPolicy"), spec.restart_policy, RESTART_POLICIES)
    check_enum(errs, _field(path, "dnsPolicy"), spec.dns_policy, _DNS_POLICIES)
    if spec.termination_grace_period_seconds < 0:
        errs.append(
            FieldError(
                _field(path, "terminationGracePeriodSeconds"),
                f"must be 0 or more, got {spec.termination_grace_period_seconds}",
            )
        )
    deadline = spec.active_deadline_seconds
    if deadline is not None and deadline < 1:
        errs.append(
            FieldError(_field(path, "activeDeadlineSeconds"), f"must be 1 or more, got {deadline}")
        )
    if spec.node_name:
        problem = dns_subdomain_problem(spec.node_name)
        if problem:
            errs.append(FieldError(_field(path, "nodeName"), problem))
    for i, ref in enumerate(spec.image_pull_secrets):
        if not ref.name:
            errs.append(
                FieldError(_field(_item(_field(path, "imagePullSecrets"), i), "name"), "required")
            )
    check_scheduling(errs, path, spec)
    _check_pod_options(errs, path, spec)


MAX_DNS_NAMESERVERS = 3
MAX_DNS_SEARCH_PATHS = 32
MAX_DNS_SEARCH_CHARS = 2048
MAX_FQDN = 64


def _check_ip(errs: _Problems, path: str, value: str) -> None:
    if value == "":
        errs.append(FieldError(path, "required"))
        return
    try:
        ipaddress.ip_address(value)
    except ValueError:
        errs.append(FieldError(path, f"invalid IP address {value!r}"))


def _check_dns_config(errs: _Problems, path: str, spec: m.PodSpec) -> None:
    config = spec.dns_config
    if config is None:
        if spec.dns_policy == "None":
            errs.append(FieldError(_field(path, "dnsConfig"), "required when dnsPolicy is None"))
        return
    where = _field(path, "dnsConfig")
    if spec.dns_policy == "None" and not config.nameservers:
        errs.append(
            FieldError(
                _field(where, "nameservers"),
                "required: at least one nameserver when dnsPolicy is None",
            )
        )
    if len(config.nameservers) > MAX_DNS_NAMESERVERS:
        errs.append(
            FieldError(
                _field(where, "nameservers"),
                f"must have at most {MAX_DNS_NAMESERVERS} entries, got {len(config.nameservers)}",
            )
        )
    for i, server in enumerate(config.nameservers):
        _check_ip(errs, _item(_field(where, "nameservers"), i), server)
    if len(config.searches) > MAX_DNS_SEARCH_PATHS:
        errs.append(
            FieldError(
                _field(where, "searches"),
                f"must have at most {MAX_DNS_SEARCH_PATHS} entries, got {len(config.searches)}",
            )
        )
    if len(" ".join(config.searches)) > MAX_DNS_SEARCH_CHARS:
        errs.append(
            FieldError(
                _field(where, "searches"), f"must be at most {MAX_DNS_SEARCH_CHARS} characters"
            )
        )
    for i, search in enumerate(config.searches):
        if problem := dns_subdomain_problem(search.rstrip(".")):
            errs.append(FieldError(_item(_field(where, "searches"), i), problem))
    for i, option in enumerate(config.options):
        if not option.name:
            errs.append(FieldError(_field(_item(_field(where, "options"), i), "name"), "required"))


def _check_pod_options(errs: _Problems, path: str, spec: m.PodSpec) -> None:
    for name, value in (("hostname", spec.hostname), ("subdomain", spec.subdomain)):
        if value and (problem := dns_label_problem(value)):
            errs.append(FieldError(_field(path, name), problem))
    for i, alias in enumerate(spec.host_aliases):
        where = _item(_field(path, "hostAliases"), i)
        _check_ip(errs, _field(where, "ip"), alias.ip)
        if not alias.hostnames:
            errs.append(FieldError(_field(where, "hostnames"), "required: at least one hostname"))
        for j, hostname in enumerate(alias.hostnames):
            if problem := dns_subdomain_problem(hostname):
                errs.append(FieldError(_item(_field(where, "hostnames"), j), problem))
    if spec.share_process_namespace and spec.host_pid:
        errs.append(
            FieldError(_field(path, "shareProcessNamespace"), "cannot be set when hostPID is true")
        )
    _check_dns_config(errs, path, spec)
    check_pod_resources(errs, _field(path, "resources"), spec)


def _check_status(errs: _Problems, path: str, status: m.PodStatus) -> None:
    if status.phase not in _PHASES:
        errs.append(FieldError(_field(path, "phase"), one_of(status.phase, _PHASES)))
    for i, condition in enumerate(status.conditions):
        if condition.status not in _CONDITION_STATUSES:
            errs.append(
                FieldError(
                    _field(_item(_field(path, "conditions"), i), "status"),
                    one_of(condition.status, _CONDITION_STATUSES),
                )
            )


def validate(pod: m.Pod, path: str) -> _Problems:
    errs: _Problems = []
    if pod.api_version != "v1":
        errs.append(
            FieldError(
                _field(path, "apiVersion"),
                f"must be 'v1', got {pod.api_version!r}" if pod.api_version else "required",
            )
        )
    if pod.kind != "Pod":
        errs.append(
            FieldError(
                _field(path, "kind"),
                f"must be 'Pod', got {pod.kind!r}" if pod.kind else "required",
            )
        )
    check_metadata(errs, _field(path, "metadata"), pod.metadata)
    _check_spec(errs, _field(path, "spec"), pod.spec)
    if pod.status is not None:
        _check_status(errs, _field(path, "status"), pod.status)
    return errs


def validate_pod(pod: m.Pod) -> list[FieldError]:
    """Every problem with a built pod (an empty list when it is valid).

    The same value rules the loaders apply: names, ports, volumes and mounts, probes, resources,
    enums. JSON type rules only apply to loading.
    """
    return validate(pod, "")
