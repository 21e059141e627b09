"""The one path every kind the API serves goes through, as the API server's generic registry:
list (with selectors, as a ``Table`` when asked, or as a watch), get, create, replace, patch
(JSON, merge and strategic merge patches, server-side apply with ``managedFields``:
``kubecore._api.managed_fields``), delete and deletecollection (selected as a list is), over a
kind's ``Resource``. Every write
takes the store's lock, is refused while the store cannot be read, and is on disk before it is
applied and answered (``kubecore._api.storage``)."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any, Generic

from kubecore._api.auth import Gate
from kubecore._api.errors import already_exists, bad_request, not_allowed
from kubecore._api.managed_fields import (
    UPDATE,
    Entries,
    applied,
    created,
    entries_from,
    updated,
)
from kubecore._api.patch import APPLY_PATCH, merge_for
from kubecore._api.request import READS, Exchange, Request, content_type, read_body, send_json
from kubecore._api.resources import Item, Resource, View
from kubecore._api.selectors import field_selector, label_selector
from kubecore._api.storage import Storage
from kubecore._api.tables import table, wants_table

Make = Callable[[dict[str, Any], Entries], tuple[dict[str, Any], Entries]]
"""The object to write, cleaned, and its ``managedFields`` entries after the write, from the API's
current object (``{}`` when there is none) and its entries."""


class Registry(Generic[View, Item]):
    """The ``Resource``'s collection and objects on the URL; ``handle`` answers one request."""

    def __init__(
        self,
        resource: Resource[View, Item],
        storage: Storage,
        gate: Gate,
        now: Callable[[], float],
    ) -> None:
        self.resource = resource
        self._storage = storage
        self._gate = gate
        self._now = now

    def handle(
        self, exchange: Exchange, request: Request, namespace: str | None, rest: tuple[str, ...]
    ) -> None:
        """Answer a request for the collection (``rest`` empty, ``namespace`` None: of all
        namespaces), one object (``rest``: its name) or its subresource."""
        if namespace is not None and len(rest) > 1:
            self._subresource(exchange, request, namespace, rest)
            return
        if self.resource.reads_need_token and request.method in READS:
            self._gate.require_token(
                exchange.headers.get("Authorization") or "",
                f"{self.resource.name} are read only with the bearer token (over TLS), even on "
                "loopback",
            )
        if namespace is None or not rest:
            self._collection(exchange, request, namespace)
        else:
            self._item(exchange, request, namespace, rest[0])

    def _subresource(
        self, exchange: Exchange, request: Request, namespace: str, rest: tuple[str, ...]
    ) -> None:
        if rest[1:] == ("status",) and self.resource.status_subresource and request.method in READS:
            self._get(exchange, request, namespace, rest[0])
        else:
            self.resource.subresource(exchange, request, namespace, rest)

    def _collection(self, exchange: Exchange, request: Request, namespace: str | None) -> None:
        method, resource = request.method, self.resource
        if method in READS and (resource.watchable or not request.flag("watch")):
            self._list(exchange, request, namespace)
        elif method == "POST" and namespace is not None:
            self._create(exchange, request, namespace)
        elif method == "DELETE" and namespace is not None:
            self._delete_collection(exchange, request, namespace)
        else:
            watch = " with watch" if not resource.watchable and request.flag("watch") else ""
            raise not_allowed(f"{method}{watch} is not supported on {resource.name}")

    def _item(self, exchange: Exchange, request: Request, namespace: str, name: str) -> None:
        method = request.method
        if method in READS:
            self._get(exchange, request, namespace, name)
        elif method == "PUT":
            self._replace(exchange, request, namespace, name)
        elif method == "PATCH":
            self._patch(exchange, request, namespace, name)
        elif method == "DELETE":
            self._delete(exchange, request, namespace, name)
        else:
            raise not_allowed(f"{method} is not supported on {self.resource.name}/{name}")

    # --- reads

    def _filter(self, request: Request, namespace: str | None) -> Callable[[View], bool]:
        labels = label_selector(request.param("labelSelector"))
        fields = field_selector(request.param("fieldSelector"), self.resource.fields)

        def match(view: View) -> bool:
            where, its_labels, its_fields = self.resource.selected(view)
            return (
                (namespace is None or where == namespace)
                and labels(its_labels)
                and fields(its_fields)
            )

        return match

    def _list(self, exchange: Exchange, request: Request, namespace: str | None) -> None:
        resource = self.resource
        if resource.watchable and request.flag("watch"):
            match = self._filter(request, namespace)
            resource.watch(exchange, request, match, self._watch_render(request))
            return
        selects = self._filter(request, namespace)
        listed, version = resource.listed(namespace)
        views = [view for view in listed if selects(view)]
        if wants_table(request.accept):
            send_json(exchange, self.table(views, request, version))
            return
        send_json(
            exchange,
            {
                "kind": f"{resource.kind}List",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": version},
                "items": [self._shown(resource.shown(view)) for view in views],
            },
        )

    def _get(self, exchange: Exchange, request: Request, namespace: str, name: str) -> None:
        view = self.resource.find(namespace, name)
        if wants_table(request.accept):
            send_json(exchange, self.table([view], request, self.resource.version()))
        else:
            send_json(exchange, self._shown(self.resource.shown(view)))

    def table(self, views: list[View], request: Request, version: str) -> dict[str, Any]:
        """The ``Table`` of ``views`` (as ``includeObject`` asks)."""
        now = self._now()
        rows = [
            (self.resource.cells(view, now), self._shown(self.resource.shown(view)))
            for view in views
        ]
        include = request.param("includeObject", "Metadata")
        return table(self.resource.columns, rows, version, include)

    def _watch_render(self, request: Request) -> Callable[[Any], dict[str, Any]]:
        if not wants_table(request.accept):
            return lambda view: self._shown(self.resource.shown(view))
        return lambda view: self.table([view], request, view["metadata"]["resourceVersion"])

    # --- writes

    def _manager(self, exchange: Exchange, request: Request) -> str:
        """Who writes (``managedFields``): the ``fieldManager`` asked for, else the client's
        User-Agent up to its first ``/`` (``kubectl``), as the API server names it."""
        agent = (exchange.headers.get("User-Agent") or "").split("/", 1)[0].strip()
        return request.param("fieldManager") or agent or "unknown"

    def _create(self, exchange: Exchange, request: Request, namespace: str) -> None:
        resource = self.resource
        data = resource.clean(resource.read_body(exchange), namespace)
        entries = created(self._manager(exchange, request), UPDATE, data, self._now())
        item = resource.decode(data, None)
        with self._storage.lock:
            self._storage.check_writable()
            name = item.metadata.name
            if resource.exists(namespace, name):
                raise already_exists(resource.name, name)
            stored = self._store(item, None, request.dry_run(), entries)
        send_json(exchange, stored, HTTPStatus.CREATED)

    def _replace(self, exchange: Exchange, request: Request, namespace: str, name: str) -> None:
        data = self.resource.clean(self.resource.read_body(exchange), namespace)
        self._write(
            exchange, request, namespace, name, self._updated(exchange, request, lambda _: data)
        )

    def _updated(
        self, exchange: Exchange, request: Request, make: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> Make:
        """An Update's ``Make``: ``make``'s object, the fields it changed its manager's."""
        manager = self._manager(exchange, request)

        def update(current: dict[str, Any], entries: Entries) -> tuple[dict[str, Any], Entries]:
            data = make(current)
            return data, updated(entries, manager, current, data, self._now())

        return update

    def _patch(self, exchange: Exchange, request: Request, namespace: str, name: str) -> None:
        kind = content_type(exchange)
        patch = read_body(exchange)
        clean = self.resource.clean
        if kind == APPLY_PATCH:
            config = clean(patch, namespace)
            manager = self._manager(exchange, request)
            force = request.flag("force")

            def apply(current: dict[str, Any], entries: Entries) -> tuple[dict[str, Any], Entries]:
                merged, after = applied(
                    entries, manager, current, config, force=force, now=self._now()
                )
                return clean(merged, namespace), after

            self._write(exchange, request, namespace, name, apply, upsert=True)
            return
        merge = merge_for(kind, self.resource.merge_strategic)
        manager = self._manager(exchange, request)

        def patched(current: dict[str, Any], entries: Entries) -> tuple[dict[str, Any], Entries]:
            # The patch applies to the object as served: a JSON patch may test its
            # resourceVersion, and set its managedFields.
            served = self._as_served(current, entries, namespace, name)
            result = merge(served, patch)
            data = clean(result, namespace)
            given = (result.get("metadata") or {}).get("managedFields", [])
            if given != served["metadata"].get("managedFields", []):
                # The client rewrote who owns what (kubectl moving client-side apply's fields to
                # server-side apply's): taken as given, as the API server does.
                return data, entries_from(given)
            return data, updated(entries, manager, current, data, self._now())

        self._write(exchange, request, namespace, name, patched)

    def _as_served(
        self, current: dict[str, Any], entries: Entries, namespace: str, name: str
    ) -> dict[str, Any]:
        shown = self.resource.shown(self.resource.find(namespace, name))
        meta = {**current.get("metadata", {})}
        meta["resourceVersion"] = shown["metadata"].get("resourceVersion", "")
        if entries:
            meta["managedFields"] = [entry.to_dict() for entry in entries]
        return {**current, "metadata": meta}

    def _write(
        self,
        exchange: Exchange,
        request: Request,
        namespace: str,
        name: str,
        make: Make,
        *,
        upsert: bool = False,
    ) -> None:
        resource = self.resource
        with self._storage.lock:
            self._storage.check_writable()
            owned = resource.owned(namespace, name)
            # Server-side apply may create; nothing may overwrite another source's object.
            if owned is None and (not upsert or resource.exists(namespace, name)):
                resource.refuse_foreign(namespace, name)
            entries = self._storage.managed.get(resource.kind, namespace, name) if owned else ()
            data, entries = make(resource.current(owned) if owned is not None else {}, entries)
            if (data.get("metadata") or {}).get("name", name) != name:
                raise bad_request("the name of the object does not match the name on the URL")
            data["metadata"]["name"] = name
            item = resource.decode(data, owned)
            stored = self._store(item, owned, request.dry_run(), entries)
        send_json(exchange, stored, HTTPStatus.OK if owned is not None else HTTPStatus.CREATED)

    def _store(
        self, item: Item, owned: Item | None, dry_run: bool, entries: Entries
    ) -> dict[str, Any]:
        stamped = self.resource.stamp(item, owned)
        if not dry_run:
            self._storage.save(stamped, entries)
            self.resource.apply(stamped, owned)
            return self._shown(self.resource.written(stamped, dry_run))
        shown = self.resource.written(stamped, dry_run)
        if not entries:
            return shown
        managed = [entry.to_dict() for entry in entries]
        return {**shown, "metadata": {**shown["metadata"], "managedFields": managed}}

    def _shown(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._storage.managed.shown(body)

    def _delete(self, exchange: Exchange, request: Request, namespace: str, name: str) -> None:
        resource = self.resource
        options = resource.delete_options(exchange, request)
        dry_run = request.dry_run()
        with self._storage.lock:
            self._storage.check_writable()
            answer = resource.delete(self._storage, namespace, name, options, dry_run)
        send_json(exchange, self._shown(answer))

    def _delete_collection(self, exchange: Exchange, request: Request, namespace: str) -> None:
        """``deletecollection``: a delete of each of the API's objects the selectors select (of
        another source's, none: they are not the API's to delete), with the one request's
        options (a pod's grace period); the answer lists them as each delete answers."""
        resource = self.resource
        options = resource.delete_options(exchange, request)
        dry_run = request.dry_run()
        selects = self._filter(request, namespace)
        with self._storage.lock:
            self._storage.check_writable()
            names = [
                resource.shown(view)["metadata"]["name"]
                for view in resource.listed(namespace)[0]
                if selects(view)
            ]
            deleted = [
                self._shown(resource.delete(self._storage, namespace, name, options, dry_run))
                for name in names
                if resource.deletable(namespace, name)
            ]
        send_json(
            exchange,
            {
                "kind": f"{resource.kind}List",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": resource.version()},
                "items": deleted,
            },
        )
