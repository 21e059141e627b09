"""What the node's Kubernetes API reads from the agent (``kubecore.Kubelet`` has all of it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from kubecore._config.objects import ObjectStore
from kubecore._contract.values import Event
from kubecore._model.v1 import Pod


class _Clock(Protocol):
    def now(self) -> float: ...


class _Config(Protocol):
    @property
    def node_name(self) -> str: ...


class ApiKubelet(Protocol):
    """What the API reads from the agent (``kubecore.Kubelet`` has all of it)."""

    def recent_events(self, *, namespace: str | None = None) -> list[Event]: ...

    @property
    def clock(self) -> _Clock: ...

    @property
    def config(self) -> _Config: ...

    @property
    def objects(self) -> ObjectStore: ...

    @property
    def root_dir(self) -> str: ...

    def pods(self) -> list[Pod]: ...

    def update(self, update: Any) -> None: ...

    def container_logs(
        self,
        namespace: str,
        pod_name: str,
        container: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        timestamps: bool = False,
        previous: bool = False,
        since_seconds: int | None = None,
        since_time: float | None = None,
        limit_bytes: int | None = None,
    ) -> Iterator[bytes]: ...
