"""The decoding tables read as data: for each model class, the JSON fields a manifest may give,
each with its shape (string, integer, quantity, an object of another class, a list or a map of
one) and whether it is required. What the node's OpenAPI schemas are generated from, so that
they describe exactly what it accepts."""

from __future__ import annotations

import functools
from typing import Any, Literal

import attrs

from kubecore._manifest import decoding as d

Scalar = Literal["string", "integer", "boolean", "quantity", "int-or-string", "bytes", "object"]
Container = Literal["", "list", "map"]


@attrs.frozen
class FieldShape:
    """One JSON field: ``list`` or ``map`` of ``scalar`` (or a bare one); ``model`` is the
    class of an ``object``."""

    name: str
    attr: str
    scalar: Scalar
    container: Container = ""
    model: type[Any] | None = None
    required: bool = False


@attrs.frozen
class ModelShape:
    model: type[Any]
    fields: tuple[FieldShape, ...]


TOP_LEVEL: dict[str, d._Spec] = {"Pod": d._POD, **d.OBJECT_KINDS}


def _scalar(kind: d._Kind) -> Scalar:
    if isinstance(kind, d._Int | d._OptInt):
        return "integer"
    if isinstance(kind, d._Bool):
        return "boolean"
    if isinstance(kind, d._OptQuantity):
        return "quantity"
    if isinstance(kind, d._IntOrStr):
        return "int-or-string"
    return "string"


def _shape(field: d._F) -> FieldShape:
    kind = field.kind
    scalar: Scalar
    container: Container = ""
    model: type[Any] | None = None
    if isinstance(kind, d._Obj | d._ObjList):
        scalar, model = "object", kind.spec.cls
        container = "list" if isinstance(kind, d._ObjList) else ""
    elif isinstance(kind, d._ScalarList):
        scalar, container = _scalar(kind.item), "list"
    elif isinstance(kind, d._BytesMap):
        scalar, container = "bytes", "map"
    elif isinstance(kind, d._StrMap):
        scalar, container = ("quantity" if kind.quantities else "string"), "map"
    else:
        scalar = _scalar(kind)
    return FieldShape(field.json, field.attr, scalar, container, model, field.required)


def _walk(spec: d._Spec, found: dict[type[Any], ModelShape]) -> None:
    if spec.cls in found:
        return
    found[spec.cls] = ModelShape(spec.cls, tuple(_shape(f) for f in spec.fields))
    for field in spec.fields:
        if isinstance(field.kind, d._Obj | d._ObjList):
            _walk(field.kind.spec, found)


@functools.cache
def model_shapes() -> dict[type[Any], ModelShape]:
    """Every model class a top-level kind (``TOP_LEVEL``) reaches, with its fields (built once:
    the tables do not change; do not modify the answer)."""
    found: dict[type[Any], ModelShape] = {}
    for spec in TOP_LEVEL.values():
        _walk(spec, found)
    return found


@functools.cache
def top_level_models() -> dict[str, type[Any]]:
    """Kind name -> its model class (``Pod`` -> ``kubecore.v1.Pod``)."""
    return {kind: spec.cls for kind, spec in TOP_LEVEL.items()}
