"""What the node's Kubernetes API reads from the agent (``kubecore.Kubelet`` has all of it)."""

from __future__ import annotations

from typing import Any, Protocol

from kubecore._api.nodes import NodeKubelet, NodeViews
from kubecore._config.objects import ObjectStore
from kubecore._model.v1 import Pod
from kubecore._observability.event_log import EventLog
from kubecore._observability.logs import LogReader
from kubecore._streaming.portforward_http import PortForwarding
from kubecore._streaming.remotecommand import SessionOpener


class _Clock(Protocol):
    def now(self) -> float: ...


class ApiStreams(LogReader, SessionOpener, PortForwarding, Protocol):
    """The streams the API opens: logs, exec, attach, port-forward (``kubecore.Kubelet.streams``
    has all of them)."""


class ApiViews(NodeViews, Protocol):
    """What the API reads of the node (``kubecore.Kubelet.views`` has all of it)."""

    @property
    def event_log(self) -> EventLog: ...

    def resource_summary(self) -> dict[str, Any]: ...

    @property
    def objects(self) -> ObjectStore: ...

    def pod_terminating(self, uid: str) -> bool: ...

    def pod_containers_stopped(self, uid: str) -> bool: ...


class ApiKubelet(NodeKubelet, Protocol):
    """What the API reads from the agent (``kubecore.Kubelet`` has all of it)."""

    @property
    def streams(self) -> ApiStreams: ...

    @property
    def views(self) -> ApiViews: ...

    @property
    def clock(self) -> _Clock: ...

    @property
    def root_dir(self) -> str: ...

    def terminate_pod(self, pod: Pod, grace_period: float) -> None: ...

    def pods(self) -> list[Pod]: ...

    def update(self, update: Any) -> None: ...
