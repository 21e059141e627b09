"""The shipped runtime conformance suite, run against kubecore_fake in virtual time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import cast

import pytest

import kubecore
from kubecore.runtime import RuntimeBundle
from kubecore.testing import ManualClock
from kubecore.testing.conformance import (
    Harness,
    RuntimeConformance,
    SecurityReport,
    Workloads,
    busybox_workloads,
)
from kubecore_fake import Behaviour, FakeRuntime
from tests.unit.fake.conformance_support import fake_security_report

pytest_plugins = ("pytester",)

IMAGE = "busybox:1.36"
REMOVABLE = "kubecore-test/removable:1"


class TestFakeRuntime(RuntimeConformance):
    STRICT = True  # every check runs: the fake offers every capability

    @pytest.fixture
    def clock(self) -> ManualClock:
        return ManualClock()

    @pytest.fixture
    def bundle(self, clock: ManualClock) -> Iterator[RuntimeBundle]:
        bundle = kubecore.load_runtime("fake", clock=clock, images=[IMAGE, REMOVABLE])
        runtime = cast(FakeRuntime, bundle.runtime)
        # The one workload the fake cannot read from its command: eating memory.
        runtime.script(command="tail /dev/zero", behaviour=Behaviour(memory_bytes=2**30))
        yield bundle
        assert runtime.unmanaged_calls == []
        runtime.close()

    @pytest.fixture
    def workloads(self) -> Workloads:
        return busybox_workloads(IMAGE, pullable_image=REMOVABLE)

    @pytest.fixture
    def unmanaged_container(self, bundle: RuntimeBundle) -> Callable[[], str]:
        return cast(FakeRuntime, bundle.runtime).add_unmanaged_container

    @pytest.fixture
    def observe_security(self) -> Callable[[Harness, str], SecurityReport]:
        return fake_security_report

    @pytest.fixture
    def reopen(self, bundle: RuntimeBundle) -> Callable[[], RuntimeBundle]:
        """The in-memory runtime cannot outlive its object (its bundle says ``adopts=False``);
        what a restarted agent on it sees is the same object, handed over by the harness."""
        return lambda: bundle


def test_the_base_class_is_not_collected_on_its_own() -> None:
    assert not RuntimeConformance.__name__.startswith("Test")


def test_waits_advance_a_manual_clock() -> None:
    from kubecore.testing.conformance import wait_for

    clock = ManualClock()
    start = clock.monotonic()
    assert wait_for(clock, lambda: clock.monotonic() - start >= 2 or None, "2 s", 10) is True
    with pytest.raises(AssertionError, match="timed out after 1"):
        wait_for(clock, lambda: None, "never", 1)


BROKEN_RUNTIME_TESTS = '''
import pytest
import kubecore
from kubecore.runtime import ContainerNotFound, RuntimeBundle
from kubecore.testing import ManualClock
from kubecore.testing.conformance import RuntimeConformance, busybox_workloads
from kubecore_fake import FakeRuntime


class ForgetfulRuntime(FakeRuntime):
    """Drops annotations and refuses to stop what is gone: two contract violations."""

    def list_containers(self):
        return [attrs_evolve(c) for c in super().list_containers()]

    def stop_container(self, container_id, timeout):
        self.container_status(container_id)
        super().stop_container(container_id, timeout)


def attrs_evolve(container):
    import attrs
    return attrs.evolve(container, annotations={})


class TestForgetful(RuntimeConformance):
    @pytest.fixture
    def clock(self):
        return ManualClock()

    @pytest.fixture
    def bundle(self, clock):
        runtime = ForgetfulRuntime(clock, images=["busybox:1.36"])
        return RuntimeBundle(runtime=runtime, puller=runtime)

    @pytest.fixture
    def workloads(self):
        return busybox_workloads("busybox:1.36")
'''


CARELESS_RUNTIME_TESTS = '''
import pytest
from kubecore.runtime import RuntimeBundle
from kubecore.testing import ManualClock
from kubecore.testing.conformance import RuntimeConformance, busybox_workloads
from kubecore_fake import FakeRuntime


class CarelessRuntime(FakeRuntime):
    """Ignores ``follow`` and ``since``, and goes on after ``close()``."""

    def logs(self, container_id, *, tail=None, follow=False, since=None, timestamps=False):
        return super().logs(container_id, tail=tail, timestamps=timestamps)

    def close(self):
        pass


class TestCareless(RuntimeConformance):
    @pytest.fixture
    def clock(self):
        return ManualClock()

    @pytest.fixture
    def bundle(self, clock):
        runtime = CarelessRuntime(clock, images=["busybox:1.36"])
        return RuntimeBundle(runtime=runtime, puller=runtime)

    @pytest.fixture
    def workloads(self):
        return busybox_workloads("busybox:1.36")
'''


def test_the_suite_catches_careless_logs_and_close(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_careless=CARELESS_RUNTIME_TESTS)
    result = pytester.runpytest_inprocess(
        "-q", "-p", "no:cacheprovider", "-k", "follow_blocks or logs_since or after_close"
    )
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        ["*logs(follow=True) ended while the container runs*", "*version after close()*"]
    )


def test_a_fresh_load_of_the_fake_says_it_cannot_adopt() -> None:
    assert kubecore.load_runtime("fake").adopts is False


def test_the_suite_says_why_it_skips_adoption(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_no_adoption=NO_REOPEN_TESTS)
    result = pytester.runpytest_inprocess("-q", "-rs", "-p", "no:cacheprovider", "-k", "adopts")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*the fake runtime cannot adopt (RuntimeBundle.adopts=False)*"])


NO_REOPEN_TESTS = """
import pytest
import kubecore
from kubecore.testing import ManualClock
from kubecore.testing.conformance import RuntimeConformance, busybox_workloads


class TestNoReopen(RuntimeConformance):
    @pytest.fixture
    def clock(self):
        return ManualClock()

    @pytest.fixture
    def bundle(self, clock):
        bundle = kubecore.load_runtime("fake", clock=clock, images=["busybox:1.36"])
        yield bundle
        bundle.runtime.close()

    @pytest.fixture
    def workloads(self):
        return busybox_workloads("busybox:1.36")
"""


def test_the_suite_catches_a_broken_runtime(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_forgetful=BROKEN_RUNTIME_TESTS)
    result = pytester.runpytest_inprocess(
        "-q", "-p", "no:cacheprovider", "-k", "lifecycle or missing_container or snapshot_agrees"
    )
    result.assert_outcomes(failed=3, passed=1)
    result.stdout.fnmatch_lines(["*container annotations*", "*ContainerNotFound*"])
