"""The shipped runtime conformance suite, run against kubecore_fake in virtual time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import cast

import pytest

import kubecore
from kubecore import ManualClock, RuntimeBundle
from kubecore.testing.conformance import RuntimeConformance, Workloads, busybox_workloads
from kubecore_fake import Behaviour, FakeRuntime

IMAGE = "busybox:1.36"
REMOVABLE = "kubecore-test/removable:1"


class TestFakeRuntime(RuntimeConformance):
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


def test_the_base_class_is_not_collected_on_its_own() -> None:
    assert not RuntimeConformance.__name__.startswith("Test")


def test_waits_advance_a_manual_clock() -> None:
    from kubecore.testing.conformance import wait_for

    clock = ManualClock()
    start = clock.monotonic()
    assert wait_for(clock, lambda: clock.monotonic() - start >= 2 or None, "2 s", 10) is True
    with pytest.raises(AssertionError, match="timed out after 1"):
        wait_for(clock, lambda: None, "never", 1)
