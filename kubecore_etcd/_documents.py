"""Reading stored values: a pod, ConfigMap or Secret as JSON or YAML, named by its key, read by
the one document reader (``parse_document``) with the bounds of every document kubecore reads:
a value is anybody's text, and an alias bomb must not take every agent reading it."""

from __future__ import annotations

from typing import Any

from kubecore import FieldError, Pod, ValidationError
from kubecore.manifest import load_manifest_from_dict, load_pods_from_dict, parse_document
from kubecore.v1 import KubeObject


def load_document(value: bytes) -> object:
    """A stored value, JSON or YAML, read as every document is (``parse_document``). Raises
    ``ValidationError``: not UTF-8, not a document, too large, too deep, aliases that expand
    beyond the text, duplicate keys."""
    try:
        return parse_document(value)
    except ValidationError as error:
        problems = [
            FieldError("", f"not a YAML or JSON document: {p.message}") for p in error.problems
        ]
        raise ValidationError(problems) from None


def _named_by_key(data: object, kind: str, namespace: str, name: str) -> dict[str, Any]:
    """A decoded ``kind`` document with its namespace and name taken from its key: they may be
    left out, and must match the key when given. Raises ``ValidationError``."""
    if not isinstance(data, dict):
        raise ValidationError((FieldError("", f"the value must be one v1 {kind} object"),))
    if data.get("kind", kind) != kind:
        raise ValidationError((FieldError("kind", f"must be {kind}, got {data.get('kind')!r}"),))
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValidationError((FieldError("metadata", "must be a mapping"),))
    errors = [
        FieldError(f"metadata.{field}", f"is {metadata[field]!r} but the key says {wanted!r}")
        for field, wanted in (("namespace", namespace), ("name", name))
        if metadata.get(field) not in (None, "", wanted)
    ]
    if errors:
        raise ValidationError(tuple(errors))
    return {**data, "metadata": {**metadata, "namespace": namespace, "name": name}}


def decode_pod(value: bytes, key: str, namespace: str, name: str) -> Pod:
    """The pod stored at ``key`` (v1 Pod, JSON or YAML). Its namespace and name come from the key
    when the document leaves them out and must match it otherwise. Raises ``ValidationError``."""
    data = _named_by_key(load_document(value), "Pod", namespace, name)
    pods = load_pods_from_dict(data, source_name=key)
    return pods[0]


def decode_object(value: bytes, key: str, kind: str, namespace: str, name: str) -> KubeObject:
    """The ConfigMap or Secret stored at ``key`` (JSON or YAML), named by the key as a pod is.
    Raises ``ValidationError``; no message quotes the value (it may be a Secret's)."""
    data = {"apiVersion": "v1", **_named_by_key(load_document(value), kind, namespace, name)}
    _, objects, problems = load_manifest_from_dict({**data, "kind": kind}, source_name=key)
    if problems:
        raise ValidationError(tuple(p for e in problems for p in e.problems))
    return objects[0]
