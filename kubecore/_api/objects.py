"""ConfigMaps and Secrets over the node's Kubernetes API (``kubecore._api.server``): ``kubectl
create``, ``apply`` (client-side and server-side), ``replace``, ``edit``, ``get`` and ``delete``.

Objects written over the API belong to the API's source (its ``StaticSource``); those of other
sources (manifest files, a URL, etcd) are read-only here (403), as pods are. Each gets a uid and
its creation time when it is created, kept by every later write, and each change is in the API's
store (``KubeApi.save``, ``KubeApi.forget``) before it is applied. Secrets are read only with the
bearer token, even on loopback: their values are never served to an anonymous reader. There is no
watch of these resources.
"""

from __future__ import annotations

import base64
import copy
import uuid
from collections.abc import Callable, Iterable, Iterator
from http import HTTPStatus
from typing import Any, NoReturn

import attrs

from kubecore._api.server import (
    _SERVER_FIELDS,
    ApiError,
    Exchange,
    KubeApi,
    _bad_request,
    _has_body,
    _not_found,
    _Request,
    _table,
    body_metadata,
    field_selector,
    label_selector,
    merge_patch,
    wants_table,
)
from kubecore._api.server import OBJECT_RESOURCES as RESOURCES
from kubecore._config.objects import ObjectKey, ObjectStore, object_key
from kubecore._config.static import StaticSource
from kubecore._contract.errors import ValidationError
from kubecore._http.rules import error_for
from kubecore._manifest.decoding import object_to_dict
from kubecore._manifest.validation import decode_object
from kubecore._model.v1 import KubeObject, Secret
from kubecore._util.timefmt import age as time_age
from kubecore._util.timefmt import rfc3339


def _column(name: str, description: str, fmt: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "type": "string" if name != "Data" else "integer",
        "format": fmt,
        "description": description,
        "priority": 0,
    }


COLUMNS = {
    "ConfigMap": [
        _column("Name", "Name of the object", "name"),
        _column("Data", "How many keys the object holds"),
        _column("Age", "Time since the object was created"),
    ],
    "Secret": [
        _column("Name", "Name of the object", "name"),
        _column("Type", "The type of the secret"),
        _column("Data", "How many keys the object holds"),
        _column("Age", "Time since the object was created"),
    ],
}


_FIELDS = {
    "ConfigMap": ("metadata.name", "metadata.namespace"),
    "Secret": ("metadata.name", "metadata.namespace", "type"),
}
"""The field selectors each kind answers."""


def _field_values(obj: KubeObject) -> dict[str, str]:
    values = {"metadata.name": obj.metadata.name, "metadata.namespace": obj.metadata.namespace}
    if isinstance(obj, Secret):
        values["type"] = obj.type
    return values


# --- the protobuf form of ConfigMap and Secret ---------------------------------------------------

PROTOBUF_TYPE = "application/vnd.kubernetes.protobuf"
_PROTOBUF_MAGIC = b"k8s\x00"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of each field of a protobuf message; varints as ints, length-
    delimited fields as bytes (fixed-width fields are skipped: these messages have none)."""
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field")
            yield number, data[pos : pos + length]
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ValueError("expected a string")
    return value.decode("utf-8")


def _entry(value: int | bytes) -> tuple[str, bytes]:
    """A map entry: key (field 1), value (field 2)."""
    if not isinstance(value, bytes):
        raise ValueError("expected a map entry")
    key, item = "", b""
    for number, part in _fields(value):
        if number == 1:
            key = _text(part)
        elif number == 2 and isinstance(part, bytes):
            item = part
    return key, item


def _metadata(data: bytes) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    names = {1: "name", 2: "generateName", 3: "namespace"}
    for number, value in _fields(data):
        if number in names:
            meta[names[number]] = _text(value)
        elif number in (11, 12):
            key, item = _entry(value)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = item.decode()
    return meta


def object_from_protobuf(body: bytes) -> dict[str, Any]:
    """A ConfigMap or Secret in Kubernetes' protobuf envelope, in its JSON shape."""
    if not body.startswith(_PROTOBUF_MAGIC):
        raise ValueError("no protobuf envelope")
    api_version = kind = ""
    raw = b""
    for number, value in _fields(body[len(_PROTOBUF_MAGIC) :]):
        if number == 1 and isinstance(value, bytes):
            for part_number, part in _fields(value):
                if part_number == 1:
                    api_version = _text(part)
                elif part_number == 2:
                    kind = _text(part)
        elif number == 2 and isinstance(value, bytes):
            raw = value
    if kind not in ("ConfigMap", "Secret"):
        raise ValueError(f"only ConfigMap and Secret are read from protobuf, got {kind!r}")
    document: dict[str, Any] = {"apiVersion": api_version or "v1", "kind": kind}
    # ConfigMap: 2 data (string), 3 binaryData, 4 immutable.
    # Secret: 2 data (bytes), 3 type, 4 stringData, 5 immutable.
    maps = (
        {2: ("data", False), 3: ("binaryData", True)}
        if kind == "ConfigMap"
        else {2: ("data", True), 4: ("stringData", False)}
    )
    immutable = 4 if kind == "ConfigMap" else 5
    for number, value in _fields(raw):
        if number == 1 and isinstance(value, bytes):
            document["metadata"] = _metadata(value)
        elif number in maps:
            field, binary = maps[number]
            key, item = _entry(value)
            text = base64.b64encode(item).decode("ascii") if binary else item.decode()
            document.setdefault(field, {})[key] = text
        elif number == 3 and kind == "Secret":
            document["type"] = _text(value)
        elif number == immutable:
            document["immutable"] = bool(value)
    return document


def _contents(obj: KubeObject) -> tuple[object, ...]:
    """What ``immutable`` freezes: the data and the flag itself."""
    if isinstance(obj, Secret):
        return (obj.data, obj.type, obj.immutable)
    return (obj.data, obj.binary_data, obj.immutable)


class ObjectApi:
    """The ``configmaps`` and ``secrets`` resources of ``KubeApi``."""

    def __init__(
        self,
        store: ObjectStore,
        source: StaticSource,
        *,
        now: Callable[[], float],
        api: KubeApi,
    ) -> None:
        self.store = store
        self.source = source
        self._now = now
        self._api = api
        """The ``KubeApi``: its responses, errors and helpers."""
        self._owned: dict[ObjectKey, KubeObject] = {}
        self._created: dict[ObjectKey, str] = {}
        """When the API first showed an object of another source."""

    def adopt(self, objects: Iterable[KubeObject]) -> None:
        """Take ``objects`` (read back from the store) as the API's own, replacing any."""
        self._owned = {object_key(obj): obj for obj in objects}

    # --- entry

    def handle(
        self,
        exchange: Exchange,
        request: _Request,
        resource: str,
        namespace: str | None,
        name: str | None,
    ) -> None:
        kind = RESOURCES[resource]
        method = request.method
        if kind == "Secret" and method in ("GET", "HEAD"):
            self._require_token(exchange)
        if namespace is None or name is None:
            if method in ("GET", "HEAD") and not request.flag("watch"):
                self._list(exchange, request, kind, namespace)
            elif method == "POST" and namespace is not None:
                self._create(exchange, request, kind, namespace)
            else:
                raise ApiError(
                    HTTPStatus.METHOD_NOT_ALLOWED,
                    "MethodNotAllowed",
                    f"{method}{' with watch' if request.flag('watch') else ''} is not"
                    f" supported on {resource}",
                )
        elif method in ("GET", "HEAD"):
            self._get(exchange, request, kind, namespace, name)
        elif method == "PUT":
            body = self._body(exchange)
            self._write(exchange, request, kind, namespace, name, lambda _current: body)
        elif method == "PATCH":
            self._patch(exchange, request, kind, namespace, name)
        elif method == "DELETE":
            self._delete(exchange, request, kind, namespace, name)
        else:
            raise ApiError(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                f"{method} is not supported on {resource}/{name}",
            )

    def _require_token(self, exchange: Exchange) -> None:
        self._api.require_token(
            exchange.headers.get("Authorization") or "",
            "secrets are read only with the bearer token (over TLS), even on loopback",
        )

    # --- reads

    def _body_of(self, obj: KubeObject) -> dict[str, Any]:
        key = object_key(obj)
        body = object_to_dict(obj)
        meta = body["metadata"]
        created = obj.metadata.creation_timestamp or self._created.get(key)
        if not created:
            created = self._created[key] = rfc3339(self._now())
        meta["creationTimestamp"] = created
        meta["resourceVersion"] = str(self.store.revision)
        if isinstance(obj, Secret) and "type" not in body:
            body["type"] = obj.type
        return body

    def _objects(self, kind: str, namespace: str | None) -> list[KubeObject]:
        return [
            obj
            for obj in self.store.objects()
            if obj.kind == kind and namespace in (None, obj.metadata.namespace)
        ]

    def _find(self, kind: str, namespace: str, name: str) -> KubeObject:
        getter = self.store.get_config_map if kind == "ConfigMap" else self.store.get_secret
        found = getter(namespace, name)
        if found is None:
            raise _not_found(f"{kind.lower()}s", name)
        return found

    def _cells(self, obj: KubeObject, now: float) -> list[Any]:
        body = self._body_of(obj)
        age = time_age(body["metadata"]["creationTimestamp"], now)
        if isinstance(obj, Secret):
            return [obj.metadata.name, obj.type, len(obj.data), age]
        return [obj.metadata.name, len(obj.data) + len(obj.binary_data), age]

    def _answer(
        self,
        exchange: Exchange,
        request: _Request,
        kind: str,
        objects: Iterable[KubeObject],
        *,
        single: bool,
    ) -> None:
        objects = list(objects)
        version = str(self.store.revision)
        if wants_table(request.accept):
            now = self._now()
            rows = [(self._cells(obj, now), self._body_of(obj)) for obj in objects]
            include = request.param("includeObject", "Metadata")
            self._api._json(exchange, _table(COLUMNS[kind], rows, version, include))
        elif not single:
            self._api._json(
                exchange,
                {
                    "kind": f"{kind}List",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": version},
                    "items": [self._body_of(obj) for obj in objects],
                },
            )
        else:
            self._api._json(exchange, self._body_of(objects[0]))

    def _list(
        self, exchange: Exchange, request: _Request, kind: str, namespace: str | None
    ) -> None:
        labels = label_selector(request.param("labelSelector"))
        fields = field_selector(request.param("fieldSelector"), _FIELDS[kind])
        objects = [
            obj
            for obj in self._objects(kind, namespace)
            if labels(obj.metadata.labels) and fields(_field_values(obj))
        ]
        self._answer(exchange, request, kind, objects, single=False)

    def _get(
        self, exchange: Exchange, request: _Request, kind: str, namespace: str, name: str
    ) -> None:
        self._answer(exchange, request, kind, [self._find(kind, namespace, name)], single=True)

    # --- writes

    def _body(self, exchange: Exchange) -> object:
        """The JSON or YAML body, or the protobuf one kubectl's typed commands send (``kubectl
        create configmap|secret``), read into the JSON shape."""
        content_type = (exchange.headers.get("Content-Type") or "").split(";")[0].strip()
        if content_type != PROTOBUF_TYPE:
            return self._api._body(exchange)
        try:
            return object_from_protobuf(exchange._read_body())
        except ValueError as error:
            raise _bad_request(f"the protobuf body cannot be read: {error}") from None

    def _decode(self, data: dict[str, Any], kind: str) -> KubeObject:
        try:
            obj, problems = decode_object(data, "")
            if problems:
                raise ValidationError(problems)
        except ValidationError as error:
            name = (data.get("metadata") or {}).get("name", "")
            raise error_for(error, kind=kind, name=name) from None
        return obj

    def _clean(self, data: object, kind: str, namespace: str) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise _bad_request(f"the body must be a JSON object (a v1 {kind})")
        if data.get("kind", kind) != kind or data.get("apiVersion", "v1") != "v1":
            raise _bad_request(
                f"expected a v1 {kind}, got {data.get('apiVersion')}/{data.get('kind')}"
            )
        body = {"apiVersion": "v1", **data, "kind": kind}
        meta = body_metadata(body)
        for field in (*_SERVER_FIELDS, "uid"):
            meta.pop(field, None)
        given = meta.get("namespace")
        if given and given != namespace:
            raise _bad_request(
                f"the namespace of the provided object ({given}) does not match the namespace "
                f"sent on the request ({namespace})"
            )
        meta["namespace"] = namespace
        body["metadata"] = meta
        return body

    def _refuse_foreign(self, kind: str, namespace: str, name: str) -> NoReturn:
        self._find(kind, namespace, name)  # 404 when it is nowhere
        raise ApiError(
            HTTPStatus.FORBIDDEN,
            "Forbidden",
            f'{kind.lower()}s "{name}" is forbidden: it comes from another source (a manifest'
            " file, a URL or etcd); change or remove it there, the API cannot",
            details={"name": name, "kind": f"{kind.lower()}s"},
        )

    def _store(self, obj: KubeObject, owned: KubeObject | None, dry_run: bool) -> dict[str, Any]:
        # A uid and a creation time once, at creation; every later write keeps them.
        meta = attrs.evolve(
            obj.metadata,
            uid=owned.metadata.uid if owned is not None else str(uuid.uuid4()),
            creation_timestamp=(owned.metadata.creation_timestamp if owned is not None else "")
            or rfc3339(self._now()),
        )
        obj = attrs.evolve(obj, metadata=meta)
        if not dry_run:
            self._api.save(obj)
            self._owned[object_key(obj)] = obj
            self.source.put_objects(obj)
        return self._body_of(obj)

    def _create(self, exchange: Exchange, request: _Request, kind: str, namespace: str) -> None:
        obj = self._decode(self._clean(self._body(exchange), kind, namespace), kind)
        with self._api._write_lock:
            self._api._writable()
            getter = self.store.get_config_map if kind == "ConfigMap" else self.store.get_secret
            if getter(namespace, obj.metadata.name) is not None:
                raise ApiError(
                    HTTPStatus.CONFLICT,
                    "AlreadyExists",
                    f'{kind.lower()}s "{obj.metadata.name}" already exists',
                    details={"name": obj.metadata.name, "kind": f"{kind.lower()}s"},
                )
            stored = self._store(obj, None, self._api._dry_run(request))
        self._api._json(exchange, stored, HTTPStatus.CREATED)

    def _patch(
        self, exchange: Exchange, request: _Request, kind: str, namespace: str, name: str
    ) -> None:
        content_type = (exchange.headers.get("Content-Type") or "").split(";")[0].strip()
        patch = self._api._body(exchange)
        if content_type == "application/apply-patch+yaml":
            self._write(exchange, request, kind, namespace, name, lambda _: patch, upsert=True)
            return
        if content_type not in (
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
        ):
            raise ApiError(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                "UnsupportedMediaType",
                f"the patch type {content_type!r} is not supported; use a merge patch, a "
                "strategic merge patch or server-side apply",
            )
        # ConfigMaps and Secrets hold no lists: a strategic merge patch is a merge patch.
        self._write(
            exchange, request, kind, namespace, name, lambda current: merge_patch(current, patch)
        )

    def _write(
        self,
        exchange: Exchange,
        request: _Request,
        kind: str,
        namespace: str,
        name: str,
        make: Callable[[dict[str, Any]], object],
        *,
        upsert: bool = False,
    ) -> None:
        with self._api._write_lock:
            self._api._writable()
            key = (kind, namespace, name)
            owned = self._owned.get(key)
            getter = self.store.get_config_map if kind == "ConfigMap" else self.store.get_secret
            if owned is None and (not upsert or getter(namespace, name) is not None):
                self._refuse_foreign(kind, namespace, name)
            current = object_to_dict(owned) if owned is not None else {}
            data = self._clean(make(copy.deepcopy(current)), kind, namespace)
            if (data.get("metadata") or {}).get("name", name) != name:
                raise _bad_request("the name of the object does not match the name on the URL")
            data["metadata"]["name"] = name
            obj = self._decode(data, kind)
            if owned is not None and owned.immutable and _contents(obj) != _contents(owned):
                raise ApiError(
                    HTTPStatus.UNPROCESSABLE_ENTITY,
                    "Invalid",
                    f'{kind} "{name}" is invalid: data: Forbidden: field is immutable when'
                    " `immutable` is set",
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
            stored = self._store(obj, owned, self._api._dry_run(request))
        code = HTTPStatus.OK if owned is not None else HTTPStatus.CREATED
        self._api._json(exchange, stored, code)

    def _delete(
        self, exchange: Exchange, request: _Request, kind: str, namespace: str, name: str
    ) -> None:
        if _has_body(exchange):
            exchange._read_body()  # DeleteOptions: nothing in them applies to these objects
        with self._api._write_lock:
            self._api._writable()
            key = (kind, namespace, name)
            owned = self._owned.get(key)
            if owned is None:
                self._refuse_foreign(kind, namespace, name)
            last = self._body_of(owned)
            if not self._api._dry_run(request):
                self._api.forget(owned)
                del self._owned[key]
                self._created.pop(key, None)
                self.source.remove_objects(owned)
        self._api._json(exchange, last)
