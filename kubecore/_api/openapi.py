"""The OpenAPI documents the API serves (``/openapi/v2``, ``/openapi/v3``): the schemas of the v1
objects (``schemas``, generated from the model), which ``kubectl explain`` reads at any depth,
and the operations discovery lists, from which kubectl learns that ``fieldValidation`` is
understood (it then leaves validation to the server, which refuses unknown fields); and the v2
document in protobuf (gnostic's ``openapi.v2.Document``), as kubectl before 1.27 reads it."""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from kubecore._api.discovery import API_RESOURCES
from kubecore._api.errors import not_found
from kubecore._api.protobuf import message_field, string_field
from kubecore._api.request import JSON_TYPE
from kubecore._api.schemas import (
    CORE,
    META,
    REF,
    SWAGGER_TYPES,
    component_schemas,
    kind_schema_names,
)


def _query(name: str, kind: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description, "schema": {"type": kind}}


_FIELD_VALIDATION: dict[str, Any] = {
    "name": "fieldValidation",
    "in": "query",
    "description": "Strict: unknown fields are refused (kubecore always refuses them).",
    "schema": {"type": "string", "uniqueItems": True},
}
_DRY_RUN = {
    **_query("dryRun", "string", "All: the write is checked, not made."),
    "schema": {"type": "string", "enum": ["All"]},
}
_FIELD_MANAGER = _query("fieldManager", "string", "Who makes the change (managedFields).")
_SELECTORS = [
    _query("labelSelector", "string", "Only the objects whose labels it selects."),
    _query("fieldSelector", "string", "Only the objects whose fields it selects."),
]
_GRACE = _query("gracePeriodSeconds", "integer", "Seconds a pod has to stop (0: at once).")
_TIMEOUT = _query("timeoutSeconds", "integer", "Seconds a watch lasts at most.")
_LIST_PARAMETERS = [
    *_SELECTORS,
    _query("watch", "boolean", "Stream the changes (watch events) instead of listing."),
    _query("allowWatchBookmarks", "boolean", "A watch may send BOOKMARK events."),
    _query("sendInitialEvents", "boolean", "A watch sends the current state first."),
    _query("resourceVersion", "string", "The version a watch resumes from."),
    _TIMEOUT,
]
_WRITE_PARAMETERS = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
_PATCH_TYPES = {
    "application/json-patch+json": {"schema": {"type": "array", "items": {"type": "object"}}},
    "application/merge-patch+json": {"schema": {"type": "object"}},
    "application/apply-patch+yaml": {"schema": {"type": "object"}},
}
"""The patches a PATCH body may be. The strategic merge patch the node also takes is left out
on purpose: given it, kubectl computes apply's patch from these schemas, which carry no merge
keys, instead of its built-in types (with the merge keys of the pod's lists)."""
_STATUS = REF + META + "Status"
_ERRORS = {
    "default": {
        "description": "The request was refused: a v1 Status says why.",
        "content": {"application/json": {"schema": {"$ref": _STATUS}}},
    }
}
_VERBS = {  # discovery verb -> (HTTP method, on the item?, operation, x-kubernetes-action)
    "create": ("post", False, "create", "post"),
    "list": ("get", False, "list", "list"),
    "get": ("get", True, "read", "get"),
    "update": ("put", True, "replace", "put"),
    "patch": ("patch", True, "patch", "patch"),
    "delete": ("delete", True, "delete", "delete"),
    "deletecollection": ("delete", False, "deletecollection", "deletecollection"),
}
_PARAMETERS: dict[str, list[dict[str, Any]]] = {
    "create": _WRITE_PARAMETERS,
    "list": _LIST_PARAMETERS,
    "update": _WRITE_PARAMETERS,
    "patch": [*_WRITE_PARAMETERS, _query("force", "boolean", "Apply takes fields over.")],
    "delete": [_DRY_RUN, _GRACE],
    "deletecollection": [*_SELECTORS, _DRY_RUN, _GRACE],
}


def _json_body(schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


def _operation(verb: str, kind: str, resource: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    method, _, operation, action = _VERBS[verb]
    scope = "Namespaced" if resource["namespaced"] else ""
    schema = {"$ref": REF + kind_schema_names()[kind]}
    answered = (
        {"$ref": REF + CORE + kind + "List"} if verb in ("list", "deletecollection") else schema
    )
    codes = {"post": ("200", "201"), "put": ("200", "201")}.get(method, ("200",))
    content = {"application/json": {"schema": answered}}
    body: dict[str, Any] = {
        "operationId": f"{operation}CoreV1{scope}{kind}",
        "parameters": _PARAMETERS.get(verb, []),
        "responses": {**{code: {"description": "OK", "content": content} for code in codes}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": "", "version": "v1", "kind": kind},
    }
    body["responses"].update(_ERRORS)
    if verb == "list":
        body["responses"]["200"]["content"]["application/json;stream=watch"] = {
            "schema": {"$ref": REF + META + "WatchEvent"}
        }
    if method in ("post", "put"):
        body["requestBody"] = _json_body(schema)
    elif method == "patch":
        body["requestBody"] = {"required": True, "content": _PATCH_TYPES}
    elif method == "delete":
        body["requestBody"] = _json_body({"$ref": REF + META + "DeleteOptions"}, required=False)
    return method, body


def _path_parameters(namespaced: bool, item: bool) -> list[dict[str, Any]]:
    names = (["namespace"] if namespaced else []) + (["name"] if item else [])
    return [
        {
            "name": name,
            "in": "path",
            "required": True,
            "description": f"The object's {name}.",
            "schema": {"type": "string", "uniqueItems": True},
        }
        for name in names
    ]


def _paths() -> dict[str, Any]:
    """The operations discovery lists, for every kind with a schema, with their path and query
    parameters, bodies and answers."""
    kinds = kind_schema_names()
    paths: dict[str, Any] = {}
    for resource in API_RESOURCES["resources"]:
        name, kind = resource["name"], resource["kind"]
        if "/" in name or kind not in kinds:
            continue
        prefix = "/api/v1/namespaces/{namespace}/" if resource["namespaced"] else "/api/v1/"
        for verb in resource["verbs"]:
            if verb not in _VERBS:
                continue
            method, body = _operation(verb, kind, resource)
            item = _VERBS[verb][1]
            path = paths.setdefault(
                prefix + name + ("/{name}" if item else ""),
                {"parameters": _path_parameters(resource["namespaced"], item)},
            )
            path[method] = body
    return paths


def openapi_v3() -> dict[str, Any]:
    """The v1 group's OpenAPI v3 document (``/openapi/v3/api/v1``)."""
    return {
        "openapi": "3.0.0",
        "info": {"title": "kubecore node API", "version": "v1"},
        "paths": _paths(),
        "components": {"schemas": component_schemas()},
    }


def as_swagger(value: Any) -> Any:
    """A v3 schema in Swagger 2.0's form: refs into ``#/definitions/``, no ``allOf`` wrapper
    (Swagger keeps a ``$ref``'s siblings)."""
    if isinstance(value, list):
        return [as_swagger(item) for item in value]
    if not isinstance(value, dict):
        return value
    wrapped = value.get("allOf")
    if isinstance(wrapped, list) and len(wrapped) == 1 and isinstance(wrapped[0], dict):
        rest = {k: v for k, v in value.items() if k != "allOf"}
        return as_swagger({**wrapped[0], **rest})
    converted = {k: as_swagger(v) for k, v in value.items()}
    if isinstance(converted.get("$ref"), str):
        converted["$ref"] = converted["$ref"].replace(REF, "#/definitions/")
    return converted


def _swagger_definitions() -> dict[str, Any]:
    definitions: dict[str, Any] = as_swagger(component_schemas())
    for name, form in SWAGGER_TYPES.items():
        kept = {k: v for k, v in definitions[name].items() if k != "oneOf"}
        definitions[name] = {**kept, **form}
    return definitions


def openapi_v2() -> dict[str, Any]:
    """The Swagger 2.0 document (``/openapi/v2`` in JSON): the same schemas."""
    paths: dict[str, Any] = {}
    for path, operations in _paths().items():
        paths[path] = {}
        for method, operation in operations.items():
            if method == "parameters":
                continue
            operation = {
                k: v for k, v in operation.items() if k not in ("requestBody", "parameters")
            }
            parameters = [
                {"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": True}
            ]
            responses = {
                code: {"description": answer["description"]}
                for code, answer in operation["responses"].items()
            }
            paths[path][method] = {
                **operation,
                "responses": responses,
                **({"parameters": parameters} if method in ("post", "put", "patch") else {}),
            }
    return {
        "swagger": "2.0",
        "info": {"title": "kubecore node API", "version": "v1"},
        "paths": paths,
        "definitions": _swagger_definitions(),
    }


OPENAPI_V2_PROTOBUF_TYPE = "application/octet-stream"
"""What the API server answers a request for the protobuf form with (its media type has an
``@``, which is not valid in a Content-Type)."""


def _openapi_v2_protobuf() -> bytes:
    # No schema names Pod's kind on purpose: kubectl then skips its client-side validation (the
    # agent validates every field itself and refuses unknown ones) and computes apply's patch
    # from its own built-in Pod type, with the merge keys of the pod's lists.
    info = string_field(1, "kubecore node API") + string_field(2, "v1")
    return string_field(1, "2.0") + message_field(2, info) + message_field(8, b"")


OPENAPI_V2_PROTOBUF = _openapi_v2_protobuf()


@functools.cache
def _v3_body() -> bytes:
    return _json(openapi_v3())


@functools.cache
def _v2_body() -> bytes:
    return _json(openapi_v2())


@functools.cache
def v3_url() -> str:
    """Where the index points kubectl: the document's hash in the query, as the API server
    does, so that a client's cache of one document never stands for another."""
    digest = hashlib.sha512(_v3_body()).hexdigest()[:32].upper()
    return f"/openapi/v3/api/v1?hash={digest}"


def openapi_document(rest: tuple[str, ...], accept: str) -> tuple[bytes, str]:
    """The document at ``/openapi/<rest>`` and its content type; a 404 for another path. The
    documents are built once (they describe the code, which does not change while it runs)."""
    if rest == ("v2",):
        if "protobuf" in accept.split(",")[0]:
            # kubectl before 1.27 reads this document, in protobuf only.
            return OPENAPI_V2_PROTOBUF, OPENAPI_V2_PROTOBUF_TYPE
        return _v2_body(), JSON_TYPE
    if rest == ("v3",):
        return _json({"paths": {"api/v1": {"serverRelativeURL": v3_url()}}}), JSON_TYPE
    if rest == ("v3", "api", "v1"):
        return _v3_body(), JSON_TYPE
    raise not_found("openapi documents", "/".join(rest))


def _json(value: object) -> bytes:
    return json.dumps(value).encode() + b"\n"
