"""What a write to the agent's Node may change: ``spec.unschedulable`` (``kubectl cordon`` and
``uncordon``), nothing else. ``node_change`` reads the change from the Node as served and the
one written (a patched copy, or a PUT's body) and refuses any other with a 422 whose causes
kubectl prints, naming each field."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import attrs

from kubecore._api.errors import ApiError
from kubecore._model.node_record import NO_SCHEDULE, UNSCHEDULABLE_TAINT

SERVER_OWNED_METADATA = frozenset(
    {"resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"}
)
"""Metadata a written Node may carry as it likes: the server keeps its own."""


@attrs.frozen
class NodeChange:
    """What a write asks of the Node: ``spec.unschedulable`` (all that may change)."""

    unschedulable: bool


def _metadata_problems(current: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    problems = []
    meta, now = wanted.get("metadata") or {}, current["metadata"]
    if not isinstance(meta, dict):
        return ["metadata"]
    for key in sorted(set(meta) | set(now)):
        if key in SERVER_OWNED_METADATA:
            continue
        if key in ("labels", "annotations"):
            if (meta.get(key) or {}) != (now.get(key) or {}):
                problems.append(f"metadata.{key}")
        elif key in meta and meta[key] != now.get(key):
            problems.append(f"metadata.{key}")
    return problems


def node_change(current: dict[str, Any], wanted: object, *, check_status: bool) -> NodeChange:
    """The change from the Node as served (``current``) to the one written (``wanted``); a 422
    naming every other field it changes (``status`` only with ``check_status``: a PUT carries
    the status it read, which the node reports and ignores)."""
    if not isinstance(wanted, dict):
        raise _invalid(current, ["<body>"])
    problems = []
    for key in ("apiVersion", "kind"):
        if key in wanted and wanted[key] != current[key]:
            problems.append(key)
    problems += _metadata_problems(current, wanted)
    spec = wanted.get("spec") or {}
    if not isinstance(spec, dict):
        raise _invalid(current, ["spec"])
    unschedulable = spec.get("unschedulable")
    if unschedulable is None:
        unschedulable = False
    if not isinstance(unschedulable, bool):
        problems.append("spec.unschedulable")
    taints = spec.get("taints") or []
    allowed = (current["spec"].get("taints") or [], unschedulable_taints(bool(unschedulable)))
    if not any(_same_taints(taints, a) for a in allowed):
        problems.append("spec.taints")
    for key in sorted(set(spec) - {"unschedulable", "taints"}):
        if spec[key] != current["spec"].get(key):
            problems.append(f"spec.{key}")
    if check_status and "status" in wanted and wanted["status"] != current["status"]:
        problems.append("status")
    if problems:
        raise _invalid(current, problems)
    return NodeChange(bool(unschedulable))


def unschedulable_taints(unschedulable: bool) -> list[dict[str, Any]]:
    return [{"key": UNSCHEDULABLE_TAINT, "effect": NO_SCHEDULE}] if unschedulable else []


def _same_taints(given: object, shown: list[dict[str, Any]]) -> bool:
    """The same taints, whatever their ``timeAdded`` (which the node sets)."""
    if not isinstance(given, list) or not all(isinstance(t, dict) for t in given):
        return False

    def keys(taints: list[Any]) -> list[tuple[Any, Any, Any]]:
        return sorted((t.get("key"), t.get("value", ""), t.get("effect")) for t in taints)

    return keys(given) == keys(shown)


def _invalid(current: dict[str, Any], problems: list[str]) -> ApiError:
    """A 422 whose causes kubectl prints (``The Node "n" is invalid: spec.taints: Forbidden:
    ...``)."""
    name = current["metadata"]["name"]
    why = (
        "only spec.unschedulable can be changed on this node's API (kubectl cordon /"
        " uncordon); the rest is what the node reports of itself"
    )
    causes = [
        {"reason": "FieldValueForbidden", "message": f"Forbidden: {why}", "field": field}
        for field in problems
    ]
    return ApiError(
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "Invalid",
        f'Node "{name}" is invalid: {", ".join(problems)}: {why}',
        details={"name": name, "kind": "Node", "causes": causes},
    )
