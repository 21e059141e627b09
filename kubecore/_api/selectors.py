"""Label and field selectors (``labelSelector``, ``fieldSelector``) as the API server reads them,
and the fields each kind can be selected by."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubecore._api.errors import bad_request
from kubecore._model.v1 import KubeObject, Secret

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")

Requirement = Callable[[Mapping[str, str]], bool]


def _split_selector(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return parts


def label_selector(text: str) -> Requirement:
    """A label selector: ``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``, ``a in (x,y)``,
    ``a notin (x)``."""
    requirements: list[Requirement] = []
    for part in _split_selector(text):
        requirements.append(_label_requirement(part))
    return lambda labels: all(req(labels) for req in requirements)


def _label_requirement(part: str) -> Requirement:
    for op in ("!=", "==", "="):
        if op in part:
            key, _, value = part.partition(op)
            key, value = key.strip(), value.strip()
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    match = _SET_RE.match(part)
    if match is None:
        raise bad_request(f"labelSelector: cannot parse {part.strip()!r}")
    negate, key, op, values = match.groups()
    if op is None:
        return (lambda labels: key not in labels) if negate else (lambda labels: key in labels)
    choices = {v.strip() for v in values.split(",") if v.strip()}
    if op == "in":
        return lambda labels: labels.get(key) in choices
    return lambda labels: labels.get(key) not in choices


def field_selector(text: str, fields: Iterable[str]) -> Requirement:
    """A field selector over the given field names (``a=b``, ``a==b``, ``a!=b``)."""
    known = set(fields)
    requirements: list[Requirement] = []
    for part in _split_selector(text):
        negate = "!=" in part
        key, _, value = part.partition("!=" if negate else "=")
        key, value = key.strip(), value.strip().removeprefix("=").strip()
        if key not in known:
            raise bad_request(
                f'field label "{key}" not supported; use one of {", ".join(sorted(known))}'
            )
        requirements.append(_field_requirement(key, value, negate))
    return lambda values: all(req(values) for req in requirements)


def _field_requirement(key: str, value: str, negate: bool) -> Requirement:
    if negate:
        return lambda values: values.get(key, "") != value
    return lambda values: values.get(key, "") == value


def pod_fields(pod: dict[str, Any]) -> dict[str, str]:
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    return {
        "metadata.name": meta["name"],
        "metadata.namespace": meta.get("namespace", "default"),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.restartPolicy": spec.get("restartPolicy", ""),
        "status.phase": status.get("phase", ""),
        "status.podIP": status.get("podIP", ""),
    }


def event_fields(event: dict[str, Any]) -> dict[str, str]:
    ref = event["involvedObject"]
    return {
        "metadata.name": event["metadata"]["name"],
        "metadata.namespace": event["metadata"]["namespace"],
        "involvedObject.kind": ref.get("kind", ""),
        "involvedObject.namespace": ref.get("namespace", ""),
        "involvedObject.name": ref.get("name", ""),
        "involvedObject.uid": ref.get("uid", ""),
        "involvedObject.apiVersion": ref.get("apiVersion", ""),
        "involvedObject.fieldPath": ref.get("fieldPath", ""),
        "reason": event.get("reason", ""),
        "type": event.get("type", ""),
        "source": event["source"].get("component", ""),
        "reportingComponent": event.get("reportingComponent", ""),
    }


def object_fields(obj: KubeObject) -> dict[str, str]:
    """A ConfigMap's or a Secret's selectable fields."""
    values = {"metadata.name": obj.metadata.name, "metadata.namespace": obj.metadata.namespace}
    if isinstance(obj, Secret):
        values["type"] = obj.type
    return values


POD_FIELDS = tuple(pod_fields({"metadata": {"name": ""}}))
EVENT_FIELDS = (
    "metadata.name",
    "metadata.namespace",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.fieldPath",
    "reason",
    "type",
    "source",
    "reportingComponent",
)
CONFIG_MAP_FIELDS = ("metadata.name", "metadata.namespace")
SECRET_FIELDS = ("metadata.name", "metadata.namespace", "type")
