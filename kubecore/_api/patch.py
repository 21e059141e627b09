"""The patches a client sends (``PATCH``): RFC 7386 merge patches, strategic merge patches as
Kubernetes applies them to a pod (kubectl's ``apply`` sends them), RFC 6902 JSON patches
(``kubecore._api.json_patch``), and server-side apply, which sends the whole object
(``kubecore._api.managed_fields``).

A merge patch and a strategic merge patch copy nothing the body does not hold: their result is
at most the object and the patch (both bounded, in size and in depth, before they get here); a
JSON patch's ``copy`` can grow the object, so it counts what it builds
(``kubecore._api.json_patch``)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from kubecore._api.errors import ApiError, bad_request
from kubecore._api.json_patch import JSON_PATCH, json_patch

APPLY_PATCH = "application/apply-patch+yaml"
"""Server-side apply: the body is the whole object as the client wants it."""
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

Merge = Callable[[Any, Any], Any]


def merge_for(content_type: str, strategic: Merge) -> Merge:
    """How a patch of ``content_type`` applies (``strategic``: a kind's strategic merge); a 415
    for a patch type not taken."""
    if content_type == MERGE_PATCH:
        return merge_patch
    if content_type == STRATEGIC_MERGE_PATCH:
        return strategic
    if content_type == JSON_PATCH:
        return json_patch
    raise ApiError(
        HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
        "UnsupportedMediaType",
        f"the patch type {content_type!r} is not supported; use a JSON patch, a merge patch, "
        "a strategic merge patch or server-side apply",
    )


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "conditions": "type",
}
"""The lists of a pod that a strategic merge patch merges item by item, and each one's key."""


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A strategic merge patch as Kubernetes applies it to a pod: maps merge (``null`` deletes a
    key), the lists of ``MERGE_KEYS`` merge item by item (``$patch: delete`` removes one, a
    ``$setElementOrder`` directive orders them), other lists are replaced."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        merge_key = MERGE_KEYS.get(key)
        if value is None:
            result.pop(key, None)
        elif merge_key is not None and isinstance(value, list):
            order = patch.get(f"$setElementOrder/{key}")
            result[key] = _merge_list(result.get(key) or [], value, merge_key, order)
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    for key, order in patch.items():
        name = key.removeprefix("$setElementOrder/")
        if name != key and name not in patch and isinstance(result.get(name), list):
            result[name] = _merge_list(result[name], [], MERGE_KEYS.get(name, "name"), order)
    return result


def _merge_key(item: dict[str, Any], key: str) -> Any:
    """An item's merge key: a scalar (a list or a mapping there is a 400, not a 500)."""
    value = item.get(key)
    if isinstance(value, dict | list):
        raise bad_request(f"a strategic merge patch list item's {key} must be a scalar")
    return value


def _merge_list(current: list[Any], patch: list[Any], key: str, order: object) -> list[Any]:
    merged: dict[Any, Any] = {}
    for item in current:
        if isinstance(item, dict):
            merged[_merge_key(item, key)] = item
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"a strategic merge patch list item must be an object: {item!r}")
        name = _merge_key(item, key)
        if item.get("$patch") == "delete":
            merged.pop(name, None)
        else:
            merged[name] = strategic_merge_patch(merged.get(name), item)
    if isinstance(order, list):
        # dict keys: ordered and looked up at once (a long order list must not be quadratic)
        wanted = dict.fromkeys(_merge_key(e, key) for e in order if isinstance(e, dict))
        rest = [k for k in merged if k not in wanted]
        return [merged[k] for k in [*wanted, *rest] if k in merged]
    return list(merged.values())
