"""The agent's own v1 ``Node``: the one document both the node's Kubernetes API serves
(``nodes``, read-only: ``kubectl get nodes``, ``kubectl describe node``) and an etcd writer
publishes (``kubecore_etcd``), built from what the kubelet reports of itself."""

from __future__ import annotations

import platform
import socket
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kubecore._agent.admission.node_fit import machine_arch
from kubecore._api.errors import not_found
from kubecore._api.request import Exchange, Request, send_json
from kubecore._api.selectors import field_selector, label_selector
from kubecore._api.tables import NODE_COLUMNS, node_cells, table, wants_table
from kubecore._api.watch import serve_polled
from kubecore._contract.values import RuntimeVersion
from kubecore._kuberuntime.env import host_capacity
from kubecore._util.timefmt import rfc3339
from kubecore._version import __version__

OS_RELEASE = "/etc/os-release"
NODE_FIELDS = ("metadata.name", "spec.unschedulable")
"""What a node's ``fieldSelector`` can select by."""


class NodeConfig(Protocol):
    @property
    def node_name(self) -> str: ...
    @property
    def root_dir(self) -> str: ...
    @property
    def max_pods(self) -> int: ...
    @property
    def host_ip(self) -> str: ...
    def labels(self) -> dict[str, str]: ...


class NodeKubelet(Protocol):
    """What the Node is made of (``kubecore.Kubelet`` has all of it)."""

    @property
    def config(self) -> NodeConfig: ...

    def runtime_version(self) -> RuntimeVersion: ...

    def healthz(self) -> tuple[bool, str]: ...


def os_image(path: str = OS_RELEASE) -> str:
    """The host's ``PRETTY_NAME`` (``Debian GNU/Linux 13 (trixie)``), as the kubelet reports
    ``nodeInfo.osImage``; ``Unknown`` without an os-release file."""
    try:
        with open(path, encoding="utf-8") as file:
            for line in file:
                key, _, value = line.strip().partition("=")
                if key == "PRETTY_NAME":
                    return value.strip().strip('"') or "Unknown"
    except OSError:
        pass
    return "Unknown"


def _capacity(kubelet: NodeKubelet) -> dict[str, str]:
    host: Mapping[str, Any] = host_capacity(kubelet.config.root_dir)
    capacity = {"cpu": str(host["cpu"]), "pods": str(kubelet.config.max_pods)}
    memory = int(host.get("memory", 0))
    if memory:
        capacity["memory"] = f"{memory // 1024}Ki"
    return capacity


def _runtime(kubelet: NodeKubelet) -> str:
    try:
        version = kubelet.runtime_version()
    except Exception:  # a runtime that is down: the Ready condition says so
        return ""
    return f"{version.runtime_name}://{version.runtime_version}"


def node_document(
    kubelet: NodeKubelet,
    node: str | None = None,
    *,
    ready: bool | None = None,
    reason: str = "",
    created: str | None = None,
) -> dict[str, Any]:
    """The v1 Node of ``kubelet`` (named ``node``, else its ``node_name``): labels, addresses,
    capacity (allocatable the same), the Ready condition (``ready``/``reason``, else what
    ``kubelet.healthz()`` says) and nodeInfo. ``created`` is its ``creationTimestamp``
    (RFC 3339; the API passes the time the agent's API started), left out when None."""
    if ready is None:
        ready, reason = kubelet.healthz()
    addresses = [{"type": "Hostname", "address": socket.gethostname()}]
    if kubelet.config.host_ip:
        addresses.insert(0, {"type": "InternalIP", "address": kubelet.config.host_ip})
    capacity = _capacity(kubelet)
    metadata: dict[str, Any] = {
        "name": node or kubelet.config.node_name,
        "labels": kubelet.config.labels(),
    }
    if created is not None:
        metadata["creationTimestamp"] = created
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": {},
        "status": {
            "addresses": addresses,
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": reason or ("kubelet is ready" if ready else ""),
                }
            ],
            "nodeInfo": {
                "kubeletVersion": f"kubecore/{__version__}",
                "containerRuntimeVersion": _runtime(kubelet),
                "operatingSystem": "linux",
                "architecture": machine_arch(),
                "osImage": os_image(),
                "kernelVersion": platform.release(),
            },
        },
    }


class NodeReads:
    """``nodes`` (list, get), read-only: the one node, the agent's own. ``created`` is its
    ``creationTimestamp``: when the agent's API started (``now`` then)."""

    def __init__(self, kubelet: NodeKubelet, now: float, version: Any) -> None:
        self._kubelet = kubelet
        self.created = rfc3339(now)
        self._version = version
        """The resourceVersion of what is shown (the pods')."""

    def document(self) -> dict[str, Any]:
        node = node_document(self._kubelet, created=self.created)
        node["metadata"]["resourceVersion"] = self._version()
        return node

    def selected(self, request: Request) -> Callable[[], dict[str, Any] | None]:
        """What a list or watch with this request's selectors shows: the node, or None when
        its ``labelSelector`` or ``fieldSelector`` leaves it out."""
        labels = label_selector(request.param("labelSelector"))
        fields = field_selector(request.param("fieldSelector"), NODE_FIELDS)

        def look() -> dict[str, Any] | None:
            node = self.document()
            values = {"metadata.name": node["metadata"]["name"], "spec.unschedulable": "false"}
            return node if labels(node["metadata"]["labels"]) and fields(values) else None

        return look

    def list_nodes(self, exchange: Exchange, request: Request, now: float) -> None:
        node = self.selected(request)()
        items = [node] if node is not None else []
        version = self._version()
        if wants_table(request.accept):
            include = request.param("includeObject", "Metadata")
            rows = [(node_cells(n, now), n) for n in items]
            send_json(exchange, table(NODE_COLUMNS, rows, version, include))
            return
        send_json(
            exchange,
            {
                "kind": "NodeList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": version},
                "items": items,
            },
        )

    def watch_nodes(self, exchange: Exchange, request: Request, now: Callable[[], float]) -> None:
        """``?watch=true``: the one node (if selected), ADDED, then MODIFIED when it changes
        (polled)."""
        look = self.selected(request)
        if not wants_table(request.accept):
            serve_polled(exchange, request, look, lambda node: node)
            return
        include = request.param("includeObject", "Metadata")

        def render(node: dict[str, Any]) -> dict[str, Any]:
            version = node["metadata"]["resourceVersion"]
            return table(NODE_COLUMNS, [(node_cells(node, now()), node)], version, include)

        serve_polled(exchange, request, look, render)

    def get_node(self, exchange: Exchange, request: Request, name: str, now: float) -> None:
        if name != self._kubelet.config.node_name:
            raise not_found("nodes", name)
        node = self.document()
        if wants_table(request.accept):
            include = request.param("includeObject", "Metadata")
            version = node["metadata"]["resourceVersion"]
            send_json(
                exchange, table(NODE_COLUMNS, [(node_cells(node, now), node)], version, include)
            )
            return
        send_json(exchange, node)
