"""Validation of the pod's and the containers' ``securityContext`` (the API server's rules, and
what a Linux node refuses whatever the host)."""

from __future__ import annotations

import re

from kubecore._contract.errors import FieldError
from kubecore._manifest.decoding import _field, _Problems
from kubecore._model import v1 as m

MAX_ID = 2_147_483_647
_PROFILE_TYPES = ("RuntimeDefault", "Unconfined", "Localhost")
_PROC_MOUNTS = ("Default", "Unmasked")
_SUPPLEMENTAL_GROUPS_POLICIES = ("Merge", "Strict")
_FS_GROUP_CHANGE_POLICIES = ("OnRootMismatch", "Always")
_SE_LINUX_CHANGE_POLICIES = ("MountOption", "Recursive")
_SYSCTL_NAME = re.compile(
    r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
    r"(/[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*"
)
_SYSCTL_MAX = 253


def _check_id(errs: _Problems, path: str, value: int | None) -> None:
    if value is not None and not 0 <= value <= MAX_ID:
        errs.append(FieldError(path, f"must be between 0 and {MAX_ID}, inclusive, got {value}"))


def _check_choice(errs: _Problems, path: str, value: str, choices: tuple[str, ...]) -> None:
    if value and value not in choices:
        errs.append(
            FieldError(path, f"unsupported value {value!r}: must be one of {', '.join(choices)}")
        )


def _check_profile(
    errs: _Problems, path: str, profile: m.SeccompProfile | m.AppArmorProfile | None
) -> None:
    if profile is None:
        return
    if profile.type not in _PROFILE_TYPES:
        problem = (
            "required"
            if not profile.type
            else f"unsupported value {profile.type!r}: must be one of {', '.join(_PROFILE_TYPES)}"
        )
        errs.append(FieldError(_field(path, "type"), problem))
        return
    where = _field(path, "localhostProfile")
    if profile.type != "Localhost":
        if profile.localhost_profile:
            errs.append(FieldError(where, "can only be set when type is Localhost"))
        return
    if not profile.localhost_profile:
        errs.append(FieldError(where, "required when type is Localhost"))
    elif isinstance(profile, m.SeccompProfile) and (
        profile.localhost_profile.startswith("/") or ".." in profile.localhost_profile.split("/")
    ):
        errs.append(
            FieldError(
                where,
                f"must be a path relative to the node's seccomp profile directory, without '..',"
                f" got {profile.localhost_profile!r}",
            )
        )


def _check_common(errs: _Problems, path: str, sc: m.SecurityContext | m.PodSecurityContext) -> None:
    _check_id(errs, _field(path, "runAsUser"), sc.run_as_user)
    _check_id(errs, _field(path, "runAsGroup"), sc.run_as_group)
    _check_profile(errs, _field(path, "seccompProfile"), sc.seccomp_profile)
    _check_profile(errs, _field(path, "appArmorProfile"), sc.app_armor_profile)
    if sc.windows_options is not None:
        errs.append(
            FieldError(
                _field(path, "windowsOptions"),
                "Windows options cannot be used: this is a Linux node",
            )
        )


def _adds_sys_admin(caps: m.Capabilities | None) -> bool:
    return caps is not None and any(c.upper() in ("SYS_ADMIN", "CAP_SYS_ADMIN") for c in caps.add)


def _check_container(
    errs: _Problems, path: str, sc: m.SecurityContext, host_users: bool | None
) -> None:
    _check_common(errs, path, sc)
    _check_choice(errs, _field(path, "procMount"), sc.proc_mount, _PROC_MOUNTS)
    if sc.proc_mount == "Unmasked" and host_users is not False:
        errs.append(
            FieldError(
                _field(path, "procMount"),
                "Unmasked needs spec.hostUsers: false (a user namespace of the pod's own)",
            )
        )
    if sc.allow_privilege_escalation is False:
        where = _field(path, "allowPrivilegeEscalation")
        if sc.privileged:
            errs.append(
                FieldError(where, "cannot set allowPrivilegeEscalation to false and privileged")
            )
        if _adds_sys_admin(sc.capabilities):
            errs.append(
                FieldError(
                    where,
                    "cannot set allowPrivilegeEscalation to false and add CAP_SYS_ADMIN",
                )
            )


def _check_pod(errs: _Problems, path: str, sc: m.PodSecurityContext) -> None:
    _check_common(errs, path, sc)
    _check_id(errs, _field(path, "fsGroup"), sc.fs_group)
    for i, gid in enumerate(sc.supplemental_groups):
        _check_id(errs, f"{path}.supplementalGroups[{i}]", gid)
    _check_choice(
        errs,
        _field(path, "supplementalGroupsPolicy"),
        sc.supplemental_groups_policy,
        _SUPPLEMENTAL_GROUPS_POLICIES,
    )
    _check_choice(
        errs,
        _field(path, "fsGroupChangePolicy"),
        sc.fs_group_change_policy,
        _FS_GROUP_CHANGE_POLICIES,
    )
    _check_choice(
        errs,
        _field(path, "seLinuxChangePolicy"),
        sc.se_linux_change_policy,
        _SE_LINUX_CHANGE_POLICIES,
    )
    seen: dict[str, int] = {}
    for i, sysctl in enumerate(sc.sysctls):
        where = f"{path}.sysctls[{i}].name"
        if not sysctl.name:
            errs.append(FieldError(where, "required"))
        elif len(sysctl.name) > _SYSCTL_MAX or not _SYSCTL_NAME.fullmatch(sysctl.name):
            errs.append(FieldError(where, f"invalid sysctl name {sysctl.name!r}"))
        elif sysctl.name in seen:
            errs.append(
                FieldError(
                    where, f"duplicate sysctl {sysctl.name!r} (also sysctls[{seen[sysctl.name]}])"
                )
            )
        else:
            seen[sysctl.name] = i


def check_security(errs: _Problems, path: str, spec: m.PodSpec) -> None:
    """Problems of the pod's and each container's ``securityContext`` (``path``: the spec's)."""
    if spec.security_context is not None:
        _check_pod(errs, _field(path, "securityContext"), spec.security_context)
    for group, containers in (
        ("initContainers", spec.init_containers),
        ("containers", spec.containers),
        ("ephemeralContainers", spec.ephemeral_containers),
    ):
        for i, container in enumerate(containers):
            if container.security_context is not None:
                where = _field(f"{_field(path, group)}[{i}]", "securityContext")
                _check_container(errs, where, container.security_context, spec.host_users)
