"""Reading stored values: a pod, ConfigMap or Secret as JSON or YAML, named by its key."""

from __future__ import annotations

import json
from typing import Any

import yaml

from kubecore import FieldError, Pod, ValidationError
from kubecore.manifest import load_manifest_lenient, load_pods_from_dict
from kubecore.v1 import KubeObject

_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_document(value: bytes) -> object:
    """A stored value, JSON or YAML. A JSON object (what ``kubecore etcd apply`` and most
    writers store) is read by the JSON parser, twenty times faster than a YAML one; anything
    else, or what it refuses, by YAML. Raises ``UnicodeDecodeError`` or ``yaml.YAMLError``."""
    text = value.decode("utf-8")
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            pass  # a YAML flow mapping, or not a document at all: YAML says which
    return yaml.load(text, Loader=_SAFE_LOADER)


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
    try:
        data = load_document(value)
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise ValidationError((FieldError("", f"not a YAML or JSON document: {error}"),)) from None
    data = _named_by_key(data, "Pod", namespace, name)
    pods = load_pods_from_dict(data, source_name=key)
    return pods[0]


def decode_object(value: bytes, key: str, kind: str, namespace: str, name: str) -> KubeObject:
    """The ConfigMap or Secret stored at ``key`` (JSON or YAML), named by the key as a pod is.
    Raises ``ValidationError``; no message quotes the value (it may be a Secret's)."""
    try:
        data = load_document(value)
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ValidationError((FieldError("", f"not a YAML or JSON document{where}"),)) from None
    data = {"apiVersion": "v1", **_named_by_key(data, kind, namespace, name), "kind": kind}
    _, objects, problems = load_manifest_lenient(json.dumps(data, default=str), source_name=key)
    if problems:
        raise ValidationError(tuple(p for e in problems for p in e.problems))
    return objects[0]
