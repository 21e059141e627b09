"""A runtime that does nothing, for the tests of the runtime base class and its wrappers."""

from __future__ import annotations

from collections.abc import Iterator

from kubecore._contract.bases import RuntimeBase
from kubecore._contract.values import (
    ContainerConfig,
    ExecResult,
    RuntimeSnapshot,
    RuntimeVersion,
    SandboxConfig,
)


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
