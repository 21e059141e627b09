"""The node harness of the agent scenario tests: ``Node`` (a ``FakeNode`` with the shorthands
those tests use), ``make_node``, and ``new_kubelet`` for another agent on a node's runtime."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.labels import POD_NAME_LABEL
from kubecore._contract.values import RuntimeContainer, RuntimeState
from kubecore._model.v1 import PodStatus
from kubecore._util.clock import ManualClock
from kubecore.testing import FakeNode
from kubecore.testing._node import PodRef
from kubecore_fake import FakeHealthChecker, FakeRuntime


class Node(FakeNode):
    """A ``FakeNode`` rooted in ``tmp / "root"``, given its pods through ``node.kubelet``
    (``set_pods``) rather than ``apply``; its ``run_until`` syncs once a step, where
    ``FakeNode.run_until`` syncs until each instant settles (the scenario tests were timed for
    one sync a step)."""

    def __init__(
        self,
        tmp: Path,
        *,
        images: Iterable[str] | None = None,
        pulled: Iterable[str] = (),
        **config: Any,
    ) -> None:
        self.tmp = tmp
        super().__init__(tmp / "root", config=KubeletConfig(**config), images=images, pulled=pulled)

    @property
    def checker(self) -> FakeHealthChecker:
        """``health_checker``, under the name the scenario tests use."""
        return self.health_checker

    def running(self, pod: str | None = None, name: str | None = None) -> list[RuntimeContainer]:
        """The running containers (of the pod named ``pod``, of one container ``name``), also
        of a pod no longer on the node."""
        return self.runtime.find_containers(name, pod_name=pod, state=RuntimeState.RUNNING)

    def all(self, pod: str | None = None, name: str | None = None) -> list[RuntimeContainer]:
        """Every container (of the pod named ``pod``, of one container ``name``)."""
        return self.runtime.find_containers(name, pod_name=pod)

    def running_names(self) -> list[tuple[str, str]]:
        """``(pod name, container name)`` of every running container, sorted."""
        return sorted(
            (c.labels.get(POD_NAME_LABEL, ""), c.name)
            for c in self.runtime.find_containers(state=RuntimeState.RUNNING)
        )

    def converge(self, max_syncs: int = 50, step: float = 1.0) -> None:
        """``Kubelet.sync_until_converged``, which must converge."""
        assert self.kubelet.sync_until_converged(max_syncs=max_syncs, step=step)

    def run_until(  # type: ignore[override]
        self, predicate: Callable[[], object], *, max_syncs: int = 60, step: float = 1.0
    ) -> None:
        """Sync, advancing the clock by ``step`` between syncs, until ``predicate()`` holds."""
        for _ in range(max_syncs):
            self.kubelet.sync()
            if predicate():
                return
            self.clock.advance(step)
        raise AssertionError(f"not reached within {max_syncs} syncs")

    def status(self, pod: PodRef = "web") -> PodStatus:
        """``FakeNode.status``, of the pod ``web`` unless told."""
        return super().status(pod)

    def reasons(self, name: str | None = None) -> list[str]:
        """The reasons of the agent's events (about the pod named ``name``), oldest first."""
        return [e.reason for e in self.kubelet.views.recent_events(name=name)]

    def restart_kubelet(self, **config: Any) -> Kubelet:
        """A fresh agent on the same runtime, root dir and clock, with ``KubeletConfig(**config)``
        (the old one is stopped, as a restarted process would be; the containers keep running)."""
        return self.restart_agent(KubeletConfig(**config))


def make_node(
    tmp: Path, *, images: Iterable[str] | None = None, pulled: Iterable[str] = (), **config: Any
) -> Node:
    """A ``Node`` in ``tmp``; ``config`` sets ``KubeletConfig`` fields."""
    return Node(tmp, images=images, pulled=pulled, **config)


def new_kubelet(
    runtime: FakeRuntime,
    clock: ManualClock,
    checker: FakeHealthChecker,
    tmp: Path,
    **config: Any,
) -> Kubelet:
    """An agent on ``runtime`` rooted in ``tmp / "root"``; ``config`` sets ``KubeletConfig``
    fields."""
    config.setdefault("root_dir", str(tmp / "root"))
    config.setdefault("resolv_conf", str(tmp / "resolv.conf"))
    return Kubelet(
        runtime,
        runtime,
        config=KubeletConfig(**config),
        health_checker=checker,
        clock=clock,
    )
