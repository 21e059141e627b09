"""Security context: the pod's and the container's ``securityContext`` merged as the kubelet
merges them, the runtime's view of it, the node's admission rules and the runAsNonRoot check.

Pod-level values are defaults that container-level values override; supplemental groups, fsGroup
and sysctls are the pod's alone (fsGroup joins every container's supplemental groups).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from typing import TypeVar

import attrs

from kubecore._contract.values import (
    Capability,
    Image,
    LinuxContainerSecurityContext,
    ProfileType,
    SecurityProfile,
    SELinuxOption,
)
from kubecore._model.v1 import (
    AppArmorProfile,
    Container,
    Pod,
    SeccompProfile,
    SecurityContext,
    SELinuxOptions,
)

_T = TypeVar("_T")

SECCOMP_DIR = "seccomp"
"""Localhost seccomp profiles live in ``<root dir>/seccomp/`` (the kubelet's layout)."""

APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
"""The deprecated per-container AppArmor annotation, still honoured when no field is set."""

SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
"""The kubelet's safe sysctls: namespaced, and isolated between pods of a node."""

SYSCTL_FORBIDDEN = "SysctlForbidden"
APPARMOR_NOT_SUPPORTED = "AppArmorNotSupported"
SELINUX_NOT_SUPPORTED = "SELinuxNotSupported"
USER_NAMESPACES_NOT_SUPPORTED = "UserNamespacesNotSupported"

_IPC_SYSCTL_PREFIXES = ("kernel.shm", "kernel.msg", "fs.mqueue.")
_IPC_SYSCTLS = frozenset({"kernel.sem"})


@attrs.frozen
class HostSecurity:
    """The Linux security modules the node has."""

    apparmor: bool = False
    selinux: bool = False


def detect_host_security(sys_root: str = "/sys") -> HostSecurity:
    """AppArmor is on when ``/sys/module/apparmor/parameters/enabled`` says ``Y``; SELinux when
    ``/sys/fs/selinux`` is mounted."""
    try:
        with open(os.path.join(sys_root, "module/apparmor/parameters/enabled")) as f:
            apparmor = f.read().strip().upper().startswith("Y")
    except OSError:
        apparmor = False
    selinux = os.path.exists(os.path.join(sys_root, "fs/selinux/enforce"))
    return HostSecurity(apparmor=apparmor, selinux=selinux)


# --- the effective security context -------------------------------------------------------


def effective_security_context(pod: Pod, container: Container) -> SecurityContext:
    """The container's securityContext with the pod's values filled in where it sets none."""
    own = container.security_context or SecurityContext()
    pod_sc = pod.spec.security_context
    if pod_sc is None:
        return own
    return attrs.evolve(
        own,
        run_as_user=_first(own.run_as_user, pod_sc.run_as_user),
        run_as_group=_first(own.run_as_group, pod_sc.run_as_group),
        run_as_non_root=_first(own.run_as_non_root, pod_sc.run_as_non_root),
        seccomp_profile=_first(own.seccomp_profile, pod_sc.seccomp_profile),
        app_armor_profile=_first(own.app_armor_profile, pod_sc.app_armor_profile),
        se_linux_options=_first(own.se_linux_options, pod_sc.se_linux_options),
        windows_options=_first(own.windows_options, pod_sc.windows_options),
    )


def _first(value: _T | None, fallback: _T | None) -> _T | None:
    return value if value is not None else fallback


def app_armor_profile(pod: Pod, container: Container) -> AppArmorProfile | None:
    """The container's AppArmor profile: its field, the pod's, then the legacy annotation."""
    profile = effective_security_context(pod, container).app_armor_profile
    if profile is not None:
        return profile
    legacy = pod.metadata.annotations.get(APPARMOR_ANNOTATION_PREFIX + container.name)
    if legacy is None:
        return None
    if legacy == "runtime/default":
        return AppArmorProfile("RuntimeDefault")
    if legacy == "unconfined":
        return AppArmorProfile("Unconfined")
    return AppArmorProfile("Localhost", legacy.removeprefix("localhost/"))


def supplemental_groups(pod: Pod) -> tuple[int, ...]:
    """The pod's supplemental groups, fsGroup first (as the kubelet adds them)."""
    pod_sc = pod.spec.security_context
    if pod_sc is None:
        return ()
    groups = (pod_sc.fs_group,) if pod_sc.fs_group is not None else ()
    return tuple(dict.fromkeys((*groups, *pod_sc.supplemental_groups)))


def allows_privilege_escalation(sc: SecurityContext) -> bool:
    """Kubernetes' rule: escalation is allowed unless ``allowPrivilegeEscalation: false``."""
    return sc.allow_privilege_escalation is not False


def _seccomp(profile: SeccompProfile | None, seccomp_root: str) -> SecurityProfile | None:
    if profile is None:
        return None
    kind = ProfileType(profile.type)
    if kind is ProfileType.LOCALHOST:
        return SecurityProfile(kind, os.path.join(seccomp_root, profile.localhost_profile))
    return SecurityProfile(kind)


def _apparmor(profile: AppArmorProfile | None) -> SecurityProfile | None:
    if profile is None:
        return None
    kind = ProfileType(profile.type)
    return SecurityProfile(kind, profile.localhost_profile if kind is ProfileType.LOCALHOST else "")


def _selinux(options: SELinuxOptions | None) -> SELinuxOption | None:
    if options is None:
        return None
    return SELinuxOption(options.user, options.role, options.type, options.level)


def needs_image_user(pod: Pod, container: Container) -> bool:
    """Whether building the container's config needs the image's user (runAsNonRoot to check,
    or a group to run as without a user)."""
    sc = effective_security_context(pod, container)
    return sc.run_as_user is None and (sc.run_as_non_root is True or sc.run_as_group is not None)


def container_security(
    pod: Pod, container: Container, *, seccomp_root: str, image: Image | None = None
) -> LinuxContainerSecurityContext | None:
    """The runtime's security context of a container; None when nothing is asked for (the
    runtime's defaults), so a pod without securityContext gets today's config.

    ``image``: the image's status, whose user fills in a user when the pod sets only a group.
    """
    sc = effective_security_context(pod, container)
    pod_sc = pod.spec.security_context
    caps = sc.capabilities
    run_as_user, run_as_username = sc.run_as_user, ""
    if run_as_user is None and sc.run_as_group is not None:
        if image is not None and image.uid is not None:
            run_as_user = image.uid
        elif image is not None and image.username:
            run_as_username = image.username
        else:
            run_as_user = 0
    policy = pod_sc.supplemental_groups_policy if pod_sc is not None else ""
    result = LinuxContainerSecurityContext(
        capabilities=Capability(caps.add, caps.drop) if caps and (caps.add or caps.drop) else None,
        run_as_user=run_as_user,
        run_as_username=run_as_username,
        run_as_group=sc.run_as_group,
        readonly_rootfs=bool(sc.read_only_root_filesystem),
        supplemental_groups=supplemental_groups(pod),
        supplemental_groups_policy=policy or "Merge",
        no_new_privs=not allows_privilege_escalation(sc),
        seccomp=_seccomp(sc.seccomp_profile, seccomp_root),
        apparmor=_apparmor(app_armor_profile(pod, container)),
        selinux_options=_selinux(sc.se_linux_options),
    )
    return None if result == LinuxContainerSecurityContext() else result


# --- runAsNonRoot -------------------------------------------------------------------------


def _pod_ref(pod: Pod) -> str:
    return f"{pod.metadata.name}_{pod.metadata.namespace}({pod.metadata.uid})"


def run_as_non_root_problem(pod: Pod, container: Container, image: Image | None) -> str | None:
    """Why the container may not start under ``runAsNonRoot`` (the kubelet's messages), else
    None. An image that names no user runs as root."""
    sc = effective_security_context(pod, container)
    if sc.run_as_non_root is not True:
        return None
    where = f"(pod: {_pod_ref(pod)!r}, container: {container.name})"
    if sc.run_as_user is not None:
        if sc.run_as_user == 0:
            return f"container's runAsUser breaks non-root policy {where}"
        return None
    uid = image.uid if image is not None else None
    username = image.username if image is not None else ""
    if uid is None and username:
        return (
            f"container has runAsNonRoot and image has non-numeric user ({username}),"
            f" cannot verify user is non-root {where}"
        )
    if uid is None or uid == 0:
        return f"container has runAsNonRoot and image will run as root {where}"
    return None


# --- admission ----------------------------------------------------------------------------


def normalize_sysctl_name(name: str) -> str:
    """``net/ipv4/ip_forward`` -> ``net.ipv4.ip_forward`` (a slash-separated name may hold dots,
    which become slashes: ``net/ipv4/conf/eno2.100/rp_filter``), as the kubelet reads them."""
    if "/" not in name:
        return name
    return name.translate(str.maketrans("./", "/."))


def pod_sysctls(pod: Pod) -> dict[str, str]:
    """The pod's sysctls by their dotted names."""
    pod_sc = pod.spec.security_context
    if pod_sc is None:
        return {}
    return {normalize_sysctl_name(s.name): s.value for s in pod_sc.sysctls}


def is_namespaced_sysctl(name: str) -> bool:
    """Whether the kernel keeps the sysctl per network or IPC namespace."""
    return name.startswith("net.") or _is_ipc_sysctl(name)


def _is_ipc_sysctl(name: str) -> bool:
    return name in _IPC_SYSCTLS or name.startswith(_IPC_SYSCTL_PREFIXES)


def allowed_unsafe_sysctl(name: str, patterns: Sequence[str]) -> bool:
    """Whether ``--allowed-unsafe-sysctls`` (names, or prefixes ending in ``*``) names it."""
    return any(fnmatch.fnmatchcase(name, p) if p.endswith("*") else name == p for p in patterns)


def sysctl_problem(pod: Pod, name: str, allowed_unsafe: Sequence[str]) -> str | None:
    """Why the node refuses this sysctl (the kubelet's rules), else None."""
    if name not in SAFE_SYSCTLS and not allowed_unsafe_sysctl(name, allowed_unsafe):
        return f'forbidden sysctl: "{name}" not allowlisted'
    if not is_namespaced_sysctl(name):
        return f'forbidden sysctl: "{name}" is not namespaced'
    if name.startswith("net.") and pod.spec.host_network:
        return f'forbidden sysctl: "{name}" not allowed with host net enabled'
    return None


def _containers(pod: Pod) -> Iterator[tuple[str, Container]]:
    for group, containers in (
        ("initContainers", pod.spec.init_containers),
        ("containers", pod.spec.containers),
    ):
        for i, container in enumerate(containers):
            yield f"spec.{group}[{i}]", container


def _where(pod: Pod, path: str, container: Container, field: str) -> str | None:
    """The manifest path that sets ``field`` (a securityContext field) for the container: its
    own, the pod's, or (AppArmor) the legacy annotation; None when nothing sets it."""
    if getattr(container.security_context, field, None) is not None:
        return f"{path}.securityContext.{_JSON_NAMES[field]}"
    if getattr(pod.spec.security_context, field, None) is not None:
        return f"spec.securityContext.{_JSON_NAMES[field]}"
    annotation = APPARMOR_ANNOTATION_PREFIX + container.name
    if field == "app_armor_profile" and annotation in pod.metadata.annotations:
        return f"metadata.annotations[{annotation}]"
    return None


_JSON_NAMES = {"app_armor_profile": "appArmorProfile", "se_linux_options": "seLinuxOptions"}


def security_refusal(
    pod: Pod, host: HostSecurity, allowed_unsafe_sysctls: Sequence[str] = ()
) -> tuple[str, str] | None:
    """(reason, message) when the node cannot run the pod's security context, else None."""
    if pod.spec.host_users is False:
        return (
            USER_NAMESPACES_NOT_SUPPORTED,
            "Pod was rejected: spec.hostUsers: false asks for a user namespace of the pod's own,"
            " and the node's runtime cannot give one per pod (Docker's user namespaces are"
            " engine-wide)",
        )
    for name in pod_sysctls(pod):
        problem = sysctl_problem(pod, name, allowed_unsafe_sysctls)
        if problem is not None:
            return SYSCTL_FORBIDDEN, f"Pod was rejected: {problem}"
    for path, container in _containers(pod):
        where = _where(pod, path, container, "app_armor_profile")
        if not host.apparmor and where is not None:
            return (
                APPARMOR_NOT_SUPPORTED,
                f"Pod was rejected: {where} (container {container.name}): AppArmor is not"
                " enabled on this node",
            )
        where = _where(pod, path, container, "se_linux_options")
        if not host.selinux and where is not None:
            return (
                SELINUX_NOT_SUPPORTED,
                f"Pod was rejected: {where} (container {container.name}): SELinux is not enabled"
                " on this node",
            )
    return None


def parse_image_user(user: str) -> tuple[int | None, str]:
    """(uid, username) of an image's configured user (``1000``, ``1000:1000``, ``nobody:nogroup``,
    '' for root): the user part, a number when it is one."""
    name = user.split(":", 1)[0]
    if name.isdigit():
        return int(name), ""
    return None, name
