"""The ``Table`` form of what the API lists (``Accept: application/json;as=Table;v=v1;
g=meta.k8s.io``, as ``kubectl get`` asks): each kind's columns, as kubectl's own printers name
them, and the cells of one row."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubecore._model.v1 import KubeObject, Secret
from kubecore._util.tables import ready_and_restarts
from kubecore._util.timefmt import age as time_age


def column(
    name: str, description: str, priority: int = 0, fmt: str = "", of: str = "string"
) -> dict[str, Any]:
    """A ``TableColumnDefinition`` (``of``: its type)."""
    return {
        "name": name,
        "type": of,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


POD_COLUMNS = (
    column("Name", "Name of the pod.", fmt="name"),
    column("Ready", "The number of containers ready and of all containers."),
    column("Status", "The aggregate status of the containers in this pod."),
    column("Restarts", "The number of times the containers in this pod have been restarted."),
    column("Age", "Time since the agent first saw the pod."),
    column("IP", "The pod's IP address.", priority=1),
    column("Node", "The node the pod runs on.", priority=1),
    column("Nominated Node", "Always <none>: there is no scheduler.", priority=1),
    column("Readiness Gates", "Always <none>: readiness gates are not kept.", priority=1),
)
EVENT_COLUMNS = (
    column("Last Seen", "When the event was last seen."),
    column("Type", "Normal or Warning."),
    column("Reason", "Why the event happened."),
    column("Object", "The object the event is about."),
    column("Subobject", "The part of the object (a container).", priority=1),
    column("Source", "The component that reported it.", priority=1),
    column("Message", "What happened."),
    column("First Seen", "When the event was first seen.", priority=1),
    column("Count", "How often it happened.", priority=1),
    column("Name", "The event's name.", priority=1, fmt="name"),
)
NAMESPACE_COLUMNS = (
    column("Name", "Name of the namespace.", fmt="name"),
    column("Status", "Active: every namespace exists on a node."),
    column("Age", "Time since the agent first saw a pod in it."),
)
CONFIG_MAP_COLUMNS = (
    column("Name", "Name of the object", fmt="name"),
    column("Data", "How many keys the object holds", of="integer"),
    column("Age", "Time since the object was created"),
)
SECRET_COLUMNS = (
    column("Name", "Name of the object", fmt="name"),
    column("Type", "The type of the secret"),
    column("Data", "How many keys the object holds", of="integer"),
    column("Age", "Time since the object was created"),
)
NODE_COLUMNS = (
    column("Name", "Name of the node.", fmt="name"),
    column("Status", "Ready or NotReady, and SchedulingDisabled when cordoned."),
    column("Roles", "The node-role.kubernetes.io labels."),
    column("Age", "Time since the node was first served from its root directory."),
    column("Version", "The kubelet's version."),
    column("Internal-IP", "The node's InternalIP address.", priority=1),
    column("External-IP", "The node's ExternalIP address.", priority=1),
    column("OS-Image", "The host's operating system.", priority=1),
    column("Kernel-Version", "The host's kernel.", priority=1),
    column("Container-Runtime", "The runtime's name and version.", priority=1),
)
ROLE_PREFIX = "node-role.kubernetes.io/"


def node_cells(node: dict[str, Any], now: float) -> list[Any]:
    """A Node's row, as kubectl's printer makes it."""
    status = node.get("status") or {}
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    state = "Ready" if ready and ready[0].get("status") == "True" else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = node["metadata"].get("labels") or {}
    roles = sorted(k.removeprefix(ROLE_PREFIX) for k in labels if k.startswith(ROLE_PREFIX))
    addresses = {a["type"]: a["address"] for a in status.get("addresses") or []}
    info = status.get("nodeInfo") or {}
    return [
        node["metadata"]["name"],
        state,
        ",".join(r for r in roles if r) or "<none>",
        time_age(node["metadata"].get("creationTimestamp") or "", now),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP", "<none>"),
        addresses.get("ExternalIP", "<none>"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def pod_cells(pod: dict[str, Any], now: float, node_name: str) -> list[Any]:
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    ready, restarts = ready_and_restarts(pod)
    created = pod["metadata"].get("creationTimestamp")
    age = time_age(created, now)
    return [
        pod["metadata"]["name"],
        ready,
        "Terminating" if pod["metadata"].get("deletionTimestamp") else pod.get("_statusText", ""),
        str(restarts),
        age,
        status.get("podIP") or "<none>",
        spec.get("nodeName") or node_name or "<none>",
        "<none>",
        "<none>",
    ]


def event_cells(event: dict[str, Any], now: float) -> list[Any]:
    ref = event["involvedObject"]
    seen = time_age(event["lastTimestamp"], now)
    first = time_age(event["firstTimestamp"], now)
    source = event["source"]
    return [
        seen,
        event["type"],
        event["reason"],
        f"{ref['kind'].lower()}/{ref['name']}",
        ref.get("fieldPath", ""),
        ", ".join(v for v in (source.get("component"), source.get("host")) if v),
        event["message"],
        first,
        event["count"],
        event["metadata"]["name"],
    ]


def namespace_cells(namespace: dict[str, Any], age: str) -> list[Any]:
    return [namespace["metadata"]["name"], "Active", age]


def object_cells(obj: KubeObject, created: str, now: float) -> list[Any]:
    """A ConfigMap's or a Secret's row (``created``: its creation time as the API shows it)."""
    age = time_age(created, now)
    if isinstance(obj, Secret):
        return [obj.metadata.name, obj.type, len(obj.data), age]
    return [obj.metadata.name, len(obj.data) + len(obj.binary_data), age]


def table(
    columns: Iterable[dict[str, Any]],
    rows: Iterable[tuple[list[Any], dict[str, Any]]],
    resource_version: str,
    include_object: str,
) -> dict[str, Any]:
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": list(columns),
        "rows": [{"cells": cells, **_row_object(obj, include_object)} for cells, obj in rows],
    }


def _row_object(obj: dict[str, Any], include_object: str) -> dict[str, Any]:
    if include_object == "None":
        return {}
    if include_object == "Object":
        return {"object": obj}
    return {
        "object": {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"],
        }
    }


def wants_table(accept: str) -> bool:
    """Does the client ask for the ``Table`` form first (as ``kubectl get`` does)?"""
    for part in accept.split(","):
        params = {
            key.strip(): value.strip()
            for key, _, value in (p.partition("=") for p in part.split(";")[1:])
        }
        if params.get("as") == "Table" and params.get("g", "meta.k8s.io") == "meta.k8s.io":
            return True
        if part.split(";")[0].strip() in ("application/json", "*/*", ""):
            return False
    return False
