"""Helpers for the Kubelet scenario tests: pods in a line, a node on the fake runtime."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.bases import RuntimeBase
from kubecore._contract.labels import POD_NAME_LABEL
from kubecore._contract.values import (
    ContainerConfig,
    ExecResult,
    RuntimeContainer,
    RuntimeSnapshot,
    RuntimeState,
    RuntimeVersion,
    SandboxConfig,
)
from kubecore._model.v1 import Container, ObjectMeta, Pod, PodSpec
from kubecore._util.clock import ManualClock
from kubecore_fake import FakeHealthChecker, FakeRuntime


def ctr(name: str = "app", image: str = "busybox:1.36", **kw: Any) -> Container:
    kw.setdefault("command", ("server",))  # an unknown program: runs until stopped
    return Container(name=name, image=image, **kw)


def make_pod(
    name: str = "web",
    *containers: Container,
    uid: str | None = None,
    namespace: str = "default",
    **spec: Any,
) -> Pod:
    return Pod(
        ObjectMeta(name=name, namespace=namespace, uid=uid or f"uid-{namespace}-{name}"),
        PodSpec(containers=containers or (ctr(),), **spec),
    )


@attrs.define
class Node:
    runtime: FakeRuntime
    clock: ManualClock
    kubelet: Kubelet
    checker: FakeHealthChecker
    tmp: Path

    def running(self, pod: str | None = None, name: str | None = None) -> list[RuntimeContainer]:
        return self.runtime.find_containers(name, pod_name=pod, state=RuntimeState.RUNNING)

    def all(self, pod: str | None = None, name: str | None = None) -> list[RuntimeContainer]:
        return self.runtime.find_containers(name, pod_name=pod)

    def running_names(self) -> list[tuple[str, str]]:
        return sorted(
            (c.labels.get(POD_NAME_LABEL, ""), c.name)
            for c in self.runtime.find_containers(state=RuntimeState.RUNNING)
        )

    def converge(self, max_syncs: int = 50, step: float = 1.0) -> None:
        assert self.kubelet.sync_until_converged(max_syncs=max_syncs, step=step)

    def run_until(
        self, predicate: Callable[[], bool], *, max_syncs: int = 60, step: float = 1.0
    ) -> None:
        """Sync, advancing the clock by ``step`` between syncs, until ``predicate()`` holds."""
        for _ in range(max_syncs):
            self.kubelet.sync()
            if predicate():
                return
            self.clock.advance(step)
        raise AssertionError(f"not reached within {max_syncs} syncs")

    def status(self, name: str = "web", namespace: str = "default") -> Any:
        pod = self.kubelet.get_pod(namespace, name)
        assert pod is not None
        return pod.status

    def reasons(self, name: str | None = None) -> list[str]:
        return self.kubelet._rooms.events.reasons(name=name)

    def restart_kubelet(self, **config: Any) -> Kubelet:
        """A fresh agent on the same runtime, root dir and clock (the old one is stopped, as a
        restarted process would be; the containers keep running)."""
        self.kubelet.close()
        self.kubelet = new_kubelet(self.runtime, self.clock, self.checker, self.tmp, **config)
        return self.kubelet


def new_kubelet(
    runtime: FakeRuntime,
    clock: ManualClock,
    checker: FakeHealthChecker,
    tmp: Path,
    **config: Any,
) -> Kubelet:
    config.setdefault("root_dir", str(tmp / "root"))
    config.setdefault("resolv_conf", str(tmp / "resolv.conf"))
    return Kubelet(
        runtime,
        runtime,
        config=KubeletConfig(**config),
        health_checker=checker,
        clock=clock,
    )


def make_node(
    tmp: Path, *, images: Iterable[str] | None = None, pulled: Iterable[str] = (), **config: Any
) -> Node:
    clock = ManualClock()
    runtime = FakeRuntime(clock=clock, images=images, pulled=pulled)
    checker = FakeHealthChecker(runtime)
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "resolv.conf").write_text("nameserver 192.0.2.53\nsearch example.org\n")
    kubelet = new_kubelet(runtime, clock, checker, tmp, **config)
    return Node(runtime, clock, kubelet, checker, tmp)


class NullRuntime(RuntimeBase):
    """The least a runtime writes, doing nothing (nothing runs): for tests where only the
    types, or one overridden method, matter."""

    def version(self) -> RuntimeVersion:
        return RuntimeVersion("null", "1")

    def run_sandbox(self, config: SandboxConfig) -> str:
        return "s1"

    def stop_sandbox(self, sandbox_id: str) -> None:
        pass

    def remove_sandbox(self, sandbox_id: str) -> None:
        pass

    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str:
        return "c1"

    def start_container(self, container_id: str) -> None:
        pass

    def stop_container(self, container_id: str, timeout: float) -> None:
        pass

    def remove_container(self, container_id: str) -> None:
        pass

    def snapshot(self) -> RuntimeSnapshot:
        return RuntimeSnapshot((), ())

    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult:
        return ExecResult(0)

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        return iter(())

    def close(self) -> None:
        pass
