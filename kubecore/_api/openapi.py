"""The OpenAPI documents the API serves (``/openapi/v2``, ``/openapi/v3``): the schema of a Pod
as far as kubectl needs it, to validate ``apply`` and to learn that ``fieldValidation`` is
understood; and the v2 document in protobuf (gnostic's ``openapi.v2.Document``), as kubectl
before 1.27 reads it."""

from __future__ import annotations

import json
from typing import Any

from kubecore._api.errors import not_found
from kubecore._api.protobuf import message_field, string_field
from kubecore._api.request import JSON_TYPE

OPENAPI_V3_URL = "/openapi/v3/api/v1?hash=kubecore1"

_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_POD_GVK = [{"group": "", "version": "v1", "kind": "Pod"}]
_FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "description": "Strict: unknown fields are refused (kubecore always refuses them).",
    "schema": {"type": "string", "uniqueItems": True},
}


def _pod_schema() -> dict[str, Any]:
    return {
        "description": "A v1 Pod (kubecore checks the spec itself and names every problem).",
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {**_OBJECT, "description": "ObjectMeta"},
            "spec": {**_OBJECT, "description": "PodSpec"},
            "status": {**_OBJECT, "description": "PodStatus"},
        },
        "x-kubernetes-group-version-kind": _POD_GVK,
    }


def _operation(
    operation: str, action: str, code: str, phrase: str, parameter: dict[str, Any]
) -> dict[str, Any]:
    return {
        "operationId": f"{operation}CoreV1NamespacedPod",
        "parameters": [parameter],
        "responses": {code: {"description": phrase}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _POD_GVK[0],
    }


OPENAPI_V3: dict[str, Any] = {
    "openapi": "3.0.0",
    "info": {"title": "kubecore node API", "version": "v1"},
    "paths": {
        "/api/v1/namespaces/{namespace}/pods": {
            "post": _operation("create", "post", "201", "Created", _FIELD_VALIDATION)
        },
        "/api/v1/namespaces/{namespace}/pods/{name}": {
            "put": _operation("replace", "put", "200", "OK", _FIELD_VALIDATION),
            "patch": _operation("patch", "patch", "200", "OK", _FIELD_VALIDATION),
        },
    },
    "components": {"schemas": {"io.k8s.api.core.v1.Pod": _pod_schema()}},
}

_FIELD_VALIDATION_V2 = {"name": "fieldValidation", "in": "query", "type": "string"}
OPENAPI_V2: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "kubecore node API", "version": "v1"},
    "paths": {
        "/api/v1/namespaces/{namespace}/pods": {
            "post": _operation("create", "post", "201", "Created", _FIELD_VALIDATION_V2)
        },
        "/api/v1/namespaces/{namespace}/pods/{name}": {
            "patch": _operation("patch", "patch", "200", "OK", _FIELD_VALIDATION_V2)
        },
    },
    "definitions": {"io.k8s.api.core.v1.Pod": _pod_schema()},
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


def openapi_document(rest: tuple[str, ...], accept: str) -> tuple[bytes, str]:
    """The document at ``/openapi/<rest>`` and its content type; a 404 for another path."""
    if rest == ("v2",):
        if "protobuf" in accept.split(",")[0]:
            # kubectl before 1.27 reads this document, in protobuf only.
            return OPENAPI_V2_PROTOBUF, OPENAPI_V2_PROTOBUF_TYPE
        return _json(OPENAPI_V2), JSON_TYPE
    if rest == ("v3",):
        return _json({"paths": {"api/v1": {"serverRelativeURL": OPENAPI_V3_URL}}}), JSON_TYPE
    if rest == ("v3", "api", "v1"):
        return _json(OPENAPI_V3), JSON_TYPE
    raise not_found("openapi documents", "/".join(rest))


def _json(value: object) -> bytes:
    return json.dumps(value).encode() + b"\n"
