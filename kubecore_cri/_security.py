"""Which Linux security modules the CRI runtime applies, so that a container asking for an
AppArmor profile or SELinux labels the runtime would silently ignore is refused instead."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import attrs

from kubecore.runtime import ContainerConfig, InvalidConfig

APPARMOR_ENABLED = Path("/sys/module/apparmor/parameters/enabled")
"""``Y`` when the host's kernel enforces AppArmor (what containerd itself checks)."""


@attrs.frozen
class RuntimeSecurity:
    apparmor: bool = False
    selinux: bool = False

    @classmethod
    def from_status_info(
        cls, info: Mapping[str, str], *, local: bool, apparmor_flag: Path = APPARMOR_ENABLED
    ) -> RuntimeSecurity:
        """From ``Status(verbose=True).info``: containerd's ``config`` says ``enableSelinux``
        and ``disableApparmor``; AppArmor also needs the host's kernel to enforce it (checked
        when the runtime runs on this host). A runtime that says nothing applies neither."""
        try:
            config = json.loads(info.get("config", "") or "{}")
        except ValueError:
            config = {}
        if not isinstance(config, dict):
            config = {}
        apparmor = "disableApparmor" in config and not config["disableApparmor"]
        if apparmor and local:
            try:
                apparmor = apparmor_flag.read_text().strip() == "Y"
            except OSError:
                apparmor = False
        return cls(apparmor=apparmor, selinux=bool(config.get("enableSelinux")))

    def check(self, config: ContainerConfig) -> None:
        """``InvalidConfig`` naming the field the runtime would not apply."""
        sc = config.security_context
        if sc is None:
            return
        if sc.apparmor is not None and not self.apparmor:
            raise InvalidConfig(
                f"container {config.name!r}: apparmor: the CRI runtime does not apply AppArmor"
                " profiles here"
            )
        if sc.selinux_options is not None and not self.selinux:
            raise InvalidConfig(
                f"container {config.name!r}: selinux_options: the CRI runtime does not apply"
                " SELinux labels (containerd: enable_selinux is off)"
            )
