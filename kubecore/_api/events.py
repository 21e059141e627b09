"""Events and namespaces over the node's Kubernetes API, read-only: events from the agent's
in-memory recorder (``kubectl get events``, ``kubectl describe``'s field selector), and
namespaces, every one of which exists on a node."""

from __future__ import annotations

import hashlib
from typing import Any

from kubecore._api.errors import bad_request, not_found
from kubecore._api.kubelet import ApiKubelet
from kubecore._api.pods import PodResource
from kubecore._api.request import Exchange, Request, send_json
from kubecore._api.selectors import EVENT_FIELDS, event_fields, field_selector
from kubecore._api.tables import (
    EVENT_COLUMNS,
    NAMESPACE_COLUMNS,
    event_cells,
    namespace_cells,
    table,
    wants_table,
)
from kubecore._contract.values import Event
from kubecore._observability.events import v1_event
from kubecore._util.timefmt import age as time_age
from kubecore._util.timefmt import rfc3339


def event_object(event: Event, node_name: str) -> dict[str, Any]:
    """A recorded event as a v1 ``Event``."""
    ref = event.involved_object
    when = rfc3339(event.timestamp)
    digest = hashlib.sha256(
        "\0".join(
            (
                ref.namespace,
                ref.name,
                ref.field_path,
                event.reason,
                event.message,
                repr(event.timestamp),
            )
        ).encode()
    ).hexdigest()[:16]
    return v1_event(event, node=node_name, name=f"{ref.name}.{digest}", stamp=when)


def namespace_object(name: str, created: str) -> dict[str, Any]:
    return {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _list(kind: str, version: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": kind,
        "apiVersion": "v1",
        "metadata": {"resourceVersion": version},
        "items": items,
    }


class EventsAndNamespaces:
    """``events`` (list, get) and ``namespaces`` (list, get); their resourceVersion is the
    pods'."""

    def __init__(self, kubelet: ApiKubelet, pods: PodResource) -> None:
        self._kubelet = kubelet
        self._pods = pods
        self.started = rfc3339(kubelet.clock.now())
        """When the API started: every namespace's creation time."""

    def _events(self, namespace: str | None) -> list[dict[str, Any]]:
        node = self._pods.node_name
        return [event_object(e, node) for e in self._kubelet.recent_events(namespace=namespace)]

    def list_events(self, exchange: Exchange, request: Request, namespace: str | None) -> None:
        if request.flag("watch"):
            raise bad_request("watching events is not supported; list them instead")
        fields = field_selector(request.param("fieldSelector"), EVENT_FIELDS)
        events = [e for e in self._events(namespace) if fields(event_fields(e))]
        version = self._pods.version()
        if wants_table(request.accept):
            now = self._kubelet.clock.now()
            rows = [(event_cells(e, now), e) for e in events]
            include = request.param("includeObject", "Metadata")
            send_json(exchange, table(EVENT_COLUMNS, rows, version, include))
            return
        send_json(exchange, _list("EventList", version, events))

    def get_event(self, exchange: Exchange, namespace: str, name: str) -> None:
        for event in self._events(namespace):
            if event["metadata"]["name"] == name:
                send_json(exchange, event)
                return
        raise not_found("events", name)

    def get_namespace(self, exchange: Exchange, name: str) -> None:
        send_json(exchange, namespace_object(name, self.started))

    def list_namespaces(self, exchange: Exchange, request: Request) -> None:
        in_use = {pod["metadata"]["namespace"] for pod in self._pods.current_pods()}
        items = [namespace_object(name, self.started) for name in sorted({"default"} | in_use)]
        version = self._pods.version()
        if wants_table(request.accept):
            age = time_age(self.started, self._kubelet.clock.now())
            rows = [(namespace_cells(ns, age), ns) for ns in items]
            include = request.param("includeObject", "Metadata")
            send_json(exchange, table(NAMESPACE_COLUMNS, rows, version, include))
            return
        send_json(exchange, _list("NamespaceList", version, items))
