"""Validation: the rules about values (not JSON types) on a built ``Pod``.

``validate_pod`` serves embedders who build pods in code; ``_decode_pod`` decodes and validates
plain data. A validation problem at, above or below a path that already has a decoding problem is
dropped: it would only repeat the decoding problem through a placeholder.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from decimal import Decimal

from kubecore import _model as m
from kubecore._errors import FieldError, ValidationError
from kubecore._manifest.decoding import _POD, _PROTOCOLS, _field, _item, _Problems
from kubecore._quantity import parse_quantity

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


def _resource_name_problem(name: str) -> str | None:
    if name in ("cpu", "memory", "ephemeral-storage"):
        return None
    if name.startswith(_HUGEPAGES_PREFIX):
        try:
            parse_quantity(name[len(_HUGEPAGES_PREFIX) :])
        except ValueError:
            return f"invalid hugepages resource name {name!r}: expected e.g. hugepages-2Mi"
        return None
    return (
        f"unsupported resource name {name!r}: expected cpu, memory, ephemeral-storage "
        "or hugepages-<size>"
    )


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
        parsed[name] = value
    return parsed


def _check_resources(errs: _Problems, path: str, resources: m.ResourceRequirements) -> None:
    requests = _check_quantities(errs, _field(path, "requests"), resources.requests)
    limits = _check_quantities(errs, _field(path, "limits"), resources.limits)
    for name, request in requests.items():
        limit = limits.get(name)
        if limit is not None and request > limit:
            errs.append(
                FieldError(
                    _item(_field(path, "requests"), name),
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
    if container.restart_policy is not None:
        if not init:
            errs.append(
                FieldError(
                    _field(path, "restartPolicy"),
                    "only init containers may set restartPolicy (Always makes one a sidecar)",
                )
            )
        else:
            _check_enum(errs, _field(path, "restartPolicy"), container.restart_policy, ("Always",))
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
        sources = [
            name
            for name, value in (("emptyDir", volume.empty_dir), ("hostPath", volume.host_path))
            if value is not None
        ]
        if not sources:
            errs.append(
                FieldError(where, "must have a volume source (emptyDir or hostPath); got none")
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
            if medium not in ("", "Memory") and not medium.startswith("HugePages"):
                errs.append(
                    FieldError(
                        _field(where, "emptyDir.medium"),
                        f"unsupported value {medium!r}: must be '' (disk), Memory or HugePages",
                    )
                )
            if empty.size_limit is not None:
                size_where = _field(where, "emptyDir.sizeLimit")
                try:
                    if parse_quantity(empty.size_limit) < 0:
                        errs.append(FieldError(size_where, "must not be negative"))
                except ValueError as exc:
                    errs.append(FieldError(size_where, str(exc)))
    return frozenset(names)


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


def _decode_pod(data: object, path: str) -> tuple[m.Pod, _Problems]:
    if isinstance(data, Mapping) and data.get("status") == {}:
        data = {k: v for k, v in data.items() if k != "status"}
    decode_errs: _Problems = []
    pod: m.Pod = _POD.load(data, path, decode_errs)
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


def pod_from_dict(data: object, *, path: str = "") -> m.Pod:
    """Build and validate a pod from its v1 JSON shape; raises ``ValidationError`` listing every
    problem. ``path`` prefixes every problem's path (e.g. ``items[2]``)."""
    pod, problems = _decode_pod(data, path)
    if problems:
        raise ValidationError(problems)
    return pod
