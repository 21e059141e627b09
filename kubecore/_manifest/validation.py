"""Validation: the rules about values (not JSON types) on a built ``Pod``.

``validate_pod`` serves embedders who build pods in code; ``_decode_pod`` decodes and validates
plain data. A validation problem at, above or below a path that already has a decoding problem is
dropped: it would only repeat the decoding problem through a placeholder.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from decimal import Decimal

import attrs

from kubecore._contract.errors import FieldError, ValidationError
from kubecore._manifest.decoding import _POD, _PROTOCOLS, OBJECT_KINDS, _field, _item, _Problems
from kubecore._manifest.security import check_security
from kubecore._model import v1 as m
from kubecore._model.quantity import parse_quantity

_DNS_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_PORT_NAME_RE = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
_ENV_NAME_RE = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
_HEADER_NAME_RE = re.compile(r"[-A-Za-z0-9!#$%&'*+.^_`|~]+")
_HUGEPAGES_PREFIX = "hugepages-"

_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
# The Linux signal names Kubernetes accepts for lifecycle.stopSignal.
STOP_SIGNALS = frozenset(
    {
        *(
            f"SIG{name}"
            for name in [
                "ABRT",
                "ALRM",
                "BUS",
                "CHLD",
                "CLD",
                "CONT",
                "FPE",
                "HUP",
                "ILL",
                "INT",
                "IO",
                "IOT",
                "KILL",
                "PIPE",
                "POLL",
                "PROF",
                "PWR",
                "QUIT",
                "SEGV",
                "STKFLT",
                "STOP",
                "SYS",
                "TERM",
                "TRAP",
                "TSTP",
                "TTIN",
                "TTOU",
                "URG",
                "USR1",
                "USR2",
                "VTALRM",
                "WINCH",
                "XCPU",
                "XFSZ",
                "RTMIN",
                "RTMAX",
            ]
        ),
        *(f"SIGRTMIN+{n}" for n in range(1, 16)),
        *(f"SIGRTMAX-{n}" for n in range(1, 15)),
    }
)
_SCHEMES = ("HTTP", "HTTPS")
_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_CONDITION_STATUSES = ("True", "False", "Unknown")
_HOST_PATH_TYPES = (
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
)


def _one_of(value: str, choices: Sequence[str]) -> str:
    return f"unsupported value {value!r}: must be one of {', '.join(choices)}"


def _check_enum(errs: _Problems, path: str, value: str, choices: Sequence[str]) -> None:
    if value == "":
        errs.append(FieldError(path, "required"))
    elif value not in choices:
        errs.append(FieldError(path, _one_of(value, choices)))


def _dns_label_problem(value: str) -> str | None:
    if len(value) > 63:
        return f"must be no more than 63 characters, got {len(value)}"
    if not _DNS_LABEL_RE.fullmatch(value):
        return (
            f"invalid name {value!r}: must be a DNS-1123 label (lowercase letters, digits "
            "and '-', starting and ending with a letter or digit)"
        )
    return None


def _dns_subdomain_problem(value: str) -> str | None:
    if len(value) > 253:
        return f"must be no more than 253 characters, got {len(value)}"
    if not _DNS_SUBDOMAIN_RE.fullmatch(value):
        return (
            f"invalid name {value!r}: must be a DNS-1123 subdomain (lowercase letters, digits, "
            "'-' and '.', starting and ending with a letter or digit)"
        )
    return None


def _check_name(errs: _Problems, path: str, value: str, rule: Callable[[str], str | None]) -> None:
    if value == "":
        errs.append(FieldError(path, "required"))
        return
    problem = rule(value)
    if problem:
        errs.append(FieldError(path, problem))


def _qualified_name_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return f"invalid key {key!r}: the prefix before '/' must not be empty"
        problem = _dns_subdomain_problem(prefix)
        if problem:
            return f"invalid key prefix {prefix!r}: must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME_RE.fullmatch(name):
        return (
            f"invalid key {key!r}: the name must be 1-63 characters of letters, digits, "
            "'-', '_' or '.', starting and ending with a letter or digit"
        )
    return None


def _check_metadata(errs: _Problems, path: str, meta: m.ObjectMeta) -> None:
    _check_name(errs, _field(path, "name"), meta.name, _dns_subdomain_problem)
    _check_name(errs, _field(path, "namespace"), meta.namespace, _dns_label_problem)
    for key, value in meta.labels.items():
        where = _item(_field(path, "labels"), key)
        problem = _qualified_name_problem(key)
        if problem:
            errs.append(FieldError(where, problem))
        if value and (len(value) > 63 or not _QUALIFIED_NAME_RE.fullmatch(value)):
            errs.append(
                FieldError(
                    where,
                    f"invalid label value {value!r}: must be at most 63 characters of letters, "
                    "digits, '-', '_' or '.', starting and ending with a letter or digit",
                )
            )
    for key in meta.annotations:
        problem = _qualified_name_problem(key)
        if problem:
            errs.append(FieldError(_item(_field(path, "annotations"), key), problem))


def _check_port_number(errs: _Problems, path: str, value: int, low: int = 1) -> None:
    if not low <= value <= 65535:
        errs.append(FieldError(path, f"must be {low}-65535, got {value}"))


def _port_name_problem(name: str) -> str | None:
    if (
        len(name) > 15
        or not _PORT_NAME_RE.fullmatch(name)
        or "--" in name
        or not any(c.isalpha() for c in name)
    ):
        return (
            f"invalid port name {name!r}: must be at most 15 lowercase letters, digits and "
            "'-', with at least one letter, no '--', starting and ending with a letter or digit"
        )
    return None


def _check_handler_port(
    errs: _Problems, path: str, port: int | str, port_names: frozenset[str]
) -> None:
    if isinstance(port, int):
        _check_port_number(errs, path, port)
    elif port == "":
        errs.append(FieldError(path, "required"))
    elif port.isdigit():
        errs.append(FieldError(path, f"must be a number or a port name, got the string {port!r}"))
    elif port not in port_names:
        problem = _port_name_problem(port)
        errs.append(
            FieldError(path, problem or f"no port named {port!r} in this container's ports")
        )


def _check_handler(
    errs: _Problems,
    path: str,
    handler: m.Probe | m.LifecycleHandler,
    port_names: frozenset[str],
) -> None:
    kinds: tuple[tuple[str, object], ...] = (
        ("exec", handler.exec),
        ("httpGet", handler.http_get),
        ("tcpSocket", handler.tcp_socket),
    )
    if isinstance(handler, m.Probe):
        kinds += (("grpc", handler.grpc),)
    else:
        kinds += (("sleep", handler.sleep),)
    actions = [name for name, value in kinds if value is not None]
    if len(actions) != 1:
        got = " and ".join(actions) if actions else "none"
        choices = ", ".join(name for name, _ in kinds)
        errs.append(FieldError(path, f"must have exactly one of {choices}; got {got}"))
    sleep = handler.sleep if isinstance(handler, m.LifecycleHandler) else None
    if sleep is not None and sleep.seconds < 0:
        errs.append(
            FieldError(_field(path, "sleep.seconds"), f"must be 0 or more, got {sleep.seconds}")
        )
    if handler.exec is not None and not handler.exec.command:
        errs.append(FieldError(_field(path, "exec.command"), "required"))
    if handler.http_get is not None:
        where = _field(path, "httpGet")
        _check_handler_port(errs, _field(where, "port"), handler.http_get.port, port_names)
        if handler.http_get.scheme not in _SCHEMES:
            errs.append(
                FieldError(_field(where, "scheme"), _one_of(handler.http_get.scheme, _SCHEMES))
            )
        for i, header in enumerate(handler.http_get.http_headers):
            if not _HEADER_NAME_RE.fullmatch(header.name):
                errs.append(
                    FieldError(
                        _field(_item(_field(where, "httpHeaders"), i), "name"),
                        f"invalid HTTP header name {header.name!r}",
                    )
                )
    if handler.tcp_socket is not None:
        where = _field(path, "tcpSocket.port")
        _check_handler_port(errs, where, handler.tcp_socket.port, port_names)


def _check_probe(
    errs: _Problems, path: str, probe: m.Probe, kind: str, port_names: frozenset[str]
) -> None:
    _check_handler(errs, path, probe, port_names)
    if probe.grpc is not None:
        _check_port_number(errs, _field(_field(path, "grpc"), "port"), probe.grpc.port)
    grace = probe.termination_grace_period_seconds
    if grace is not None:
        where = _field(path, "terminationGracePeriodSeconds")
        if kind == "readinessProbe":
            errs.append(FieldError(where, "not allowed on a readinessProbe (it never kills)"))
        elif grace < 1:
            errs.append(FieldError(where, f"must be at least 1, got {grace}"))
    minimums = (
        ("initialDelaySeconds", probe.initial_delay_seconds, 0),
        ("timeoutSeconds", probe.timeout_seconds, 1),
        ("periodSeconds", probe.period_seconds, 1),
        ("successThreshold", probe.success_threshold, 1),
        ("failureThreshold", probe.failure_threshold, 1),
    )
    for name, value, low in minimums:
        if value < low:
            errs.append(FieldError(_field(path, name), f"must be at least {low}, got {value}"))
    if kind in ("livenessProbe", "startupProbe") and probe.success_threshold > 1:
        errs.append(
            FieldError(
                _field(path, "successThreshold"),
                f"must be 1 for a {kind}, got {probe.success_threshold}",
            )
        )


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
        return _qualified_name_problem(name)
    return (
        f"unsupported resource name {name!r}: expected cpu, memory, ephemeral-storage, "
        "hugepages-<size> or an extended resource such as example.com/dongle"
    )


def _can_overcommit(name: str) -> bool:
    # Kubernetes: hugepages and extended resources are handed out whole, never overcommitted.
    return not (name.startswith(_HUGEPAGES_PREFIX) or is_extended_resource(name))


def _check_quantities(errs: _Problems, path: str, values: Mapping[str, str]) -> dict[str, Decimal]:
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


def _check_resources(errs: _Problems, path: str, resources: m.ResourceRequirements) -> None:
    requests = _check_quantities(errs, _field(path, "requests"), resources.requests)
    limits = _check_quantities(errs, _field(path, "limits"), resources.limits)
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


def _check_ports(
    errs: _Problems, path: str, container: m.Container, host_network: bool
) -> frozenset[str]:
    names: dict[str, int] = {}
    for i, port in enumerate(container.ports):
        where = _item(path, i)
        _check_port_number(errs, _field(where, "containerPort"), port.container_port)
        _check_port_number(errs, _field(where, "hostPort"), port.host_port, low=0)
        if port.protocol not in _PROTOCOLS:
            errs.append(FieldError(_field(where, "protocol"), _one_of(port.protocol, _PROTOCOLS)))
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
            problem = _port_name_problem(port.name)
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


FIELD_REF_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
"""``env[].valueFrom.fieldRef.fieldPath`` values besides ``metadata.labels['k']`` and
``metadata.annotations['k']``."""
FIELD_REF_SUBSCRIPT_RE = re.compile(r"metadata\.(labels|annotations)\['(.+)'\]")
RESOURCE_FIELD_REF_RESOURCES = (
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
)
_KEY_RE = re.compile(r"[-._a-zA-Z0-9]+")


def _config_key_problem(key: str) -> str | None:
    """Kubernetes' rule for a ConfigMap or Secret key (and a file name in their volumes)."""
    if not key:
        return "required"
    if len(key) > 253 or not _KEY_RE.fullmatch(key) or key in (".", "..") or key.startswith(".."):
        return (
            f"invalid key {key!r}: must be at most 253 characters of letters, digits,"
            " '-', '_' or '.', and not '.', '..' or start with '..'"
        )
    return None


def _check_env_source(errs: _Problems, path: str, env: m.EnvVar) -> None:
    source = env.value_from
    assert source is not None
    where = _field(path, "valueFrom")
    if env.value:
        errs.append(FieldError(where, "may not be specified when `value` is not empty"))
    given = [
        name
        for name, value in (
            ("fieldRef", source.field_ref),
            ("resourceFieldRef", source.resource_field_ref),
            ("configMapKeyRef", source.config_map_key_ref),
            ("secretKeyRef", source.secret_key_ref),
            ("fileKeyRef", source.file_key_ref),
        )
        if value is not None
    ]
    if len(given) != 1:
        errs.append(
            FieldError(
                where,
                "must specify one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef,"
                " fileKeyRef"
                if not given
                else f"may not have more than one source, got {', '.join(given)}",
            )
        )
        return
    if source.field_ref is not None:
        ref = source.field_ref
        field_path = ref.field_path
        if ref.api_version != "v1":
            errs.append(
                FieldError(
                    _field(_field(where, "fieldRef"), "apiVersion"),
                    f"unsupported version {ref.api_version!r}: only 'v1'",
                )
            )
        if field_path not in FIELD_REF_PATHS and not FIELD_REF_SUBSCRIPT_RE.fullmatch(field_path):
            errs.append(
                FieldError(
                    _field(_field(where, "fieldRef"), "fieldPath"),
                    f"unsupported value {field_path!r}: use one of {', '.join(FIELD_REF_PATHS)},"
                    " metadata.labels['<key>'] or metadata.annotations['<key>']",
                )
            )
    if source.resource_field_ref is not None:
        ref_path = _field(where, "resourceFieldRef")
        res = source.resource_field_ref
        if res.resource not in RESOURCE_FIELD_REF_RESOURCES:
            errs.append(
                FieldError(
                    _field(ref_path, "resource"),
                    f"unsupported value {res.resource!r}: use one of "
                    + ", ".join(RESOURCE_FIELD_REF_RESOURCES),
                )
            )
        if res.divisor:
            _check_divisor(errs, _field(ref_path, "divisor"), res.resource, res.divisor)
    for name, selector in (
        ("configMapKeyRef", source.config_map_key_ref),
        ("secretKeyRef", source.secret_key_ref),
    ):
        if selector is None:
            continue
        ref_path = _field(where, name)
        if not selector.name:
            errs.append(FieldError(_field(ref_path, "name"), "required"))
        else:
            _check_name(errs, _field(ref_path, "name"), selector.name, _dns_subdomain_problem)
        problem = _config_key_problem(selector.key)
        if problem:
            errs.append(FieldError(_field(ref_path, "key"), problem))
    if source.file_key_ref is not None:
        _check_file_key_selector(errs, _field(where, "fileKeyRef"), source.file_key_ref)


def _check_file_key_selector(errs: _Problems, where: str, ref: m.FileKeySelector) -> None:
    """``fileKeyRef``'s own fields (its volume is checked against the pod's volumes apart)."""
    if not ref.volume_name:
        errs.append(FieldError(_field(where, "volumeName"), "required"))
    if not ref.path:
        errs.append(FieldError(_field(where, "path"), "required"))
    elif (problem := _relative_path_problem(ref.path)) is not None:
        errs.append(FieldError(_field(where, "path"), problem))
    if not ref.key:
        errs.append(FieldError(_field(where, "key"), "required"))
    elif not all(" " <= c <= "~" and c != "=" for c in ref.key):
        errs.append(
            FieldError(
                _field(where, "key"),
                f"invalid key {ref.key!r}: use printable ASCII characters other than '='",
            )
        )


def _check_file_key_volumes(
    errs: _Problems, path: str, spec: m.PodSpec, groups: Sequence[tuple[str, Sequence[m.Container]]]
) -> None:
    """A ``fileKeyRef`` names one of the pod's emptyDir volumes (on disk: the agent reads the
    file, and a Memory emptyDir is a tmpfs the runtime holds)."""
    volumes = {v.name: v for v in spec.volumes}
    for group, containers in groups:
        for i, container in enumerate(containers):
            for j, env in enumerate(container.env):
                ref = env.value_from.file_key_ref if env.value_from else None
                if ref is None or not ref.volume_name:
                    continue
                where = f"{_item(_field(path, group), i)}.env[{j}].valueFrom.fileKeyRef.volumeName"
                volume = volumes.get(ref.volume_name)
                if volume is None:
                    problem = f"no volume named {ref.volume_name!r} in the pod"
                    errs.append(FieldError(where, problem))
                elif volume.empty_dir is None:
                    errs.append(
                        FieldError(where, f"volume {ref.volume_name!r} must be an emptyDir volume")
                    )
                elif volume.empty_dir is not None and volume.empty_dir.medium == "Memory":
                    errs.append(
                        FieldError(
                            where,
                            f"not supported by kubecore: volume {ref.volume_name!r} is an emptyDir"
                            " of medium Memory, a tmpfs the container runtime holds, which the"
                            " agent cannot read the env file from",
                        )
                    )


_CPU_DIVISORS = ("1m", "1")
_BYTE_DIVISORS = ("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")


def _check_divisor(errs: _Problems, path: str, resource: str, divisor: str) -> None:
    """Kubernetes accepts only these divisors (by value: ``1000m`` is ``1``)."""
    allowed = _CPU_DIVISORS if resource.endswith(".cpu") else _BYTE_DIVISORS
    try:
        value = parse_quantity(divisor)
    except ValueError as exc:
        errs.append(FieldError(path, str(exc)))
        return
    if value not in {parse_quantity(a) for a in allowed}:
        errs.append(FieldError(path, f"must be one of {', '.join(allowed)}, got {divisor!r}"))


def _check_env_from(errs: _Problems, path: str, source: m.EnvFromSource) -> None:
    refs = [
        (name, ref)
        for name, ref in (("configMapRef", source.config_map_ref), ("secretRef", source.secret_ref))
        if ref is not None
    ]
    if len(refs) != 1:
        errs.append(
            FieldError(
                path,
                "must specify one of configMapRef or secretRef"
                if not refs
                else "may not have more than one field specified at a time",
            )
        )
    for name, ref in refs:
        where = _field(_field(path, name), "name")
        if not ref.name:
            errs.append(FieldError(where, "required"))
        else:
            _check_name(errs, where, ref.name, _dns_subdomain_problem)
    if source.prefix and not _ENV_NAME_RE.fullmatch(source.prefix):
        errs.append(
            FieldError(
                _field(path, "prefix"),
                f"invalid environment variable prefix {source.prefix!r}: use letters, digits,"
                " '_', '-' and '.', not starting with a digit",
            )
        )


_RESIZABLE = ("cpu", "memory")
_RESIZE_RESTART_POLICIES = ("NotRequired", "RestartContainer")


def _check_resize_policy(
    errs: _Problems, path: str, policies: Sequence[m.ContainerResizePolicy]
) -> None:
    seen: dict[str, int] = {}
    for i, policy in enumerate(policies):
        where = _item(path, i)
        name = policy.resource_name
        _check_enum(errs, _field(where, "resourceName"), name, _RESIZABLE)
        _check_enum(
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
    _check_enum(errs, _field(path, "restartPolicy"), policy, _RESTART_POLICIES)
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
            _check_enum(errs, _field(rule_path, "action"), rule.action, _RESTART_RULE_ACTIONS)
        codes = rule.exit_codes
        if codes is None:
            errs.append(FieldError(_field(rule_path, "exitCodes"), "required"))
            continue
        codes_path = _field(rule_path, "exitCodes")
        _check_enum(errs, _field(codes_path, "operator"), codes.operator, _RESTART_RULE_OPERATORS)
        if len(codes.values) > _MAX_RESTART_RULE_EXIT_CODES:
            errs.append(
                FieldError(
                    _field(codes_path, "values"),
                    f"must have at most {_MAX_RESTART_RULE_EXIT_CODES} values,"
                    f" got {len(codes.values)}",
                )
            )


def _check_container(
    errs: _Problems,
    path: str,
    container: m.Container,
    *,
    init: bool,
    volume_names: frozenset[str],
    host_network: bool,
) -> None:
    _check_name(errs, _field(path, "name"), container.name, _dns_label_problem)
    if container.image == "":
        errs.append(FieldError(_field(path, "image"), "required"))
    elif any(c.isspace() for c in container.image):
        errs.append(
            FieldError(
                _field(path, "image"),
                f"must not contain whitespace, got {container.image!r}",
            )
        )
    _check_enum(errs, _field(path, "imagePullPolicy"), container.image_pull_policy, _PULL_POLICIES)
    if container.termination_message_path == "":
        errs.append(FieldError(_field(path, "terminationMessagePath"), "required"))
    _check_enum(
        errs,
        _field(path, "terminationMessagePolicy"),
        container.termination_message_policy,
        _TERMINATION_MESSAGE_POLICIES,
    )
    _check_restart_rules(errs, path, container, init=init)
    _check_resize_policy(errs, _field(path, "resizePolicy"), container.resize_policy)
    # A sidecar (a restartable init container) runs beside the app: probes and hooks apply.
    init = init and not container.is_sidecar
    port_names = _check_ports(errs, _field(path, "ports"), container, host_network)

    env_seen: dict[str, int] = {}
    for i, env in enumerate(container.env):
        where = _field(_item(_field(path, "env"), i), "name")
        if env.name == "":
            errs.append(FieldError(where, "required"))
        elif not _ENV_NAME_RE.fullmatch(env.name):
            errs.append(
                FieldError(
                    where,
                    f"invalid environment variable name {env.name!r}: use letters, digits, "
                    "'_', '-' and '.', not starting with a digit",
                )
            )
        elif env.name in env_seen:
            errs.append(
                FieldError(where, f"duplicate name {env.name!r} (also env[{env_seen[env.name]}])")
            )
        else:
            env_seen[env.name] = i
        if env.value_from is not None:
            _check_env_source(errs, _item(_field(path, "env"), i), env)
    for i, env_from in enumerate(container.env_from):
        _check_env_from(errs, _item(_field(path, "envFrom"), i), env_from)

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

    _check_resources(errs, _field(path, "resources"), container.resources)

    probes = (
        ("livenessProbe", container.liveness_probe),
        ("readinessProbe", container.readiness_probe),
        ("startupProbe", container.startup_probe),
    )
    for kind, probe in probes:
        if probe is None:
            continue
        if init:
            errs.append(FieldError(_field(path, kind), "not allowed on init containers"))
        else:
            _check_probe(errs, _field(path, kind), probe, kind, port_names)
    if container.lifecycle is not None:
        where = _field(path, "lifecycle")
        if init:
            errs.append(FieldError(where, "not allowed on init containers"))
        else:
            for name, handler in (
                ("postStart", container.lifecycle.post_start),
                ("preStop", container.lifecycle.pre_stop),
            ):
                if handler is not None:
                    _check_handler(errs, _field(where, name), handler, port_names)
            signal = container.lifecycle.stop_signal
            if signal and signal not in STOP_SIGNALS:
                errs.append(
                    FieldError(
                        _field(where, "stopSignal"),
                        f"unsupported value {signal!r}: must be a Linux signal name such as"
                        " SIGTERM, SIGINT, SIGQUIT, SIGUSR1",
                    )
                )


def _check_volumes(errs: _Problems, path: str, volumes: Sequence[m.Volume]) -> frozenset[str]:
    names: dict[str, int] = {}
    for i, volume in enumerate(volumes):
        where = _item(path, i)
        _check_name(errs, _field(where, "name"), volume.name, _dns_label_problem)
        if volume.name in names:
            errs.append(
                FieldError(
                    _field(where, "name"),
                    f"duplicate volume name {volume.name!r} (also volumes[{names[volume.name]}])",
                )
            )
        elif volume.name:
            names[volume.name] = i
        sources = [name for name, value in _volume_sources(volume) if value is not None]
        if not sources:
            errs.append(
                FieldError(
                    where,
                    "must have a volume source (" + ", ".join(_VOLUME_SOURCE_NAMES) + "); got none",
                )
            )
        elif len(sources) > 1:
            errs.append(
                FieldError(
                    where,
                    f"must have exactly one volume source, got {' and '.join(sources)}",
                )
            )
        if volume.host_path is not None:
            host = volume.host_path
            if host.path == "":
                errs.append(FieldError(_field(where, "hostPath.path"), "required"))
            elif not host.path.startswith("/"):
                errs.append(
                    FieldError(
                        _field(where, "hostPath.path"),
                        f"must be an absolute path, got {host.path!r}",
                    )
                )
            if host.type not in _HOST_PATH_TYPES:
                errs.append(
                    FieldError(
                        _field(where, "hostPath.type"),
                        _one_of(host.type, [t for t in _HOST_PATH_TYPES if t]),
                    )
                )
        if volume.empty_dir is not None:
            empty = volume.empty_dir
            medium = empty.medium
            if medium.startswith("HugePages"):
                errs.append(
                    FieldError(
                        _field(where, "emptyDir.medium"),
                        f"not supported: {medium} needs huge pages set aside on the node, and"
                        " kubecore does not manage them",
                    )
                )
            elif medium not in ("", "Memory"):
                errs.append(
                    FieldError(
                        _field(where, "emptyDir.medium"),
                        f"unsupported value {medium!r}: must be '' (disk), Memory or HugePages",
                    )
                )
            if empty.mode is not None and not 0 <= empty.mode <= 0o1777:
                errs.append(
                    FieldError(
                        _field(where, "emptyDir.mode"),
                        f"must be a mode between 0 and 01777 (octal), got {empty.mode}",
                    )
                )
            if empty.size_limit is not None:
                size_where = _field(where, "emptyDir.sizeLimit")
                try:
                    if parse_quantity(empty.size_limit) < 0:
                        errs.append(FieldError(size_where, "must not be negative"))
                except ValueError as exc:
                    errs.append(FieldError(size_where, str(exc)))
        _check_object_volumes(errs, where, volume)
    return frozenset(names)


_VOLUME_SOURCE_NAMES = (
    "emptyDir",
    "hostPath",
    "configMap",
    "secret",
    "downwardAPI",
    "projected",
    "persistentVolumeClaim",
    "image",
)
_MOUNT_PROPAGATIONS = ("None", "HostToContainer", "Bidirectional")
_DOWNWARD_FIELDS = ("metadata.name", "metadata.namespace", "metadata.uid")
_DOWNWARD_MAP_FIELDS = ("metadata.labels", "metadata.annotations")
_DOWNWARD_SUBSCRIPT_RE = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")
_DOWNWARD_RESOURCES = (
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
)


def _volume_sources(volume: m.Volume) -> tuple[tuple[str, object], ...]:
    return (
        ("emptyDir", volume.empty_dir),
        ("hostPath", volume.host_path),
        ("configMap", volume.config_map),
        ("secret", volume.secret),
        ("downwardAPI", volume.downward_api),
        ("projected", volume.projected),
        ("persistentVolumeClaim", volume.persistent_volume_claim),
        ("image", volume.image),
    )


def _relative_path_problem(value: str) -> str | None:
    """Kubernetes' rule for a file path inside a volume (``items[].path``, ``subPath``, and
    ``subPathExpr`` as written)."""
    if value.startswith("/"):
        return f"must be a relative path, got {value!r}"
    if ".." in value.split("/"):
        return f"must not contain '..', got {value!r}"
    return None


def _check_mode(errs: _Problems, where: str, mode: int | None) -> None:
    if mode is not None and not 0 <= mode <= 0o777:
        errs.append(
            FieldError(where, f"must be a file mode between 0 and 0777 (octal), got {mode}")
        )


def _check_items(errs: _Problems, where: str, items: Sequence[m.KeyToPath]) -> None:
    for i, item in enumerate(items):
        at = _item(where, i)
        if item.key == "":
            errs.append(FieldError(_field(at, "key"), "required"))
        if item.path == "":
            errs.append(FieldError(_field(at, "path"), "required"))
        elif (problem := _relative_path_problem(item.path)) is not None:
            errs.append(FieldError(_field(at, "path"), problem))
        _check_mode(errs, _field(at, "mode"), item.mode)


def _check_downward_files(
    errs: _Problems, where: str, files: Sequence[m.DownwardAPIVolumeFile]
) -> None:
    for i, file in enumerate(files):
        at = _item(where, i)
        if file.path == "":
            errs.append(FieldError(_field(at, "path"), "required"))
        elif (problem := _relative_path_problem(file.path)) is not None:
            errs.append(FieldError(_field(at, "path"), problem))
        _check_mode(errs, _field(at, "mode"), file.mode)
        if (file.field_ref is None) == (file.resource_field_ref is None):
            errs.append(FieldError(at, "must have exactly one of fieldRef or resourceFieldRef"))
        if file.field_ref is not None:
            field_path = file.field_ref.field_path
            subscripted = _DOWNWARD_SUBSCRIPT_RE.fullmatch(field_path)
            if (
                field_path not in _DOWNWARD_FIELDS
                and field_path not in _DOWNWARD_MAP_FIELDS
                and subscripted is None
            ):
                errs.append(
                    FieldError(
                        _field(at, "fieldRef.fieldPath"),
                        _one_of(
                            field_path,
                            [*_DOWNWARD_FIELDS, *_DOWNWARD_MAP_FIELDS, "metadata.labels['<key>']"],
                        ),
                    )
                )
        if file.resource_field_ref is not None:
            ref = file.resource_field_ref
            _check_enum(
                errs, _field(at, "resourceFieldRef.resource"), ref.resource, _DOWNWARD_RESOURCES
            )
            if ref.container_name == "":
                errs.append(
                    FieldError(
                        _field(at, "resourceFieldRef.containerName"),
                        "required in a volume (which container's resources to show)",
                    )
                )
            if ref.divisor:
                try:
                    if parse_quantity(ref.divisor) <= 0:
                        errs.append(
                            FieldError(_field(at, "resourceFieldRef.divisor"), "must be positive")
                        )
                except ValueError as exc:
                    errs.append(FieldError(_field(at, "resourceFieldRef.divisor"), str(exc)))


def _check_object_volumes(errs: _Problems, where: str, volume: m.Volume) -> None:
    """configMap, secret, downwardAPI, projected, persistentVolumeClaim and image sources."""
    if volume.config_map is not None:
        at = _field(where, "configMap")
        if volume.config_map.name == "":
            errs.append(FieldError(_field(at, "name"), "required"))
        _check_items(errs, _field(at, "items"), volume.config_map.items)
        _check_mode(errs, _field(at, "defaultMode"), volume.config_map.default_mode)
    if volume.secret is not None:
        at = _field(where, "secret")
        if volume.secret.secret_name == "":
            errs.append(FieldError(_field(at, "secretName"), "required"))
        _check_items(errs, _field(at, "items"), volume.secret.items)
        _check_mode(errs, _field(at, "defaultMode"), volume.secret.default_mode)
    if volume.downward_api is not None:
        at = _field(where, "downwardAPI")
        _check_downward_files(errs, _field(at, "items"), volume.downward_api.items)
        _check_mode(errs, _field(at, "defaultMode"), volume.downward_api.default_mode)
    if volume.projected is not None:
        at = _field(where, "projected")
        _check_mode(errs, _field(at, "defaultMode"), volume.projected.default_mode)
        for i, source in enumerate(volume.projected.sources):
            src = _item(_field(at, "sources"), i)
            given = [
                name
                for name, value in (
                    ("configMap", source.config_map),
                    ("secret", source.secret),
                    ("downwardAPI", source.downward_api),
                    ("serviceAccountToken", source.service_account_token),
                )
                if value is not None
            ]
            if len(given) != 1:
                errs.append(
                    FieldError(
                        src,
                        "must have exactly one of configMap, secret, downwardAPI or"
                        f" serviceAccountToken, got {' and '.join(given) or 'none'}",
                    )
                )
            if source.config_map is not None:
                if source.config_map.name == "":
                    errs.append(FieldError(_field(src, "configMap.name"), "required"))
                _check_items(errs, _field(src, "configMap.items"), source.config_map.items)
            if source.secret is not None:
                if source.secret.name == "":
                    errs.append(FieldError(_field(src, "secret.name"), "required"))
                _check_items(errs, _field(src, "secret.items"), source.secret.items)
            if source.downward_api is not None:
                _check_downward_files(
                    errs, _field(src, "downwardAPI.items"), source.downward_api.items
                )
            if source.service_account_token is not None:
                errs.append(
                    FieldError(
                        _field(src, "serviceAccountToken"),
                        "not supported: a service account token is issued by the Kubernetes API"
                        " server, and kubecore runs without one",
                    )
                )
    if volume.persistent_volume_claim is not None:
        claim = volume.persistent_volume_claim.claim_name
        at = _field(where, "persistentVolumeClaim.claimName")
        if claim == "":
            errs.append(FieldError(at, "required"))
        elif (problem := _dns_subdomain_problem(claim)) is not None:
            errs.append(FieldError(at, problem))
    if volume.image is not None:
        errs.append(
            FieldError(
                _field(where, "image"),
                "not supported: mounting an image's filesystem needs an engine that mounts"
                " images (Docker 28's --mount type=image); kubecore's runtimes cannot",
            )
        )


def _check_volume_mount(
    errs: _Problems, where: str, mount: m.VolumeMount, container: m.Container
) -> None:
    if mount.sub_path and (problem := _relative_path_problem(mount.sub_path)) is not None:
        errs.append(FieldError(_field(where, "subPath"), problem))
    if mount.sub_path_expr:
        if mount.sub_path:
            errs.append(
                FieldError(_field(where, "subPathExpr"), "may not be set together with subPath")
            )
        if (problem := _relative_path_problem(mount.sub_path_expr)) is not None:
            errs.append(FieldError(_field(where, "subPathExpr"), problem))
    if mount.mount_propagation is not None:
        at = _field(where, "mountPropagation")
        _check_enum(errs, at, mount.mount_propagation, _MOUNT_PROPAGATIONS)
        if mount.mount_propagation == "Bidirectional" and not container.privileged:
            errs.append(
                FieldError(
                    at, "Bidirectional mount propagation is available only to privileged containers"
                )
            )


def _check_host_ports(errs: _Problems, path: str, containers: Sequence[m.Container]) -> None:
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


def _check_spec(errs: _Problems, path: str, spec: m.PodSpec) -> None:
    volume_names = _check_volumes(errs, _field(path, "volumes"), spec.volumes)
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
            _check_container(
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
        _check_host_ports(errs, _field(path, group), containers)
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
    _check_file_key_volumes(errs, path, spec, [(g, c) for g, c, _init in groups])
    check_security(errs, path, spec)
    _check_enum(errs, _field(path, "restartPolicy"), spec.restart_policy, _RESTART_POLICIES)
    _check_enum(errs, _field(path, "dnsPolicy"), spec.dns_policy, _DNS_POLICIES)
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
        problem = _dns_subdomain_problem(spec.node_name)
        if problem:
            errs.append(FieldError(_field(path, "nodeName"), problem))
    for i, ref in enumerate(spec.image_pull_secrets):
        if not ref.name:
            errs.append(
                FieldError(_field(_item(_field(path, "imagePullSecrets"), i), "name"), "required")
            )
    _check_scheduling(errs, path, spec)
    _check_pod_options(errs, path, spec)


# --- scheduler-only fields ------------------------------------------------------------------

_TOLERATION_OPERATORS = ("Equal", "Exists")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_INCLUSION_POLICIES = ("Honor", "Ignore")
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_OS_NAMES = ("linux", "windows")
_NODE_NAME_FIELD = "metadata.name"


def _label_value_problem(value: str) -> str | None:
    if value and (len(value) > 63 or not _QUALIFIED_NAME_RE.fullmatch(value)):
        return (
            f"invalid label value {value!r}: must be at most 63 characters of letters, "
            "digits, '-', '_' or '.', starting and ending with a letter or digit"
        )
    return None


def label_problem(key: str, value: str) -> str | None:
    """What is wrong with a label (None when it is valid)."""
    if key == "":
        return "the key must not be empty"
    return _qualified_name_problem(key) or _label_value_problem(value)


def _check_label_key(errs: _Problems, path: str, key: str) -> None:
    if key == "":
        errs.append(FieldError(path, "required"))
    elif problem := _qualified_name_problem(key):
        errs.append(FieldError(path, problem))


def _check_label_value(errs: _Problems, path: str, value: str) -> None:
    if problem := _label_value_problem(value):
        errs.append(FieldError(path, problem))


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
        _check_label_key(errs, where, key)
        _check_label_value(errs, where, value)
    for i, req in enumerate(selector.match_expressions):
        where = _item(_field(path, "matchExpressions"), i)
        _check_label_key(errs, _field(where, "key"), req.key)
        if req.operator not in _LABEL_SELECTOR_OPERATORS:
            errs.append(
                FieldError(
                    _field(where, "operator"), _one_of(req.operator, _LABEL_SELECTOR_OPERATORS)
                )
            )
        else:
            _check_values_for_operator(errs, where, req.operator, req.values)


def _check_node_selector_term(errs: _Problems, path: str, term: m.NodeSelectorTerm) -> None:
    for i, req in enumerate(term.match_expressions):
        where = _item(_field(path, "matchExpressions"), i)
        _check_label_key(errs, _field(where, "key"), req.key)
        if req.operator not in _NODE_SELECTOR_OPERATORS:
            errs.append(
                FieldError(
                    _field(where, "operator"), _one_of(req.operator, _NODE_SELECTOR_OPERATORS)
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
                FieldError(_field(where, "operator"), _one_of(req.operator, ("In", "NotIn")))
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
    _check_label_key(errs, _field(path, "topologyKey"), term.topology_key)
    _check_label_selector(errs, _field(path, "labelSelector"), term.label_selector)
    _check_label_selector(errs, _field(path, "namespaceSelector"), term.namespace_selector)
    for i, namespace in enumerate(term.namespaces):
        _check_name(errs, _item(_field(path, "namespaces"), i), namespace, _dns_label_problem)


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
            _check_label_key(errs, _field(where, "key"), toleration.key)
        elif operator != "Exists":
            errs.append(FieldError(_field(where, "operator"), "must be Exists when key is empty"))
        if operator not in _TOLERATION_OPERATORS:
            errs.append(
                FieldError(_field(where, "operator"), _one_of(operator, _TOLERATION_OPERATORS))
            )
        elif operator == "Exists" and toleration.value:
            errs.append(FieldError(_field(where, "value"), "must be empty when operator is Exists"))
        if toleration.effect and toleration.effect not in _TAINT_EFFECTS:
            errs.append(
                FieldError(_field(where, "effect"), _one_of(toleration.effect, _TAINT_EFFECTS))
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
        _check_label_key(errs, _field(where, "topologyKey"), constraint.topology_key)
        _check_enum(
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
                errs.append(FieldError(_field(where, name), _one_of(policy, _INCLUSION_POLICIES)))
        _check_label_selector(errs, _field(where, "labelSelector"), constraint.label_selector)


def _check_scheduling(errs: _Problems, path: str, spec: m.PodSpec) -> None:
    """The fields only a scheduler or an API server acts on (the node checks nodeSelector and
    required node affinity at admission): their values must still be well formed."""
    for key, value in spec.node_selector.items():
        where = _item(_field(path, "nodeSelector"), key)
        _check_label_key(errs, where, key)
        _check_label_value(errs, where, value)
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
        _check_label_key(errs, where, gate.name)
        if gate.name in gates:
            errs.append(FieldError(where, f"duplicate scheduling gate {gate.name!r}"))
        gates.add(gate.name)
    if spec.preemption_policy:
        _check_enum(
            errs, _field(path, "preemptionPolicy"), spec.preemption_policy, _PREEMPTION_POLICIES
        )
    for name, value in (
        ("schedulerName", spec.scheduler_name),
        ("priorityClassName", spec.priority_class_name),
        ("serviceAccountName", spec.service_account_name),
        ("serviceAccount", spec.service_account),
    ):
        if value and (problem := _dns_subdomain_problem(value)):
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
    _check_quantities(errs, _field(path, "overhead"), spec.overhead)
    for i, readiness_gate in enumerate(spec.readiness_gates):
        _check_label_key(
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
            _check_enum(errs, where, spec.os.name, _OS_NAMES)


# --- pod-level options ----------------------------------------------------------------------

MAX_DNS_NAMESERVERS = 3
MAX_DNS_SEARCH_PATHS = 32
MAX_DNS_SEARCH_CHARS = 2048
MAX_FQDN = 64
_POD_RESOURCES = ("cpu", "memory")


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
        if problem := _dns_subdomain_problem(search.rstrip(".")):
            errs.append(FieldError(_item(_field(where, "searches"), i), problem))
    for i, option in enumerate(config.options):
        if not option.name:
            errs.append(FieldError(_field(_item(_field(where, "options"), i), "name"), "required"))


def _check_pod_resources(errs: _Problems, path: str, spec: m.PodSpec) -> None:
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
    _check_resources(
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


def _check_pod_options(errs: _Problems, path: str, spec: m.PodSpec) -> None:
    for name, value in (("hostname", spec.hostname), ("subdomain", spec.subdomain)):
        if value and (problem := _dns_label_problem(value)):
            errs.append(FieldError(_field(path, name), problem))
    for i, alias in enumerate(spec.host_aliases):
        where = _item(_field(path, "hostAliases"), i)
        _check_ip(errs, _field(where, "ip"), alias.ip)
        if not alias.hostnames:
            errs.append(FieldError(_field(where, "hostnames"), "required: at least one hostname"))
        for j, hostname in enumerate(alias.hostnames):
            if problem := _dns_subdomain_problem(hostname):
                errs.append(FieldError(_item(_field(where, "hostnames"), j), problem))
    if spec.share_process_namespace and spec.host_pid:
        errs.append(
            FieldError(_field(path, "shareProcessNamespace"), "cannot be set when hostPID is true")
        )
    _check_dns_config(errs, path, spec)
    _check_pod_resources(errs, _field(path, "resources"), spec)


def _check_status(errs: _Problems, path: str, status: m.PodStatus) -> None:
    if status.phase not in _PHASES:
        errs.append(FieldError(_field(path, "phase"), _one_of(status.phase, _PHASES)))
    for i, condition in enumerate(status.conditions):
        if condition.status not in _CONDITION_STATUSES:
            errs.append(
                FieldError(
                    _field(_item(_field(path, "conditions"), i), "status"),
                    _one_of(condition.status, _CONDITION_STATUSES),
                )
            )


def _validate(pod: m.Pod, path: str) -> _Problems:
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
    _check_metadata(errs, _field(path, "metadata"), pod.metadata)
    _check_spec(errs, _field(path, "spec"), pod.spec)
    if pod.status is not None:
        _check_status(errs, _field(path, "status"), pod.status)
    return errs


def validate_pod(pod: m.Pod) -> list[FieldError]:
    """Every problem with a built pod (an empty list when it is valid).

    The same value rules the loaders apply: names, ports, volumes and mounts, probes, resources,
    enums. JSON type rules only apply to loading.
    """
    return _validate(pod, "")


# --- dict <-> Pod ---------------------------------------------------------------------------


_POD_TEMPLATES = {
    "Deployment": "spec.template",
    "ReplicaSet": "spec.template",
    "ReplicationController": "spec.template",
    "StatefulSet": "spec.template",
    "DaemonSet": "spec.template",
    "Job": "spec.template",
    "CronJob": "spec.jobTemplate.spec.template",
}


_CONTROL_PLANE_KINDS = frozenset(
    {
        "Service", "Endpoints", "EndpointSlice", "Ingress", "IngressClass", "NetworkPolicy",
        "Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
        "ClusterRoleBinding", "PersistentVolume", "PersistentVolumeClaim", "StorageClass",
        "HorizontalPodAutoscaler", "PodDisruptionBudget", "LimitRange", "ResourceQuota",
        "PriorityClass", "RuntimeClass", "Node", "Event", "Lease", "CustomResourceDefinition",
    }
)  # fmt: skip
"""Well-known kinds of the API server that a node agent does not read (a kind outside these
is read as a misspelt Pod, so that its other problems are shown too)."""


def kind_refusal(kind: str) -> str | None:
    """Why a document of a well-known ``kind`` other than Pod is not run (None otherwise)."""
    if kind not in _POD_TEMPLATES and kind not in _CONTROL_PLANE_KINDS:
        return None
    template = _POD_TEMPLATES.get(kind)
    if template is not None:
        return (
            f"a {kind} is not run by kubecore: a node agent runs Pods, and a {kind} becomes"
            " Pods through a controller of the Kubernetes control plane; to run its pods here,"
            f" write its pod template ({template}) as a Pod"
        )
    return (
        f"a {kind} is not read by kubecore: a node agent reads Pods and the ConfigMaps and"
        f" Secrets they use, and other Kubernetes components handle a {kind}"
    )


def _decode_pod(data: object, path: str) -> tuple[m.Pod, _Problems]:
    if isinstance(data, Mapping) and data.get("status") == {}:
        data = {k: v for k, v in data.items() if k != "status"}
    decode_errs: _Problems = []
    pod: m.Pod = _POD.load(data, path, decode_errs)
    kind = data.get("kind") if isinstance(data, Mapping) else None
    refusal = kind_refusal(kind) if isinstance(kind, str) else None
    if refusal is not None:  # not a pod: its fields would only repeat that
        return pod, [FieldError(_field(path, "kind"), refusal)]
    return pod, _dedupe([*decode_errs, *_not_repeating(_validate(pod, path), decode_errs)])


def _not_repeating(problems: Iterable[FieldError], decode_errs: Sequence[FieldError]) -> _Problems:
    """The validation problems not at, above or below a decoding problem's path.

    Set lookups instead of comparing every pair, so that a pod with thousands of bad containers
    does not cost their product; a prefix is cut only at a length the other side has, so that a
    key of thousands of dots does not cost its length squared.
    """
    problems = list(problems)
    decoded = {d.path for d in decode_errs}
    decoded_lengths = {len(path) for path in decoded}
    problem_lengths = {len(p.path) for p in problems}
    above_decoded = {a for path in decoded for a in _ancestors(path, problem_lengths)}
    return [
        p
        for p in problems
        if p.path not in above_decoded and decoded.isdisjoint(_ancestors(p.path, decoded_lengths))
    ]


def _ancestors(path: str, lengths: Set[int]) -> list[str]:
    """Of ``path`` and every path it lies under (``a.b[2]``: ``""``, ``a``, ``a.b`` and itself),
    those of one of ``lengths``."""
    ends = [0, *(i for i, char in enumerate(path) if char in ".["), len(path)]
    return [path[:end] for end in ends if end in lengths]


def _dedupe(problems: Iterable[FieldError]) -> _Problems:
    """Unique problems, grouped by place: ``containers[2]`` before ``containers[10]``."""
    return sorted(dict.fromkeys(problems), key=lambda p: _path_key(p.path))


def _path_key(path: str) -> list[tuple[int, int, str]]:
    # An index sorts by length, then text: numeric order without converting (a key of 5,000
    # digits is not an index, and int() would refuse it).
    return [
        (1, len(token), token) if token.isascii() and token.isdigit() else (0, 0, token)
        for token in re.split(r"[.\[\]]+", path)
        if token
    ]


def _decode_object(data: Mapping[str, object], path: str) -> tuple[m.KubeObject, _Problems]:
    """A ConfigMap or Secret document (``data["kind"]`` names which), decoded and checked.

    A Secret's ``stringData`` is merged into its ``data`` (its keys win). Problems never quote a
    Secret's values.
    """
    spec = OBJECT_KINDS[str(data.get("kind"))]
    decode_errs: _Problems = []
    obj: m.KubeObject = spec.load(data, path, decode_errs)
    errs: _Problems = []
    if obj.api_version != "v1":
        errs.append(
            FieldError(
                _field(path, "apiVersion"),
                f"must be 'v1', got {obj.api_version!r}" if obj.api_version else "required",
            )
        )
    _check_metadata(errs, _field(path, "metadata"), obj.metadata)
    if isinstance(obj, m.ConfigMap):
        keyed = [("data", key) for key in obj.data] + [("binaryData", k) for k in obj.binary_data]
        for key in obj.data.keys() & obj.binary_data.keys():
            errs.append(
                FieldError(_item(_field(path, "binaryData"), key), "duplicate of a key in data")
            )
    else:
        if not obj.type:  # the API server's default
            obj = attrs.evolve(obj, type=m.SECRET_TYPE_OPAQUE)
        if obj.string_data:
            merged = {**obj.data, **{k: v.encode() for k, v in obj.string_data.items()}}
            obj = attrs.evolve(obj, data=merged, string_data={})
        keyed = [("data", key) for key in obj.data]
        errs.extend(_secret_type_problems(obj, path))
    for field, key in keyed:
        problem = _config_key_problem(key)
        if problem:
            errs.append(FieldError(_item(_field(path, field), key), problem))
    return obj, _dedupe([*decode_errs, *_not_repeating(errs, decode_errs)])


_SECRET_TYPE_KEYS = {
    m.SECRET_TYPE_DOCKER_CONFIG_JSON: ".dockerconfigjson",
    m.SECRET_TYPE_DOCKERCFG: ".dockercfg",
}


_SECRET_TYPE_REQUIRED = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
}
"""Keys the API server requires of these Secret types (besides the docker config types)."""


def _secret_type_problems(secret: m.Secret, path: str) -> _Problems:
    required = _SECRET_TYPE_REQUIRED.get(secret.type, ())
    missing = [
        FieldError(_item(_field(path, "data"), k), f"required for a Secret of type {secret.type}")
        for k in required
        if k not in secret.data
    ]
    if secret.type == "kubernetes.io/basic-auth" and not (
        secret.data.keys() & {"username", "password"}
    ):
        missing.append(
            FieldError(
                _field(path, "data"),
                "a Secret of type kubernetes.io/basic-auth needs a username or a password",
            )
        )
    key = _SECRET_TYPE_KEYS.get(secret.type)
    if key is None:
        return missing
    where = _item(_field(path, "data"), key)
    raw = secret.data.get(key)
    if raw is None:
        return [FieldError(where, f"required for a Secret of type {secret.type}")]
    try:
        parsed = json.loads(raw)
    except ValueError:
        return [FieldError(where, "not valid JSON (value not shown)")]
    if not isinstance(parsed, dict):
        return [FieldError(where, "must be a JSON object (value not shown)")]
    return []


def pod_from_dict(data: object, *, path: str = "") -> m.Pod:
    """Build and validate a pod from its v1 JSON shape; raises ``ValidationError`` listing every
    problem. ``path`` prefixes every problem's path (e.g. ``items[2]``)."""
    pod, problems = _decode_pod(data, path)
    if problems:
        raise ValidationError(problems)
    return pod
