"""The security context as the engine applies it: the user, groups, capabilities and security
options of a container, or a clear refusal of what this engine cannot apply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kubecore.runtime import (
    InvalidConfig,
    LinuxContainerSecurityContext,
    ProfileType,
    SecurityProfile,
)


@attrs.frozen
class EngineSecurity:
    """The Linux security modules the engine applies (its ``docker info`` SecurityOptions)."""

    apparmor: bool = False
    selinux: bool = False

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> EngineSecurity:
        names = {
            str(option).split(",", 1)[0].removeprefix("name=")
            for option in info.get("SecurityOptions") or ()
        }
        return cls(apparmor="apparmor" in names, selinux="selinux" in names)


def _refuse(container: str, field: str, why: str) -> InvalidConfig:
    return InvalidConfig(f"container {container!r}: {field}: {why}")


def _seccomp_option(name: str, profile: SecurityProfile) -> str | None:
    if profile.profile_type is ProfileType.UNCONFINED:
        return "seccomp=unconfined"
    if profile.profile_type is ProfileType.RUNTIME_DEFAULT:
        return None  # the engine's default profile applies when none is named
    try:
        with open(profile.localhost_ref, encoding="utf-8") as f:
            return f"seccomp={f.read()}"
    except OSError as error:
        why = f"cannot read the Localhost profile {profile.localhost_ref}: {error.strerror}"
        raise _refuse(name, "seccomp", why) from None


def _apparmor_option(name: str, profile: SecurityProfile, engine: EngineSecurity) -> str | None:
    if not engine.apparmor:
        raise _refuse(name, "apparmor", "the engine does not apply AppArmor profiles")
    if profile.profile_type is ProfileType.UNCONFINED:
        return "apparmor=unconfined"
    if profile.profile_type is ProfileType.RUNTIME_DEFAULT:
        return None
    return f"apparmor={profile.localhost_ref}"


def security_args(
    name: str, sc: LinuxContainerSecurityContext, engine: EngineSecurity
) -> tuple[str | None, dict[str, Any]]:
    """The Docker ``user`` and host-config keywords of a security context; ``InvalidConfig``
    for what the engine cannot apply (never silently dropped)."""
    if sc.supplemental_groups_policy != "Merge":
        raise _refuse(
            name,
            "supplemental_groups_policy",
            f"{sc.supplemental_groups_policy}: Docker always adds the image's groups of the user",
        )
    user: str | None = None
    who = str(sc.run_as_user) if sc.run_as_user is not None else sc.run_as_username
    if who:
        user = who if sc.run_as_group is None else f"{who}:{sc.run_as_group}"
    elif sc.run_as_group is not None:
        raise _refuse(name, "run_as_group", "needs run_as_user or run_as_username")
    host: dict[str, Any] = {}
    if sc.supplemental_groups:
        host["group_add"] = [str(gid) for gid in sc.supplemental_groups]
    if sc.capabilities is not None:
        if sc.capabilities.add_capabilities:
            host["cap_add"] = list(sc.capabilities.add_capabilities)
        if sc.capabilities.drop_capabilities:
            host["cap_drop"] = list(sc.capabilities.drop_capabilities)
    if sc.readonly_rootfs:
        host["read_only"] = True
    options: list[str | None] = []
    if sc.no_new_privs:
        options.append("no-new-privileges")
    if sc.seccomp is not None:
        options.append(_seccomp_option(name, sc.seccomp))
    if sc.apparmor is not None:
        options.append(_apparmor_option(name, sc.apparmor, engine))
    if sc.selinux_options is not None:
        if not engine.selinux:
            raise _refuse(name, "selinux_options", "the engine does not apply SELinux labels")
        selinux = sc.selinux_options
        labels = {"user": selinux.user, "role": selinux.role, "type": selinux.type}
        labels["level"] = selinux.level
        options.extend(f"label={key}:{value}" for key, value in labels.items() if value)
    if any(options):
        host["security_opt"] = [option for option in options if option]
    return user, host
