"""Events and namespaces over the node's Kubernetes API, read-only: the agent's events as its
``EventLog`` aggregates them (``kubectl get events [-w]``, ``kubectl describe``'s field
selector), listed, got and watched, and namespaces, every one of which exists on a node."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from http import HTTPStatus
from typing import Any

from kubecore._api.errors import ApiError, not_found
from kubecore._api.kubelet import ApiKubelet
from kubecore._api.pods import PodResource
from kubecore._api.request import JSON_TYPE, Exchange, Request, send_json
from kubecore._api.selectors import EVENT_FIELDS, event_fields, field_selector
from kubecore._api.tables import (
    EVENT_COLUMNS,
    NAMESPACE_COLUMNS,
    event_cells,
    namespace_cells,
    table,
    wants_table,
)
from kubecore._api.watch import (
    MAX_WATCH_SECONDS,
    WATCH_TICK,
    _client_gone,
    _line,
    initial_events_end,
)
from kubecore._contract.values import Event
from kubecore._observability.event_log import EventChange, EventLog, HistoryExpired
from kubecore._observability.events import aggregated_v1_event, v1_event
from kubecore._util.timefmt import age as time_age
from kubecore._util.timefmt import rfc3339


def event_object(event: Event, node_name: str) -> dict[str, Any]:
    """One occurrence of an event as a v1 ``Event`` (count 1; the etcd writer's document)."""
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
    """``events`` (list, get, watch) and ``namespaces`` (list, get). Events have the
    resourceVersions of the agent's ``EventLog``; namespaces the pods'."""

    def __init__(self, kubelet: ApiKubelet, pods: PodResource) -> None:
        self._kubelet = kubelet
        self._pods = pods
        self.started = rfc3339(kubelet.clock.now())
        """When the API started: every namespace's creation time."""

    @property
    def _log(self) -> EventLog:
        return self._kubelet.views.event_log

    def _events(self, namespace: str | None) -> tuple[list[dict[str, Any]], int]:
        node = self._pods.node_name
        entries, version = self._log.events(namespace=namespace)
        return [aggregated_v1_event(e, node=node) for e in entries], version

    def list_events(self, exchange: Exchange, request: Request, namespace: str | None) -> None:
        fields = field_selector(request.param("fieldSelector"), EVENT_FIELDS)
        if request.flag("watch"):
            self._watch(exchange, request, namespace, lambda e: fields(event_fields(e)))
            return
        listed, version = self._events(namespace)
        events = [e for e in listed if fields(event_fields(e))]
        if wants_table(request.accept):
            now = self._kubelet.clock.now()
            rows = [(event_cells(e, now), e) for e in events]
            include = request.param("includeObject", "Metadata")
            send_json(exchange, table(EVENT_COLUMNS, rows, str(version), include))
            return
        send_json(exchange, _list("EventList", str(version), events))

    def get_event(self, exchange: Exchange, namespace: str, name: str) -> None:
        for event in self._events(namespace)[0]:
            if event["metadata"]["name"] == name:
                send_json(exchange, event)
                return
        raise not_found("events", name)

    def _watch(
        self,
        exchange: Exchange,
        request: Request,
        namespace: str | None,
        selected: Callable[[dict[str, Any]], bool],
    ) -> None:
        """``?watch=true``: from now (the events there are ADDED first) or from a
        resourceVersion a list handed out, each new event ADDED and each repeat of one
        MODIFIED, until ``timeoutSeconds``, the client goes away or the server stops."""
        timeout = min(
            float(request.number("timeoutSeconds") or MAX_WATCH_SECONDS), MAX_WATCH_SECONDS
        )
        start = request.resource_version()
        initial_end = request.flag("sendInitialEvents")
        if initial_end:
            start = None
        node = self._pods.node_name
        include = request.param("includeObject", "Metadata")
        as_table = wants_table(request.accept)

        def render(event: dict[str, Any]) -> dict[str, Any]:
            if not as_table:
                return event
            cells = event_cells(event, self._kubelet.clock.now())
            version = event["metadata"]["resourceVersion"]
            return table(EVENT_COLUMNS, [(cells, event)], version, include)

        def shown(change: EventChange) -> tuple[str, dict[str, Any]] | None:
            ref = change.entry.event.involved_object
            event = aggregated_v1_event(change.entry, node=node)
            if (namespace is None or ref.namespace == namespace) and selected(event):
                return change.type, render(event)
            return None

        lines = _event_lines(exchange, self._log, start, timeout, shown, namespace, initial_end)
        with exchange.server.watch_slot(exchange.headers.get("Authorization") or ""):
            exchange._stream(b"", lines, JSON_TYPE)

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


Shown = Callable[[EventChange], tuple[str, dict[str, Any]] | None]
"""A change as one watch shows it (its type and rendered object), None when not selected."""


def _event_lines(
    exchange: Exchange,
    log: EventLog,
    start: int | None,
    timeout: float,
    shown: Shown,
    namespace: str | None,
    initial_end: bool,
) -> Iterator[bytes]:
    deadline = time.monotonic() + timeout
    if start is None:
        entries, version = log.events(namespace=namespace)
        for entry in entries:
            first = shown(EventChange(entry.version, "ADDED", entry))
            if first is not None:
                yield _line("ADDED", first[1])
        if initial_end:
            yield initial_events_end("Event", version)
    else:
        version = start
    while time.monotonic() < deadline and not _client_gone(exchange.connection):
        try:
            pending = log.changes_after(version)
        except HistoryExpired as gone:
            yield _line("ERROR", ApiError(HTTPStatus.GONE, "Expired", str(gone)).status())
            return
        for change in pending:
            version = change.version
            seen = shown(change)
            if seen is not None:
                yield _line(*seen)
        if not pending:
            yield b""  # lets the stream see a stopping server
            log.wait_past(version, WATCH_TICK)
