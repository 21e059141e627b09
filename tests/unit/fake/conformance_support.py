"""What a process would see of its security context on the in-memory runtime: the conformance
suite's ``observe_security`` for the fake (it runs no process to print it)."""

from __future__ import annotations

from typing import cast

from kubecore.runtime import LinuxContainerSecurityContext, ProfileType
from kubecore.testing.conformance import Harness, SecurityReport
from kubecore_fake import FakeRuntime

CAPABILITY_BITS = {
    name: bit
    for bit, name in enumerate(
        (
            "CHOWN",
            "DAC_OVERRIDE",
            "DAC_READ_SEARCH",
            "FOWNER",
            "FSETID",
            "KILL",
            "SETGID",
            "SETUID",
            "SETPCAP",
            "LINUX_IMMUTABLE",
            "NET_BIND_SERVICE",
            "NET_BROADCAST",
            "NET_ADMIN",
            "NET_RAW",
            "IPC_LOCK",
            "IPC_OWNER",
            "SYS_MODULE",
            "SYS_RAWIO",
            "SYS_CHROOT",
            "SYS_PTRACE",
            "SYS_PACCT",
            "SYS_ADMIN",
            "SYS_BOOT",
            "SYS_NICE",
            "SYS_RESOURCE",
            "SYS_TIME",
            "SYS_TTY_CONFIG",
            "MKNOD",
            "LEASE",
            "AUDIT_WRITE",
            "AUDIT_CONTROL",
            "SETFCAP",
        )
    )
}
DEFAULT_CAPABILITIES = 0xA80425FB  # Docker's default set
ALL_CAPABILITIES = (1 << len(CAPABILITY_BITS)) - 1


def _capability_mask(names: tuple[str, ...]) -> int:
    if any(name.upper() == "ALL" for name in names):
        return ALL_CAPABILITIES
    return sum(1 << CAPABILITY_BITS[name.upper().removeprefix("CAP_")] for name in names)


def fake_security_report(harness: Harness, container_id: str) -> SecurityReport:
    """What a process would see under the security context the fake recorded."""
    runtime = cast(FakeRuntime, harness.runtime)
    sc = runtime.container_config(container_id).security_context or LinuxContainerSecurityContext()
    sandbox_id = runtime.container_status(container_id).sandbox_id
    uid = sc.run_as_user or 0
    gid = sc.run_as_group or 0
    caps = DEFAULT_CAPABILITIES
    if sc.capabilities is not None:
        caps &= ~_capability_mask(sc.capabilities.drop_capabilities)
        caps |= _capability_mask(sc.capabilities.add_capabilities)
    seccomp = sc.seccomp.profile_type if sc.seccomp is not None else ProfileType.RUNTIME_DEFAULT
    label = "unconfined" if sc.apparmor is not None else ""
    if sc.selinux_options is not None:
        label = f"system_u:system_r:container_t:{sc.selinux_options.level}"
    return SecurityReport(
        uid=uid,
        gid=gid,
        groups=frozenset({gid, *sc.supplemental_groups}),
        cap_eff=caps if uid == 0 else 0,
        no_new_privs=sc.no_new_privs,
        seccomp_mode=0 if seccomp is ProfileType.UNCONFINED else 2,
        read_only_root=sc.readonly_rootfs,
        label=label,
        port_range=runtime.sandbox_config(sandbox_id).sysctls.get(
            "net.ipv4.ip_local_port_range", "32768 60999"
        ),
    )
