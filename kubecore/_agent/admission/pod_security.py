"""The node's pod-security policy: the Pod Security Standards' levels ``privileged``, ``baseline``
and ``restricted`` (as Kubernetes' Pod Security Admission enforces them, version ``latest``),
checked on every container of a pod (init, sidecar, app and ephemeral ones).

``violations`` returns every violation with its field path, each worded as PSA words it
(``hostPath volumes (volume "root")``); ``forbidden_message`` joins them as PSA's refusal does.
The node may loosen ``baseline`` where the Standards leave room: host paths on an allow-list
(``--allowed-host-path``), host ports on a known list (``--allowed-host-port``), and the node's
own flags (``--allow-privileged`` lets in what it always let in: privileged containers and host
namespaces; ``--allowed-unsafe-sysctls``, the sysctls it names)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeGuard

import attrs

from kubecore._kuberuntime.security import (
    APPARMOR_ANNOTATION_PREFIX,
    SAFE_SYSCTLS,
    allowed_unsafe_sysctl,
    normalize_sysctl_name,
)
from kubecore._model.v1 import Container, Pod, SecurityContext

POD_SECURITY = "PodSecurity"
"""The rejection reason, as the admission plugin is named."""
PRIVILEGED, BASELINE, RESTRICTED = "privileged", "baseline", "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
DEFAULT_ALLOWED_HOST_PORTS = ("1024-65535",)
"""The known list of host ports by default: the unprivileged ones, which any user of the node may
bind (the node has no other way to publish a pod); ports below 1024 need the flag."""
NO_HOST_PORTS = "none"

BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
"""The capabilities ``baseline`` lets a container add (a container runtime's defaults)."""
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
SELINUX_TYPES = frozenset(
    {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)
"""The SELinux types ``baseline`` allows (a user or role may not be set at all)."""
RESTRICTED_VOLUME_SOURCES = (
    "config_map",
    "downward_api",
    "empty_dir",
    "persistent_volume_claim",
    "projected",
    "secret",
)
"""The volume sources ``restricted`` allows (those kubecore has of configMap, csi, downwardAPI,
emptyDir, ephemeral, persistentVolumeClaim, projected, secret)."""
_VOLUME_TYPES = {"host_path": "hostPath", "image": "image"}
RUNTIME_SOCKETS = tuple(
    f"{run}/{socket}"
    for run in ("/run", "/var/run")
    for socket in (
        "docker.sock",
        "containerd/containerd.sock",
        "crio/crio.sock",
        "cri-dockerd.sock",
        "podman/podman.sock",
    )
)
"""The container engines' sockets at their usual places: a directory holding one is allowed only
when each is named exactly too (mounting ``/var/run`` is mounting ``/var/run/docker.sock``)."""


@attrs.frozen
class HostPathRule:
    """A host path pods may mount (it and what is under it), read-only when ``read_only``."""

    prefix: str
    read_only: bool = False


@attrs.frozen
class PodSecurityPolicy:
    level: str = BASELINE
    host_paths: tuple[HostPathRule, ...] = ()
    host_ports: tuple[tuple[int, int], ...] = ((1024, 65535),)
    """The known list of host ports, as (low, high) ranges."""
    unsafe_sysctls: tuple[str, ...] = ()
    """The node's ``--allowed-unsafe-sysctls`` (names or ``prefix*``)."""
    host_namespaces: bool = False
    """``--allow-privileged``: privileged containers and host namespaces are let in."""


@attrs.frozen
class Violation:
    check: str
    """What the rule is called in PSA's messages (``hostPath volumes``)."""
    detail: str
    """Who breaks it and how (``volume "root"``)."""
    path: str
    """The field that breaks it (``spec.volumes[0].hostPath.path``)."""

    def __str__(self) -> str:
        return f"{self.check} ({self.detail})"


# --- the flags ------------------------------------------------------------------------------


def parse_host_path_rule(text: str) -> HostPathRule:
    """``PREFIX`` or ``PREFIX:ro``: an absolute path, normalised; ``ValueError`` saying why not."""
    prefix, _, mode = text.rpartition(":") if text.endswith((":ro", ":rw")) else (text, "", "")
    if not prefix.startswith("/"):
        raise ValueError(f"allowed host path {text!r}: must be an absolute path [:ro]")
    return HostPathRule(normalised(prefix), mode == "ro")


def parse_host_ports(entries: Iterable[str]) -> tuple[tuple[int, int], ...]:
    """``PORT`` or ``LOW-HIGH`` entries (``none``: no port); ``ValueError`` naming a bad one."""
    ranges = []
    for entry in entries:
        if entry == NO_HOST_PORTS:
            continue
        low, _, high = entry.partition("-")
        if not (low.isdigit() and (high or low).isdigit()):
            raise ValueError(f"allowed host port {entry!r}: expected PORT or LOW-HIGH, or none")
        first, last = int(low), int(high or low)
        if not 1 <= first <= last <= 65535:
            raise ValueError(f"allowed host port {entry!r}: ports run from 1 to 65535, low first")
        ranges.append((first, last))
    return tuple(ranges)


def policy_problems(level: object, host_paths: object, host_ports: object) -> list[str]:
    """Why the settings cannot make a policy, as ``field: why`` (``KubeletConfig``'s check)."""
    problems = []
    if level not in LEVELS:
        problems.append(f"pod_security: must be one of {', '.join(LEVELS)}, got {level!r}")
    if _strings(host_paths):
        try:
            _host_paths(host_paths)
        except ValueError as error:
            problems.append(f"allowed_host_paths: {error}")
    if _strings(host_ports):
        try:
            parse_host_ports(host_ports)
        except ValueError as error:
            problems.append(f"allowed_host_ports: {error}")
    return problems


def _strings(values: object) -> TypeGuard[tuple[str, ...]]:
    return isinstance(values, tuple) and all(isinstance(v, str) for v in values)


def _host_paths(entries: Iterable[str]) -> tuple[HostPathRule, ...]:
    return tuple(parse_host_path_rule(entry) for entry in entries)


def make_policy(
    level: str,
    host_paths: Iterable[str] = (),
    host_ports: Iterable[str] = DEFAULT_ALLOWED_HOST_PORTS,
    unsafe_sysctls: Sequence[str] = (),
    allow_privileged: bool = False,
) -> PodSecurityPolicy:
    """The policy of the node's settings (checked by ``policy_problems`` before)."""
    return PodSecurityPolicy(
        level,
        _host_paths(host_paths),
        parse_host_ports(host_ports),
        tuple(unsafe_sysctls),
        allow_privileged,
    )


# --- host paths -------------------------------------------------------------------------------


def normalised(path: str) -> str:
    """``/data/../x//y/`` -> ``/x/y`` (and ``//x`` -> ``/x``, which POSIX leaves alone)."""
    return posixpath.normpath(path).replace("//", "/")


def _under(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def _is_socket(path: str, kind: str) -> bool:
    return kind == "Socket" or path.endswith(".sock")


def host_path_rule(path: str, kind: str, rules: Sequence[HostPathRule]) -> HostPathRule | None:
    """The rule that allows a hostPath (None: none does). Paths are compared normalised and by
    whole components (``/data`` allows ``/data/x``, not ``/database``); a socket (``type:
    Socket``, or a path ending ``.sock``, as ``/var/run/docker.sock``) is allowed only by a rule
    naming it exactly, never as what lies under an allowed directory, and so is a directory
    holding an engine's socket (``RUNTIME_SOCKETS``). Of several rules a read-write one wins."""
    if not path.startswith("/"):
        return None
    path = normalised(path)
    named = {r.prefix for r in rules}
    if any(_under(s, path) and s not in named for s in RUNTIME_SOCKETS):
        return None
    socket = _is_socket(path, kind)
    matching = [r for r in rules if (r.prefix == path if socket else _under(path, r.prefix))]
    return min(matching, key=lambda r: r.read_only, default=None)


# --- the containers ---------------------------------------------------------------------------


def all_containers(pod: Pod) -> Iterator[tuple[str, Container]]:
    """Every container with its field path: init (and sidecar), app and ephemeral ones."""
    spec = pod.spec
    groups: tuple[tuple[str, Sequence[Container]], ...] = (
        ("initContainers", spec.init_containers),
        ("containers", spec.containers),
        ("ephemeralContainers", spec.ephemeral_containers),
    )
    for group, containers in groups:
        for i, container in enumerate(containers):
            yield f"spec.{group}[{i}]", container


def _context(container: Container) -> SecurityContext:
    return container.security_context or SecurityContext()


def _who(container: Container) -> str:
    return f'container "{container.name}"'


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


# --- baseline ---------------------------------------------------------------------------------


def host_namespaces(pod: Pod) -> list[Violation]:
    spec = pod.spec
    asked = (
        ("hostNetwork", spec.host_network),
        ("hostPID", spec.host_pid),
        ("hostIPC", spec.host_ipc),
    )
    return [Violation("host namespaces", f"{n}=true", f"spec.{n}") for n, on in asked if on]


def privileged(pod: Pod) -> list[Violation]:
    return [
        Violation(
            "privileged",
            f"{_who(c)} must not set securityContext.privileged=true",
            f"{path}.securityContext.privileged",
        )
        for path, c in all_containers(pod)
        if c.privileged
    ]


def _added(pod: Pod, allowed: frozenset[str], check: str) -> list[Violation]:
    found = []
    for path, c in all_containers(pod):
        caps = _context(c).capabilities
        extra = [name for name in (caps.add if caps else ()) if name not in allowed]
        if extra:
            found.append(
                Violation(
                    check,
                    f"{_who(c)} must not include {_quoted(extra)} in"
                    " securityContext.capabilities.add",
                    f"{path}.securityContext.capabilities.add",
                )
            )
    return found


def baseline_capabilities(pod: Pod) -> list[Violation]:
    return _added(pod, BASELINE_CAPABILITIES, "non-default capabilities")


def host_path_volumes(pod: Pod, rules: Sequence[HostPathRule]) -> list[Violation]:
    """hostPath volumes outside the allow-list, and read-only allowed ones mounted writable."""
    found = []
    for i, volume in enumerate(pod.spec.volumes):
        source = volume.host_path
        if source is None:
            continue
        rule = host_path_rule(source.path, source.type, rules)
        if rule is None:
            found.append(
                Violation(
                    "hostPath volumes",
                    f'volume "{volume.name}"',
                    f"spec.volumes[{i}].hostPath.path",
                )
            )
        elif rule.read_only:
            found.extend(_writable_mounts(pod, volume.name, rule.prefix))
    return found


def _writable_mounts(pod: Pod, volume: str, prefix: str) -> Iterator[Violation]:
    for path, c in all_containers(pod):
        for j, mount in enumerate(c.volume_mounts):
            if mount.name == volume and not mount.read_only:
                yield Violation(
                    "hostPath volumes",
                    f'{_who(c)} must mount volume "{volume}" readOnly ({prefix} is allowed'
                    " read-only)",
                    f"{path}.volumeMounts[{j}].readOnly",
                )


def host_ports(pod: Pod, known: Sequence[tuple[int, int]]) -> list[Violation]:
    found = []
    for path, c in all_containers(pod):
        for j, port in enumerate(c.ports):
            number = port.host_port
            if number and not any(low <= number <= high for low, high in known):
                found.append(
                    Violation(
                        "hostPort",
                        f"{_who(c)} uses hostPort {number}",
                        f"{path}.ports[{j}].hostPort",
                    )
                )
    return found


def proc_mount(pod: Pod) -> list[Violation]:
    return [
        Violation(
            "procMount",
            f'{_who(c)} must not set securityContext.procMount to "{_context(c).proc_mount}"',
            f"{path}.securityContext.procMount",
        )
        for path, c in all_containers(pod)
        if _context(c).proc_mount not in ("", "Default")
    ]


def _profile_contexts(pod: Pod) -> Iterator[tuple[str, str, SecurityContext | None]]:
    """(who, path, context) of the pod's context (as a ``SecurityContext``'s fields) and each
    container's."""
    pod_sc = pod.spec.security_context
    if pod_sc is not None:
        copied = SecurityContext(
            run_as_user=pod_sc.run_as_user,
            run_as_non_root=pod_sc.run_as_non_root,
            seccomp_profile=pod_sc.seccomp_profile,
            app_armor_profile=pod_sc.app_armor_profile,
            se_linux_options=pod_sc.se_linux_options,
            windows_options=pod_sc.windows_options,
        )
        yield "pod", "spec.securityContext", copied
    for path, c in all_containers(pod):
        yield _who(c), f"{path}.securityContext", c.security_context


def seccomp_baseline(pod: Pod) -> list[Violation]:
    return [
        Violation(
            "seccompProfile",
            f'{who} must not set securityContext.seccompProfile.type to "Unconfined"',
            f"{path}.seccompProfile.type",
        )
        for who, path, sc in _profile_contexts(pod)
        if sc is not None and sc.seccomp_profile is not None
        if sc.seccomp_profile.type == "Unconfined"
    ]


def apparmor(pod: Pod) -> list[Violation]:
    found = [
        Violation(
            "forbidden AppArmor profile",
            f'{who} must not set securityContext.appArmorProfile.type to "Unconfined"',
            f"{path}.appArmorProfile.type",
        )
        for who, path, sc in _profile_contexts(pod)
        if sc is not None and sc.app_armor_profile is not None
        if sc.app_armor_profile.type not in ("RuntimeDefault", "Localhost")
    ]
    for key, value in pod.metadata.annotations.items():
        allowed = value in ("", "runtime/default") or value.startswith("localhost/")
        if key.startswith(APPARMOR_ANNOTATION_PREFIX) and not allowed:
            found.append(
                Violation(
                    "forbidden AppArmor profile",
                    f'annotation "{key}"="{value}"',
                    f"metadata.annotations[{key}]",
                )
            )
    return found


def selinux(pod: Pod) -> list[Violation]:
    found = []
    for who, path, sc in _profile_contexts(pod):
        options = sc.se_linux_options if sc is not None else None
        if options is None:
            continue
        bad = [f'type "{options.type}"'] if options.type not in SELINUX_TYPES else []
        bad += [f'{name} "{value}"' for name, value in (("user", options.user),) if value]
        bad += [f'{name} "{value}"' for name, value in (("role", options.role),) if value]
        if bad:
            found.append(
                Violation(
                    "seLinuxOptions",
                    f"{who} set forbidden securityContext.seLinuxOptions: {'; '.join(bad)}",
                    f"{path}.seLinuxOptions",
                )
            )
    return found


def sysctls(pod: Pod, allowed_unsafe: Sequence[str]) -> list[Violation]:
    pod_sc = pod.spec.security_context
    return [
        Violation("forbidden sysctls", name, f"spec.securityContext.sysctls[{i}].name")
        for i, sysctl in enumerate(pod_sc.sysctls if pod_sc is not None else ())
        if (name := normalize_sysctl_name(sysctl.name)) not in SAFE_SYSCTLS
        if not allowed_unsafe_sysctl(name, allowed_unsafe)
    ]


def host_process(pod: Pod) -> list[Violation]:
    return [
        Violation(
            "hostProcess",
            f"{who} must not set securityContext.windowsOptions.hostProcess=true",
            f"{path}.windowsOptions.hostProcess",
        )
        for who, path, sc in _profile_contexts(pod)
        if sc is not None and sc.windows_options is not None and sc.windows_options.host_process
    ]


# --- restricted -------------------------------------------------------------------------------


def volume_types(pod: Pod, rules: Sequence[HostPathRule]) -> list[Violation]:
    """Volumes of sources ``restricted`` does not allow (an allow-listed hostPath is let in)."""
    found = []
    for i, volume in enumerate(pod.spec.volumes):
        if any(getattr(volume, source) is not None for source in RESTRICTED_VOLUME_SOURCES):
            continue
        source = volume.host_path
        if source is not None and host_path_rule(source.path, source.type, rules) is not None:
            continue
        kind = next((n for f, n in _VOLUME_TYPES.items() if getattr(volume, f) is not None), "")
        found.append(
            Violation(
                "restricted volume types",
                f'volume "{volume.name}" uses restricted volume type "{kind or "unknown"}"',
                f"spec.volumes[{i}].{kind}" if kind else f"spec.volumes[{i}]",
            )
        )
    return found


def privilege_escalation(pod: Pod) -> list[Violation]:
    return [
        Violation(
            "allowPrivilegeEscalation != false",
            f"{_who(c)} must set securityContext.allowPrivilegeEscalation=false",
            f"{path}.securityContext.allowPrivilegeEscalation",
        )
        for path, c in all_containers(pod)
        if _context(c).allow_privilege_escalation is not False
    ]


def run_as_non_root(pod: Pod) -> list[Violation]:
    """The pod sets ``runAsNonRoot: true`` (and no container false), or every container does."""
    check = "runAsNonRoot != true"
    pod_sc = pod.spec.security_context
    pod_value = pod_sc.run_as_non_root if pod_sc is not None else None
    found = []
    if pod_value is False:
        found.append(
            Violation(
                check,
                "pod must not set securityContext.runAsNonRoot=false",
                "spec.securityContext.runAsNonRoot",
            )
        )
    for path, c in all_containers(pod):
        own = _context(c).run_as_non_root
        where = f"{path}.securityContext.runAsNonRoot"
        if own is False:
            detail = f"{_who(c)} must not set securityContext.runAsNonRoot=false"
            found.append(Violation(check, detail, where))
        elif own is None and pod_value is not True:
            detail = f"pod or {_who(c)} must set securityContext.runAsNonRoot=true"
            found.append(Violation(check, detail, where))
    return found


def run_as_user(pod: Pod) -> list[Violation]:
    return [
        Violation("runAsUser=0", f"{who} must not set runAsUser=0", f"{path}.runAsUser")
        for who, path, sc in _profile_contexts(pod)
        if sc is not None and sc.run_as_user == 0
    ]


def seccomp_restricted(pod: Pod) -> list[Violation]:
    """Every container runs RuntimeDefault or Localhost, its own or the pod's; none Unconfined."""
    found = seccomp_baseline(pod)
    pod_sc = pod.spec.security_context
    pod_set = pod_sc is not None and pod_sc.seccomp_profile is not None
    for path, c in all_containers(pod):
        if _context(c).seccomp_profile is None and not pod_set:
            found.append(
                Violation(
                    "seccompProfile",
                    f"pod or {_who(c)} must set securityContext.seccompProfile.type to"
                    ' "RuntimeDefault" or "Localhost"',
                    f"{path}.securityContext.seccompProfile.type",
                )
            )
    return found


def restricted_capabilities(pod: Pod) -> list[Violation]:
    found = []
    for path, c in all_containers(pod):
        caps = _context(c).capabilities
        if "ALL" not in (caps.drop if caps else ()):
            found.append(
                Violation(
                    "unrestricted capabilities",
                    f'{_who(c)} must set securityContext.capabilities.drop=["ALL"]',
                    f"{path}.securityContext.capabilities.drop",
                )
            )
    return found + _added(pod, RESTRICTED_CAPABILITIES, "unrestricted capabilities")


# --- the policy -------------------------------------------------------------------------------


def violations(pod: Pod, policy: PodSecurityPolicy) -> list[Violation]:
    """Every way ``pod`` breaks the policy, in the order PSA lists its checks."""
    if policy.level == PRIVILEGED:
        return []
    restricted = policy.level == RESTRICTED
    found: list[Violation] = []
    if not policy.host_namespaces:
        found += host_namespaces(pod) + privileged(pod)
    found += restricted_capabilities(pod) if restricted else baseline_capabilities(pod)
    found += host_path_volumes(pod, policy.host_paths)
    found += host_ports(pod, policy.host_ports)
    found += proc_mount(pod)
    found += seccomp_restricted(pod) if restricted else seccomp_baseline(pod)
    found += apparmor(pod) + selinux(pod) + sysctls(pod, policy.unsafe_sysctls)
    found += host_process(pod)
    if restricted:
        found += volume_types(pod, policy.host_paths) + privilege_escalation(pod)
        found += run_as_non_root(pod) + run_as_user(pod)
    return found


def forbidden_message(found: Sequence[Violation], level: str) -> str:
    """PSA's words: ``violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true),
    hostPath volumes (volume "root", volume "sock")`` (one entry a check, in order)."""
    grouped: dict[str, list[str]] = {}
    for violation in found:
        grouped.setdefault(violation.check, []).append(violation.detail)
    checks = ", ".join(f"{check} ({', '.join(details)})" for check, details in grouped.items())
    return f'violates PodSecurity "{level}:latest": {checks}'
