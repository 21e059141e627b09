"""The OpenAPI v3 component schemas of the v1 objects the node serves, generated from the
decoding tables (``kubecore._manifest.shapes``: every field the node accepts, its JSON name and
shape) and the model's docstrings (a class's docstring describes its schema; an attribute's
docstring, or ``schema_docs.FIELD_DOCS``, its field). Schemas are named as upstream's
(``io.k8s.api.core.v1.PodSpec``) and refer to each other as upstream's do (``allOf`` around a
``$ref``, so that the field keeps its own description), which is what ``kubectl explain`` walks.
A kind discovery lists without a model (the Node, Events) gets an outline: what every object has."""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import re
from typing import Any

from kubecore._api.discovery import API_RESOURCES
from kubecore._api.schema_docs import (
    API_SERVER_SCHEMAS,
    CLASS_DOCS,
    FIELD_DOCS,
    META_FIELDS,
    TOP_FIELDS,
)
from kubecore._manifest.shapes import FieldShape, model_shapes, top_level_models
from kubecore._model import v1

REF = "#/components/schemas/"
CORE = "io.k8s.api.core.v1."
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
TIME = META + "Time"
_META_CLASSES = frozenset({"ObjectMeta", "LabelSelector", "LabelSelectorRequirement"})
TIME_FIELDS = frozenset(
    {
        "creationTimestamp",
        "deletionTimestamp",
        "finishedAt",
        "lastTransitionTime",
        "startTime",
        "startedAt",
    }
)
"""Fields the model keeps as RFC 3339 text and the v1 API types as ``Time``."""

_BASE_SCHEMAS: dict[str, dict[str, Any]] = {
    # Either type, as upstream's v3 documents say (Swagger 2.0 has no oneOf: see SWAGGER_TYPES).
    QUANTITY: {
        "description": "A fixed-point number with an optional suffix: 500m (0.5), 1Gi "
        "(2^30), 1G (10^9), 1e3. Given as a string (or a JSON number).",
        "oneOf": [{"type": "string"}, {"type": "number"}],
    },
    INT_OR_STRING: {
        "description": "An integer (a port number) or a string (a port name).",
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
    TIME: {
        "description": "A time in RFC 3339 form (2006-01-02T15:04:05Z), to the second.",
        "format": "date-time",
        "type": "string",
    },
}


_STRING = {"type": "string"}
_API_SCHEMAS: dict[str, dict[str, Any]] = {
    META + "ListMeta": {
        "description": "A list's metadata: the resourceVersion it was read at.",
        "type": "object",
        "properties": {
            "resourceVersion": {**_STRING, "description": "The version of the list."},
            "continue": {**_STRING, "description": "Where a list in pages goes on (unused)."},
            "remainingItemCount": {"type": "integer", "format": "int64"},
            "selfLink": _STRING,
        },
    },
    META + "Status": {
        "description": "Why a request was refused (or that a delete is done).",
        "type": "object",
        "properties": {
            "apiVersion": _STRING,
            "kind": _STRING,
            "metadata": {"allOf": [{"$ref": REF + META + "ListMeta"}]},
            "status": {**_STRING, "description": "Success or Failure."},
            "message": {**_STRING, "description": "What happened, for a person."},
            "reason": {**_STRING, "description": "Why, for a program (NotFound, Invalid, ...)."},
            "details": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "code": {"type": "integer", "format": "int32", "description": "The HTTP status."},
        },
    },
    META + "WatchEvent": {
        "description": "One change a watch streams: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.",
        "type": "object",
        "required": ["type", "object"],
        "properties": {
            "type": _STRING,
            "object": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
    META + "DeleteOptions": {
        "description": "How a delete is made.",
        "type": "object",
        "properties": {
            "apiVersion": _STRING,
            "kind": _STRING,
            "gracePeriodSeconds": {
                "type": "integer",
                "format": "int64",
                "description": "Seconds a pod has to stop (0: at once).",
            },
            "dryRun": {"type": "array", "items": _STRING},
            "propagationPolicy": _STRING,
        },
    },
}
"""The API machinery's schemas the operations refer to (lists, errors, watch events, deletes)."""


def list_schema(kind: str, item: str) -> dict[str, Any]:
    """The schema of a ``<kind>List``, whose items are of the schema named ``item``."""
    return {
        "description": f"A list of {kind} objects.",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {**_STRING, "description": TOP_FIELDS["apiVersion"]},
            "kind": {**_STRING, "description": TOP_FIELDS["kind"]},
            "metadata": {"allOf": [ref(META + "ListMeta")], "description": "The list's version."},
            "items": {"type": "array", "items": ref(item)},
        },
    }


SWAGGER_TYPES = {QUANTITY: {"type": "string"}, INT_OR_STRING: {"type": "string"}}
"""What Swagger 2.0 says of the schemas that are one of two types."""


def schema_name(model: type[Any]) -> str:
    """Upstream's name for the schema of a model class."""
    prefix = META if model.__name__ in _META_CLASSES else CORE
    return prefix + model.__name__


def ref(name: str) -> dict[str, Any]:
    return {"$ref": REF + name}


@functools.cache
def _attribute_docs() -> dict[tuple[str, str], str]:
    """``(class, attribute) -> docstring`` for the model's attributes that have one (a string
    right after the annotated assignment, which Python keeps only in the source)."""
    found: dict[tuple[str, str], str] = {}
    for node in ast.parse(inspect.getsource(v1)).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for statement, following in itertools.pairwise(node.body):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                found[(node.name, statement.target.id)] = following.value.value
    return found


def prose(text: str) -> str:
    """A docstring as explain prints it: reST quotes dropped, lines joined into paragraphs."""
    text = re.sub(r"``([^`]+)``", r"\1", inspect.cleandoc(text))
    text = re.sub(r"(?<=\w-)\n\s*", "", text)  # "read-\n only" -> "read-only"
    paragraphs = [" ".join(part.split()) for part in text.split("\n\n")]
    return "\n\n".join(p for p in paragraphs if p)


def class_description(model: type[Any]) -> str:
    if model.__name__ in CLASS_DOCS:
        return CLASS_DOCS[model.__name__]
    text = prose(model.__doc__ or "")
    # "v1 ``Probe``: a liveness ... check" -> "A liveness ... check"
    match = re.match(r"v1 \w+: (.)", text)
    if match:
        text = match.group(1).upper() + text[match.end() :]
    return text


def field_description(model: type[Any], field: FieldShape) -> str:
    key = f"{model.__name__}.{field.name}"
    if key in FIELD_DOCS:
        return FIELD_DOCS[key]
    if field.name in TOP_FIELDS and model in top_level_models().values():
        return TOP_FIELDS[field.name]
    return prose(_attribute_docs().get((model.__name__, field.attr), ""))


def _value_schema(field: FieldShape) -> dict[str, Any]:
    """The schema of one value of the field (an item of its list or map, or the field itself),
    without description."""
    if field.scalar == "object":
        assert field.model is not None
        return ref(schema_name(field.model))
    if field.scalar == "quantity":
        return ref(QUANTITY)
    if field.scalar == "int-or-string":
        return ref(INT_OR_STRING)
    if field.scalar == "bytes":
        return {"type": "string", "format": "byte"}
    if field.name in TIME_FIELDS:
        return ref(TIME)
    if field.scalar == "integer":
        return {"type": "integer", "format": "int64"}
    return {"type": field.scalar}


def _wrapped(value: dict[str, Any]) -> dict[str, Any]:
    # OpenAPI 3.0 ignores a $ref's siblings: upstream wraps it in allOf to keep them.
    return {"allOf": [value]} if "$ref" in value else dict(value)


def field_schema(field: FieldShape, description: str) -> dict[str, Any]:
    value = _value_schema(field)
    if field.container == "list":
        schema: dict[str, Any] = {"type": "array", "items": _wrapped(value)}
    elif field.container == "map":
        schema = {"type": "object", "additionalProperties": value}
    else:
        schema = _wrapped(value)
    if description:
        schema["description"] = description
    return schema


def _object_schema(model: type[Any]) -> dict[str, Any]:
    shape = model_shapes()[model]
    properties = {
        field.name: field_schema(field, field_description(model, field)) for field in shape.fields
    }
    if model is v1.ObjectMeta:
        properties.update(
            {name: dict(schema) for name, schema in META_FIELDS.items() if name not in properties}
        )
    schema: dict[str, Any] = {"description": class_description(model), "type": "object"}
    required = [field.name for field in shape.fields if field.required]
    if required:
        schema["required"] = required
    schema["properties"] = dict(sorted(properties.items()))
    return schema


def outline_schema(kind: str) -> dict[str, Any]:
    """The schema of a kind the node serves without a model of its own (its Node, its
    Events): what every object has, and a description that says the rest is not described."""
    top = {
        name: {"type": "string", "description": TOP_FIELDS[name]} for name in ("apiVersion", "kind")
    }
    return {
        "description": f"A {kind}, as the node's API serves it. Only the fields every object "
        "has are described here; kubectl get -o yaml shows the rest.",
        "type": "object",
        "properties": {
            **top,
            "metadata": {
                "allOf": [ref(META + "ObjectMeta")],
                "description": TOP_FIELDS["metadata"],
            },
        },
        "x-kubernetes-preserve-unknown-fields": True,
    }


def _served_kinds() -> list[str]:
    return [r["kind"] for r in API_RESOURCES["resources"] if "/" not in r["name"]]


@functools.cache
def component_schemas() -> dict[str, dict[str, Any]]:
    """Every schema the v1 document holds, by upstream name; top-level kinds (those with a
    model, and an outline of every other kind discovery lists) carry their
    ``x-kubernetes-group-version-kind``."""
    schemas: dict[str, dict[str, Any]] = {**_BASE_SCHEMAS, **API_SERVER_SCHEMAS, **_API_SCHEMAS}
    for model in model_shapes():
        schemas[schema_name(model)] = _object_schema(model)
    for kind in _served_kinds():
        schemas.setdefault(CORE + kind, outline_schema(kind))
    for kind, name in kind_schema_names().items():
        schemas[name]["x-kubernetes-group-version-kind"] = [
            {"group": "", "kind": kind, "version": "v1"}
        ]
        schemas.setdefault(CORE + kind + "List", list_schema(kind, name))
    return dict(sorted(schemas.items()))


def kind_schema_names() -> dict[str, str]:
    """Kind -> the name of its schema (``Pod`` -> ``io.k8s.api.core.v1.Pod``), for every kind
    discovery lists and every kind with a model."""
    names = {kind: CORE + kind for kind in _served_kinds()}
    names.update({kind: schema_name(model) for kind, model in top_level_models().items()})
    return names
