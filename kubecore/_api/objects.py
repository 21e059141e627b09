"""ConfigMaps and Secrets over the node's Kubernetes API: the ``Resource`` of the generic
registry (``kubecore._api.registry``) for ``configmaps`` and ``secrets``, so that ``kubectl
create``, ``apply`` (client-side and server-side), ``replace``, ``edit``, ``get`` and ``delete``
work on them.

Objects written over the API belong to the API's source (its ``StaticSource``); those of other
sources (manifest files, a URL, etcd) are read-only here (403), as pods are. Each gets a uid and
its creation time when it is created, kept by every later write, and each change is in the API's
store (``kubecore._api.storage``) before it is applied. Secrets are read only with the bearer
token, even on loopback: their values are never served to an anonymous reader. Each kind has its
change log (``kubecore._api.watch.ChangeLog``): its objects' resourceVersions, and its watch.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any, NoReturn

import attrs

from kubecore._api.errors import ApiError, bad_request, forbidden, not_found
from kubecore._api.protobuf import PROTOBUF_TYPE, object_from_protobuf
from kubecore._api.request import (
    SERVER_FIELDS,
    Exchange,
    Request,
    body_metadata,
    content_type,
    in_namespace,
    read_body,
)
from kubecore._api.resources import Resource
from kubecore._api.selectors import CONFIG_MAP_FIELDS, SECRET_FIELDS, object_fields
from kubecore._api.storage import Storage
from kubecore._api.tables import CONFIG_MAP_COLUMNS, SECRET_COLUMNS, object_cells
from kubecore._api.watch import ChangeLog, Render, public, serve_watch
from kubecore._apimachinery.rules import error_for
from kubecore._config.objects import ObjectKey, ObjectStore, object_key
from kubecore._config.static import StaticSource
from kubecore._contract.errors import ValidationError
from kubecore._manifest.decoding import object_to_dict
from kubecore._manifest.validation import decode_object
from kubecore._model.v1 import KubeObject, Secret
from kubecore._util.timefmt import rfc3339

OBJECT_RESOURCES = {"configmaps": "ConfigMap", "secrets": "Secret"}
"""The resources besides pods served, by their URL name."""
_OBJECT = "_object"
"""Where a shown object keeps the object it shows (``public`` leaves it out)."""


def _contents(obj: KubeObject) -> tuple[object, ...]:
    """What ``immutable`` freezes: the data and the flag itself."""
    if isinstance(obj, Secret):
        return (obj.data, obj.type, obj.immutable)
    return (obj.data, obj.binary_data, obj.immutable)


def _immutable(kind: str, name: str) -> ApiError:
    return ApiError(
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "Invalid",
        f'{kind} "{name}" is invalid: data: Forbidden: field is immutable when `immutable` is set',
        details={
            "name": name,
            "kind": kind,
            "causes": [
                {
                    "reason": "FieldValueForbidden",
                    "field": "data",
                    "message": "Forbidden: field is immutable when `immutable` is set",
                }
            ],
        },
    )


class ObjectResource(Resource[dict[str, Any], KubeObject]):
    """``configmaps`` or ``secrets``: read from the agent's object store, written to the API's
    source."""

    def __init__(
        self, kind: str, store: ObjectStore, source: StaticSource, now: Callable[[], float]
    ) -> None:
        self.kind = kind
        self.name = f"{kind.lower()}s"
        self.fields = SECRET_FIELDS if kind == "Secret" else CONFIG_MAP_FIELDS
        self.columns = SECRET_COLUMNS if kind == "Secret" else CONFIG_MAP_COLUMNS
        self.reads_need_token = kind == "Secret"
        self.store = store
        self.source = source
        self._now = now
        self._owned: dict[ObjectKey, KubeObject] = {}
        self._created: dict[ObjectKey, str] = {}
        """When the API first showed an object of another source."""
        self.log = ChangeLog()

    watchable = True

    def adopt(self, objects: Iterable[KubeObject]) -> None:
        self._owned = {object_key(obj): obj for obj in objects if obj.kind == self.kind}

    # --- reads

    def _body(self, obj: KubeObject) -> dict[str, Any]:
        """``obj`` as the API shows it, without its resourceVersion (the log's), the object
        itself under ``_object`` (for selectors and the ``Table``)."""
        key = object_key(obj)
        body = object_to_dict(obj)
        meta = body["metadata"]
        meta.setdefault("namespace", obj.metadata.namespace)
        created = obj.metadata.creation_timestamp or self._created.get(key)
        if not created:
            created = self._created[key] = rfc3339(self._now())
        meta["creationTimestamp"] = created
        if isinstance(obj, Secret) and "type" not in body:
            body["type"] = obj.type
        body[_OBJECT] = obj
        return body

    def look(self) -> tuple[list[dict[str, Any]], int]:
        """Every object of the kind as the API shows it, the change log brought up to date, and
        the resourceVersion of exactly that list."""
        return self.log.take(
            self._body(obj) for obj in self.store.objects() if obj.kind == self.kind
        )

    def listed(self, namespace: str | None) -> tuple[list[dict[str, Any]], str]:
        objects, version = self.look()
        return [
            view for view in objects if namespace in (None, view["metadata"]["namespace"])
        ], str(version)

    def _get(self, namespace: str, name: str) -> KubeObject | None:
        if self.kind == "ConfigMap":
            return self.store.get_config_map(namespace, name)
        return self.store.get_secret(namespace, name)

    def find(self, namespace: str, name: str) -> dict[str, Any]:
        for view in self.look()[0]:
            if (view["metadata"]["namespace"], view["metadata"]["name"]) == (namespace, name):
                return view
        raise not_found(self.name, name)

    def version(self) -> str:
        return str(self.log.version)

    def selected(self, view: dict[str, Any]) -> tuple[str, Mapping[str, str], Mapping[str, str]]:
        obj: KubeObject = view[_OBJECT]
        return obj.metadata.namespace, obj.metadata.labels, object_fields(obj)

    def shown(self, view: dict[str, Any]) -> dict[str, Any]:
        return public(view)

    def cells(self, view: dict[str, Any], now: float) -> list[Any]:
        return object_cells(view[_OBJECT], view["metadata"]["creationTimestamp"], now)

    def watch(
        self,
        exchange: Exchange,
        request: Request,
        match: Callable[[dict[str, Any]], bool],
        render: Render,
    ) -> None:
        serve_watch(exchange, request, match, self, render, self.kind)

    # --- writes

    def read_body(self, exchange: Exchange) -> object:
        """The JSON or YAML body, or the protobuf one kubectl's typed commands send (``kubectl
        create configmap|secret``), read into the JSON shape."""
        if content_type(exchange) != PROTOBUF_TYPE:
            return read_body(exchange)
        try:
            return object_from_protobuf(exchange._read_body())
        except ValueError as error:
            raise bad_request(f"the protobuf body cannot be read: {error}") from None

    def clean(self, data: object, namespace: str) -> dict[str, Any]:
        kind = self.kind
        if not isinstance(data, dict):
            raise bad_request(f"the body must be a JSON object (a v1 {kind})")
        if data.get("kind", kind) != kind or data.get("apiVersion", "v1") != "v1":
            raise bad_request(
                f"expected a v1 {kind}, got {data.get('apiVersion')}/{data.get('kind')}"
            )
        body = {"apiVersion": "v1", **data, "kind": kind}
        meta = body_metadata(body)
        for field in (*SERVER_FIELDS, "uid"):
            meta.pop(field, None)
        in_namespace(meta, namespace)
        body["metadata"] = meta
        return body

    def decode(self, data: dict[str, Any], owned: KubeObject | None) -> KubeObject:
        try:
            obj, problems = decode_object(data, "")
            if problems:
                raise ValidationError(problems)
        except ValidationError as error:
            name = (data.get("metadata") or {}).get("name", "")
            raise error_for(error, kind=self.kind, name=name) from None
        if owned is not None and owned.immutable and _contents(obj) != _contents(owned):
            raise _immutable(self.kind, obj.metadata.name)
        return obj

    def owned(self, namespace: str, name: str) -> KubeObject | None:
        return self._owned.get((self.kind, namespace, name))

    def exists(self, namespace: str, name: str) -> bool:
        return self._get(namespace, name) is not None

    def refuse_foreign(self, namespace: str, name: str) -> NoReturn:
        self.find(namespace, name)  # 404 when it is nowhere
        raise forbidden(
            self.name,
            name,
            "it comes from another source (a manifest file, a URL or etcd); change or remove it"
            " there, the API cannot",
        )

    def current(self, owned: KubeObject) -> dict[str, Any]:
        return object_to_dict(owned)

    def stamp(self, item: KubeObject, owned: KubeObject | None) -> KubeObject:
        # A uid and a creation time once, at creation; every later write keeps them.
        meta = attrs.evolve(
            item.metadata,
            uid=owned.metadata.uid if owned is not None else str(uuid.uuid4()),
            creation_timestamp=(owned.metadata.creation_timestamp if owned is not None else "")
            or rfc3339(self._now()),
        )
        return attrs.evolve(item, metadata=meta)

    def apply(self, item: KubeObject, owned: KubeObject | None) -> None:
        self._owned[object_key(item)] = item
        self.source.put_objects(item)

    def written(self, item: KubeObject, dry_run: bool) -> dict[str, Any]:
        meta = item.metadata
        if not dry_run:
            return self.shown(self.find(meta.namespace, meta.name))
        # What would be stored, at the version shown now.
        body = public(self._body(item))
        body["metadata"]["resourceVersion"] = self.version()
        return body

    def delete(
        self, storage: Storage, namespace: str, name: str, options: object, dry_run: bool
    ) -> dict[str, Any]:
        """Out of the store, then out of the agent; the answer is the object as it was."""
        owned = self.owned(namespace, name)
        if owned is None:
            self.refuse_foreign(namespace, name)
        last = self.shown(self.find(namespace, name))
        if not dry_run:
            storage.forget(owned)
            key = object_key(owned)
            del self._owned[key]
            self._created.pop(key, None)
            self.source.remove_objects(owned)
        return last
