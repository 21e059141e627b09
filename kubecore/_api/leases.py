"""The node Lease in ``coordination.k8s.io/v1``: ``kube-node-lease/<node>``, held by the node
and renewed as the kubelet renews it (``renewTime`` every 10 s while the agent runs,
``leaseDurationSeconds`` 40; ``kubecore._api.node_status.Heartbeat``), owned by the Node. Served
read-only: get, list (in its namespace or all), watch (polled); ``kubectl get lease -n
kube-node-lease`` and ``kubectl describe node`` read it."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, Protocol

from kubecore._api.errors import ApiError, not_found
from kubecore._api.node_status import LEASE_DURATION_SECONDS, Heartbeat
from kubecore._api.request import Exchange, Request, send_json
from kubecore._api.selectors import field_selector, label_selector
from kubecore._api.tables import column, table, wants_table
from kubecore._api.watch import serve_polled
from kubecore._model.node_record import NodeRecord
from kubecore._util.timefmt import age, rfc3339_micro

GROUP = "coordination.k8s.io"
VERSION = "v1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
NODE_LEASE_NAMESPACE = "kube-node-lease"
LEASE_FIELDS = ("metadata.name", "metadata.namespace")

LEASE_GROUP: dict[str, Any] = {
    "name": GROUP,
    "versions": [{"groupVersion": GROUP_VERSION, "version": VERSION}],
    "preferredVersion": {"groupVersion": GROUP_VERSION, "version": VERSION},
}
"""The group as ``/apis`` lists it."""
LEASE_RESOURCES: dict[str, Any] = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": GROUP_VERSION,
    "resources": [
        {
            "name": "leases",
            "singularName": "lease",
            "namespaced": True,
            "kind": "Lease",
            "verbs": ["get", "list", "watch"],
        }
    ],
}
LEASE_COLUMNS = (
    column("Name", "Name of the lease.", fmt="name"),
    column("Holder", "The holder of the lease (the node)."),
    column("Age", "Time since the lease was created."),
)


class LeaseHolder(Protocol):
    """The node the Lease is of (``kubecore._api.nodes.NodeReads``)."""

    @property
    def name(self) -> str: ...

    @property
    def record(self) -> NodeRecord: ...

    @property
    def heartbeat(self) -> Heartbeat: ...


def lease_document(node: LeaseHolder, now: float) -> dict[str, Any]:
    """The node's Lease as of ``now``."""
    record = node.record
    renewed = node.heartbeat.renew_time(now)
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "Lease",
        "metadata": {
            "name": node.name,
            "namespace": NODE_LEASE_NAMESPACE,
            "uid": str(uuid.uuid5(uuid.UUID(record.uid), "lease")),
            "resourceVersion": str(int(renewed * 1000)),
            "creationTimestamp": record.created,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": record.uid}
            ],
        },
        "spec": {
            "holderIdentity": node.name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": rfc3339_micro(renewed),
        },
    }


def _cells(lease: dict[str, Any], now: float) -> list[Any]:
    meta = lease["metadata"]
    return [meta["name"], lease["spec"]["holderIdentity"], age(meta["creationTimestamp"], now)]


class Leases:
    """``/apis/coordination.k8s.io``: discovery and the one node Lease; ``now()`` is the time
    each request reads it at (the agent's clock)."""

    def __init__(self, node: LeaseHolder) -> None:
        self._node = node

    @staticmethod
    def serves(segments: tuple[str, ...]) -> bool:
        """The path is under ``/apis/coordination.k8s.io``."""
        return segments[:2] == ("apis", GROUP)

    def handle(
        self,
        exchange: Exchange,
        request: Request,
        rest: tuple[str, ...],
        now: Callable[[], float],
    ) -> None:
        """``rest``: the path after ``/apis/coordination.k8s.io``."""
        if rest == ():
            send_json(exchange, {"kind": "APIGroup", "apiVersion": "v1", **LEASE_GROUP})
        elif rest == (VERSION,):
            send_json(exchange, LEASE_RESOURCES)
        elif rest == (VERSION, "leases"):
            self._list(exchange, request, None, now)
        elif len(rest) == 4 and rest[:2] == (VERSION, "namespaces") and rest[3] == "leases":
            self._list(exchange, request, rest[2], now)
        elif len(rest) == 5 and rest[:2] == (VERSION, "namespaces") and rest[3] == "leases":
            self._get(exchange, request, rest[2], rest[4], now())
        else:
            raise ApiError(
                HTTPStatus.NOT_FOUND,
                "NotFound",
                f"the server could not find /apis/{GROUP}/{'/'.join(rest)}",
            )

    def _look(
        self, request: Request, namespace: str | None, now: Callable[[], float]
    ) -> Callable[[], dict[str, Any] | None]:
        labels = label_selector(request.param("labelSelector"))
        fields = field_selector(request.param("fieldSelector"), LEASE_FIELDS)

        def look() -> dict[str, Any] | None:
            if namespace not in (None, NODE_LEASE_NAMESPACE):
                return None
            lease = lease_document(self._node, now())
            values = {"metadata.name": self._node.name, "metadata.namespace": NODE_LEASE_NAMESPACE}
            return lease if labels({}) and fields(values) else None

        return look

    def _list(
        self,
        exchange: Exchange,
        request: Request,
        namespace: str | None,
        now: Callable[[], float],
    ) -> None:
        look = self._look(request, namespace, now)
        include = request.param("includeObject", "Metadata")
        if request.flag("watch"):
            if wants_table(request.accept):
                serve_polled(exchange, request, look, lambda lease: _table([lease], include, now()))
            else:
                serve_polled(exchange, request, look, lambda lease: lease)
            return
        found = look()
        items = [found] if found is not None else []
        if wants_table(request.accept):
            send_json(exchange, _table(items, include, now()))
            return
        version = items[0]["metadata"]["resourceVersion"] if items else "0"
        send_json(
            exchange,
            {
                "kind": "LeaseList",
                "apiVersion": GROUP_VERSION,
                "metadata": {"resourceVersion": version},
                "items": items,
            },
        )

    def _get(
        self, exchange: Exchange, request: Request, namespace: str, name: str, now: float
    ) -> None:
        if namespace != NODE_LEASE_NAMESPACE or name != self._node.name:
            raise not_found(f"leases.{GROUP}", name)
        lease = lease_document(self._node, now)
        if wants_table(request.accept):
            include = request.param("includeObject", "Metadata")
            send_json(exchange, _table([lease], include, now))
            return
        send_json(exchange, lease)


def _table(items: list[dict[str, Any]], include: str, now: float) -> dict[str, Any]:
    version = items[0]["metadata"]["resourceVersion"] if items else "0"
    return table(LEASE_COLUMNS, [(_cells(i, now), i) for i in items], version, include)
