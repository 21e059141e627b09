"""Strict mode of the conformance suite, and what it catches: a runtime that ignores the
environment, the mounts and the security context fails; a test module that leaves out what a
check needs fails in strict mode; an optional capability the runtime lacks is reported as not
checked, never failed."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)

IGNORANT_RUNTIME_TESTS = """
import attrs
import pytest
from kubecore.runtime import RuntimeBundle
from kubecore.testing import ManualClock
from kubecore.testing.conformance import RuntimeConformance, busybox_workloads
from kubecore_fake import FakeRuntime
from tests.unit.fake.conformance_support import fake_security_report


class IgnorantRuntime(FakeRuntime):
    '''Drops the environment, the mounts and the security context of every container.'''

    def create_container(self, sandbox_id, config, sandbox_config):
        config = attrs.evolve(config, env=(), mounts=(), security_context=None)
        return super().create_container(sandbox_id, config, sandbox_config)


class TestIgnorant(RuntimeConformance):
    @pytest.fixture
    def clock(self):
        return ManualClock()

    @pytest.fixture
    def bundle(self, clock):
        runtime = IgnorantRuntime(clock, images=["busybox:1.36"])
        yield RuntimeBundle(runtime=runtime, puller=runtime)
        runtime.close()

    @pytest.fixture
    def workloads(self):
        return busybox_workloads("busybox:1.36")

    @pytest.fixture
    def observe_security(self):
        return fake_security_report
"""

SPARSE_TESTS = """
import attrs
import pytest
from kubecore.runtime import RuntimeBundle
from kubecore.testing import ManualClock
from kubecore.testing.conformance import RuntimeConformance, busybox_workloads
from kubecore_fake import FakeRuntime


class TestSparse(RuntimeConformance):
    '''No list_processes, no run_script, no unmanaged_container; the bundle has no health
    checker of its own.'''

    @pytest.fixture
    def clock(self):
        return ManualClock()

    @pytest.fixture
    def bundle(self, clock):
        runtime = FakeRuntime(clock, images=["busybox:1.36"])
        yield RuntimeBundle(runtime=runtime, puller=runtime)
        runtime.close()

    @pytest.fixture
    def workloads(self):
        return attrs.evolve(busybox_workloads("busybox:1.36"), list_processes=None, run_script=None)
"""

SPARSE_CHECKS = "pid_namespace_mode or environment or bind_mounts or only_managed or exec_probes"


def test_a_runtime_that_ignores_env_mounts_and_security_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ignorant=IGNORANT_RUNTIME_TESTS)
    result = pytester.runpytest_inprocess(
        "-q", "-p", "no:cacheprovider", "-k", "environment or bind_mounts or security_context"
    )
    # what passes: seccomp RuntimeDefault (what a container gets anyway) and no context at all
    result.assert_outcomes(failed=13, passed=2)
    result.stdout.fnmatch_lines(
        [
            "*KC_CONF_PLAIN did not reach the process*",
            "*the mounted file was not seen*",
            "*run_as_user was dropped*",
        ]
    )


def test_without_strict_mode_what_a_module_left_out_is_skipped(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sparse=SPARSE_TESTS)
    result = pytester.runpytest_inprocess(
        "-q", "-rs", "-p", "no:cacheprovider", "-k", SPARSE_CHECKS
    )
    result.assert_outcomes(skipped=6)
    result.stdout.fnmatch_lines(["*no unmanaged_container fixture*"])


def test_strict_mode_fails_what_a_module_left_out(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sparse=SPARSE_TESTS)
    result = pytester.runpytest_inprocess(
        "-q", "-rs", "-p", "no:cacheprovider", "--conformance-strict", "-k", SPARSE_CHECKS
    )
    # the PID checks (2), the environment, the bind mounts, the unmanaged container: failures;
    # the health checker is an optional part of a bundle: not checked, and reported
    result.assert_outcomes(failed=5, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*strict conformance: the workloads have no run_script*",
            "*kubecore conformance: not checked*",
            "not checked: a health checker of its own (1 check)",
            "SKIPPED*_capabilities.py*not checked (a health checker of its own)*",
        ]
    )


def test_the_environment_turns_strict_mode_on(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECORE_CONFORMANCE_STRICT", "1")
    pytester.makepyfile(test_sparse=SPARSE_TESTS)
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", "-k", "only_managed")
    result.assert_outcomes(failed=1)
