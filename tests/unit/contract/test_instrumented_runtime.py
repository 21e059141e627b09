"""The agent's metrics wrapper of a runtime has exactly the optional capabilities of the runtime it
wraps (found with ``isinstance``), and counts their calls as it counts the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubecore._contract.capabilities import (
    OPTIONAL_CAPABILITIES,
    NodeClaim,
    NodeClaims,
    NodeHolder,
    NodeLease,
    ResourceUpdater,
)
from kubecore._observability.instrumented import _CAPABILITY_WRAPPERS, instrument_runtime
from kubecore._observability.metrics import Metrics
from kubecore._util.clock import ManualClock
from kubecore.runtime import ContainerResources, ContainerRuntime
from kubecore_fake import FakeRuntime
from tests.agent.support import make_node
from tests.unit.contract.support import NullRuntime


class Plain(NullRuntime):
    """A runtime with no optional capability (nothing runs: only the types matter here)."""


class Resizing(Plain):
    def __init__(self) -> None:
        self.resized: list[tuple[str, ContainerResources]] = []

    def update_container_resources(self, container_id: str, resources: ContainerResources) -> None:
        self.resized.append((container_id, resources))


class Claiming(Plain):
    def claim_node(
        self, node_name: str, holder: NodeHolder, ttl: float, *, replace: str = ""
    ) -> NodeClaim:
        return NodeClaim(True, NodeLease(node_name, holder, 0.0, ttl))

    def release_node(self, node_name: str, holder: NodeHolder) -> None:
        pass


class Both(Resizing, Claiming):
    pass


@pytest.mark.parametrize("kind", [Plain, Resizing, Claiming, Both, FakeRuntime])
def test_the_wrapper_has_exactly_the_capabilities_of_what_it_wraps(
    kind: type[ContainerRuntime],
) -> None:
    inner = kind()
    wrapper = instrument_runtime(inner, Metrics(), ManualClock())
    assert isinstance(wrapper, ContainerRuntime)
    has = {c.__name__ for c in OPTIONAL_CAPABILITIES if isinstance(inner, c)}
    assert {c.__name__ for c in OPTIONAL_CAPABILITIES if isinstance(wrapper, c)} == has
    assert has or kind is Plain  # each kind but Plain has one at least


def test_wrappers_of_runtimes_alike_share_one_class() -> None:
    metrics, clock = Metrics(), ManualClock()
    first = instrument_runtime(Both(), metrics, clock)
    assert type(first) is type(instrument_runtime(Both(), metrics, clock))
    assert type(first) is not type(instrument_runtime(Resizing(), metrics, clock))


def test_every_optional_capability_has_its_wrapper_part() -> None:
    assert set(_CAPABILITY_WRAPPERS) == set(OPTIONAL_CAPABILITIES)
    for capability, part in _CAPABILITY_WRAPPERS.items():
        assert issubclass(part, capability), part


def test_a_resize_through_the_wrapper_reaches_the_runtime_and_is_counted() -> None:
    inner, metrics = Resizing(), Metrics()
    wrapper = instrument_runtime(inner, metrics, ManualClock())
    assert isinstance(wrapper, ResourceUpdater)
    wrapper.update_container_resources("c1", ContainerResources(cpu_quota=25_000))
    assert inner.resized == [("c1", ContainerResources(cpu_quota=25_000))]
    # pkg/kubelet/kuberuntime/instrumented_services.go: UpdateContainerResources
    labels = {"operation_type": "update_container"}
    assert metrics.value("kubelet_runtime_operations_total", labels) == 1


def test_the_agents_node_lease_goes_through_the_wrapper(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    assert isinstance(node.kubelet._rooms.runtime, NodeClaims)
    node.kubelet._rooms.node_guard.acquire()
    try:
        assert node.kubelet._rooms.node_guard.held
        metrics = node.kubelet.metrics
        labels = {"operation_type": "claim_node"}
        assert metrics.value("kubelet_runtime_operations_total", labels) == 1
    finally:
        node.kubelet._rooms.node_guard.release()
    assert node.runtime.call_count("release_node") == 1
