"""Checks of the security context: each field applied, as the container sees it, or refused
clearly; the report a container prints of what it sees."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest

from kubecore._contract.errors import (
    ContainerRuntimeError,
)
from kubecore._contract.values import (
    Capability,
    LinuxContainerSecurityContext,
    ProfileType,
    RuntimeState,
    SandboxConfig,
    SecurityProfile,
    SELinuxOption,
)
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import Harness
from kubecore.testing.conformance._workloads import (
    PORT_RANGE_SYSCTL,
    SecurityReport,
    parse_security_report,
)


@attrs.frozen
class _SecurityCase:
    field: str
    """The ``LinuxContainerSecurityContext`` field a refusal must name."""
    context: LinuxContainerSecurityContext
    applied: Callable[[SecurityReport], bool]
    what: str


CAP_NET_ADMIN = 1 << 12
_LCSC = LinuxContainerSecurityContext
SECURITY_CASES = (
    _SecurityCase("run_as_user", _LCSC(run_as_user=1234), lambda r: r.uid == 1234, "uid 1234"),
    _SecurityCase(
        "run_as_group",
        _LCSC(run_as_user=1234, run_as_group=2345),
        lambda r: (r.uid, r.gid) == (1234, 2345),
        "uid 1234, gid 2345",
    ),
    _SecurityCase(
        "supplemental_groups",
        _LCSC(run_as_user=1234, supplemental_groups=(3456, 4567)),
        lambda r: {3456, 4567} <= r.groups,
        "groups 3456 and 4567",
    ),
    _SecurityCase(
        "supplemental_groups_policy",
        _LCSC(
            run_as_user=1234,
            run_as_group=2345,
            supplemental_groups=(3456,),
            supplemental_groups_policy="Strict",
        ),
        lambda r: r.groups == {2345, 3456},
        "exactly groups 2345 and 3456",
    ),
    _SecurityCase(
        "capabilities",
        _LCSC(capabilities=Capability(drop_capabilities=("ALL",))),
        lambda r: r.cap_eff == 0,
        "no capabilities",
    ),
    _SecurityCase(
        "capabilities",
        _LCSC(capabilities=Capability(("NET_ADMIN",), ("ALL",))),
        lambda r: r.cap_eff == CAP_NET_ADMIN,
        "only CAP_NET_ADMIN",
    ),
    _SecurityCase(
        "readonly_rootfs", _LCSC(readonly_rootfs=True), lambda r: r.read_only_root, "ro root"
    ),
    _SecurityCase(
        "no_new_privs", _LCSC(no_new_privs=True), lambda r: r.no_new_privs, "NoNewPrivs: 1"
    ),
    _SecurityCase(
        "seccomp",
        _LCSC(seccomp=SecurityProfile(ProfileType.UNCONFINED)),
        lambda r: r.seccomp_mode == 0,
        "Seccomp: 0",
    ),
    _SecurityCase(
        "seccomp",
        _LCSC(seccomp=SecurityProfile(ProfileType.RUNTIME_DEFAULT)),
        lambda r: r.seccomp_mode == 2,
        "Seccomp: 2",
    ),
    _SecurityCase(
        "apparmor",
        _LCSC(apparmor=SecurityProfile(ProfileType.UNCONFINED)),
        lambda r: r.label.startswith("unconfined"),
        "the unconfined AppArmor label",
    ),
    _SecurityCase(
        "selinux_options",
        _LCSC(selinux_options=SELinuxOption(level="s0:c123,c456")),
        lambda r: r.label.endswith("s0:c123,c456"),
        "the SELinux level s0:c123,c456",
    ),
)
"""Each security context the suite starts a container with: the field a refusal must name, the
context, and how the container's ``SecurityReport`` shows it applied."""
SANDBOX_PORT_RANGE = "1100 60999"


class SecurityChecks(PluginFixtures):
    """Security contexts and sandbox sysctls."""

    # -- security context ------------------------------------------------------------------------

    def _report(
        self,
        harness: Harness,
        container_id: str,
        observe: Callable[[Harness, str], SecurityReport | None] | None,
    ) -> SecurityReport:
        def read() -> SecurityReport | None:
            if observe is not None:
                return observe(harness, container_id)
            return parse_security_report(list(harness.runtime.logs(container_id)))

        return harness.wait(read, f"the security report of {container_id}")

    def _start_secured(
        self,
        harness: Harness,
        sandbox: tuple[str, SandboxConfig],
        context: LinuxContainerSecurityContext | None,
        observe: Callable[[Harness, str], SecurityReport | None] | None,
    ) -> str | ContainerRuntimeError:
        """The running container's id, or the error that refused it."""
        # An observer reads the facts its own way: the container only has to run.
        command = harness.workloads.report_security if observe is None else None
        if command is None and observe is None:
            harness.unseen("the workloads have no report_security and no observe_security is given")
        try:
            container_id = harness.create(
                sandbox, command or harness.workloads.run_forever, security_context=context
            )
            harness.runtime.start_container(container_id)
        except ContainerRuntimeError as error:
            return error
        harness.wait_state(container_id, RuntimeState.RUNNING)
        return container_id

    @pytest.mark.parametrize(
        "case", SECURITY_CASES, ids=[f"{c.field}-{i}" for i, c in enumerate(SECURITY_CASES)]
    )
    def test_security_context_is_applied_or_refused(
        self,
        harness: Harness,
        case: _SecurityCase,
        observe_security: Callable[[Harness, str], SecurityReport | None] | None,
    ) -> None:
        started = self._start_secured(
            harness, harness.run_sandbox(), case.context, observe_security
        )
        if isinstance(started, ContainerRuntimeError):
            assert case.field in str(started), (
                f"refusing {case.field}, the error must name it: {started}"
            )
            harness.refused(f"security context: {case.field}")
            return
        report = self._report(harness, started, observe_security)
        assert case.applied(report), f"{case.field} was dropped: wanted {case.what}, saw {report}"

    def test_no_security_context_runs_as_the_image_says(
        self,
        harness: Harness,
        observe_security: Callable[[Harness, str], SecurityReport | None] | None,
    ) -> None:
        started = self._start_secured(harness, harness.run_sandbox(), None, observe_security)
        assert not isinstance(started, ContainerRuntimeError), started
        report = self._report(harness, started, observe_security)
        assert not report.no_new_privs, "no_new_privs was set unasked"

    def test_sandbox_sysctls_are_applied_or_refused(
        self,
        harness: Harness,
        observe_security: Callable[[Harness, str], SecurityReport | None] | None,
    ) -> None:
        config = attrs.evolve(
            harness.sandbox_config(), sysctls={PORT_RANGE_SYSCTL: SANDBOX_PORT_RANGE}
        )
        try:
            sandbox = harness.run_sandbox(config)
        except ContainerRuntimeError as error:
            assert "sysctl" in str(error), f"refusing sysctls, the error must say so: {error}"
            harness.refused("sandbox sysctls")
            return
        started = self._start_secured(harness, sandbox, None, observe_security)
        assert not isinstance(started, ContainerRuntimeError), started
        report = self._report(harness, started, observe_security)
        assert report.port_range == SANDBOX_PORT_RANGE, f"sysctls were dropped: {report}"
