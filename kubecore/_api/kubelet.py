"""What the node's Kubernetes API reads from the agent (``kubecore.Kubelet`` has all of it)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any, Protocol

from kubecore._api.nodes import NodeKubelet
from kubecore._config.objects import ObjectStore
from kubecore._model.v1 import Pod
from kubecore._observability.event_log import EventLog
from kubecore._observability.logs import LogReader
from kubecore._streaming.remotecommand import StreamKubelet


class _Clock(Protocol):
    def now(self) -> float: ...


class ApiKubelet(LogReader, NodeKubelet, StreamKubelet, Protocol):
    """What the API reads from the agent (``kubecore.Kubelet`` has all of it)."""

    @property
    def event_log(self) -> EventLog: ...

    def resource_summary(self) -> dict[str, Any]: ...

    @property
    def clock(self) -> _Clock: ...

    @property
    def objects(self) -> ObjectStore: ...

    @property
    def root_dir(self) -> str: ...

    def terminate_pod(self, pod: Pod, grace_period: float) -> None: ...

    def pod_terminating(self, uid: str) -> bool: ...

    def pod_containers_stopped(self, uid: str) -> bool: ...

    def pods(self) -> list[Pod]: ...

    def update(self, update: Any) -> None: ...

    def port_forwarder(
        self, namespace: str, pod_name: str
    ) -> Callable[[int, float], socket.socket]: ...
