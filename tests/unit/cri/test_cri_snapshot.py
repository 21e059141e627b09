"""``CriRuntime.snapshot`` over a stub runtime service: what it reads, and that a steady state
costs two list calls (each object's status is asked once per state it is listed in)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubecore.runtime import MANAGED_LABEL, RuntimeState, SandboxState
from kubecore_cri._client import CriConnection
from kubecore_cri._pb import api_pb2 as pb
from kubecore_cri._runtime import CriRuntime

MANAGED = {MANAGED_LABEL: "true"}


class RuntimeService:
    """Answers the list and status calls from ``sandboxes`` and ``containers``; counts calls."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.state = pb.CONTAINER_RUNNING
        self.filters: list[Any] = []

    def ListPodSandbox(self, request: Any, timeout: float | None = None) -> Any:
        self.calls["ListPodSandbox"] += 1
        self.filters.append(dict(request.filter.label_selector))
        item = pb.PodSandbox(
            id="s1",
            metadata=pb.PodSandboxMetadata(name="web", namespace="shop", uid="u1"),
            state=pb.SANDBOX_READY,
            labels=MANAGED,
        )
        return pb.ListPodSandboxResponse(items=[item])

    def PodSandboxStatus(self, request: Any, timeout: float | None = None) -> Any:
        self.calls["PodSandboxStatus"] += 1
        status = pb.PodSandboxStatus(
            id=request.pod_sandbox_id,
            state=pb.SANDBOX_READY,
            network=pb.PodSandboxNetworkStatus(ip="10.1.0.7"),
            labels=MANAGED,
        )
        return pb.PodSandboxStatusResponse(status=status)

    def ListContainers(self, request: Any, timeout: float | None = None) -> Any:
        self.calls["ListContainers"] += 1
        self.filters.append(dict(request.filter.label_selector))
        item = pb.Container(id="c1", pod_sandbox_id="s1", state=self.state, labels=MANAGED)
        return pb.ListContainersResponse(containers=[item])

    def ContainerStatus(self, request: Any, timeout: float | None = None) -> Any:
        self.calls["ContainerStatus"] += 1
        status = pb.ContainerStatus(
            id=request.container_id,
            metadata=pb.ContainerMetadata(name="app"),
            state=self.state,
            started_at=1_000_000_000,
            finished_at=2_000_000_000 if self.state == pb.CONTAINER_EXITED else 0,
            exit_code=1 if self.state == pb.CONTAINER_EXITED else 0,
            labels=MANAGED,
        )
        return pb.ContainerStatusResponse(status=status)


def test_a_steady_snapshot_costs_two_calls_and_a_change_one_status() -> None:
    service = RuntimeService()
    runtime = CriRuntime(CriConnection(stubs={"runtime": service}))
    first = runtime.snapshot()
    (sandbox,) = first.sandboxes
    assert sandbox.state is SandboxState.READY and sandbox.ip == "10.1.0.7"
    (container,) = first.containers
    assert container.state is RuntimeState.RUNNING and container.sandbox_id == "s1"
    assert all(f == MANAGED for f in service.filters)  # only kubecore's objects are listed

    service.calls.clear()
    runtime.snapshot()
    assert service.calls == Counter({"ListPodSandbox": 1, "ListContainers": 1})

    service.state = pb.CONTAINER_EXITED
    service.calls.clear()
    (exited,) = runtime.snapshot().containers
    assert service.calls["ContainerStatus"] == 1
    assert (exited.state, exited.exit_code, exited.reason) == (RuntimeState.EXITED, 1, "Error")


def test_a_sandbox_status_asked_by_the_agent_is_not_asked_again_by_the_next_snapshot() -> None:
    service = RuntimeService()
    runtime = CriRuntime(CriConnection(stubs={"runtime": service}))
    assert runtime.sandbox_status("s1").ip == "10.1.0.7"
    assert service.calls["PodSandboxStatus"] == 1
    (sandbox,) = runtime.snapshot().sandboxes
    assert sandbox.ip == "10.1.0.7"
    assert service.calls["PodSandboxStatus"] == 1
