"""JSON Patch (RFC 6902, ``kubectl patch --type=json``) over JSON Pointers (RFC 6901): ``add``,
``remove``, ``replace``, ``move``, ``copy`` and ``test``, applied in order to a copy of the object
(all or nothing). A patch that is not a list of operations, or has more than
``MAX_PATCH_OPERATIONS``, is a 400; an operation that does not apply (a path that is not there, a
failed ``test``) is a 422 naming the operation, its index and its path, as the API server
answers.

A patch is small (the body is bounded) but ``copy`` is not: each one may double the document (26
copies of a value into itself made gigabytes). So the size every ``add``, ``replace``, ``copy``
and ``move`` puts in (``weight``: values plus the characters of strings and keys) is counted
before the value is placed, against ``MAX_PATCHED_WEIGHT`` in all, and the depth it reaches
against ``MAX_NESTING_DEPTH``: a patch past either is a 422 before anything large is built."""

from __future__ import annotations

import copy
from http import HTTPStatus
from typing import Any

from kubecore._api.errors import ApiError, bad_request
from kubecore._manifest.documents import MAX_NESTING_DEPTH

JSON_PATCH = "application/json-patch+json"
_OPS = ("add", "remove", "replace", "move", "copy", "test")
MAX_PATCH_OPERATIONS = 10_000
"""The most operations one JSON patch may have (the API server's limit)."""
MAX_PATCHED_WEIGHT = 8 * 1024 * 1024
"""How much an object and what a patch puts in it may weigh in all (``weight``): eight times
the largest body, a pod is a few thousand."""


class PatchFailed(Exception):
    """An operation that does not apply to the document (why)."""


def parse_pointer(pointer: object) -> list[str]:
    """The reference tokens of a JSON Pointer (``~1`` is ``/``, ``~0`` is ``~``)."""
    if not isinstance(pointer, str):
        raise PatchFailed(f"the path must be a string, not {pointer!r}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchFailed(f"the path {pointer!r} does not start with /")
    tokens = pointer[1:].split("/")
    for token in tokens:
        rest = token.replace("~0", "").replace("~1", "")
        if "~" in rest:
            raise PatchFailed(f"the path {pointer!r} has a ~ not followed by 0 or 1")
    return [token.replace("~1", "/").replace("~0", "~") for token in tokens]


def _index(node: list[Any], token: str, *, adding: bool) -> int:
    if adding and token == "-":
        return len(node)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchFailed(f"{token!r} is not an index of the list")
    index = int(token)
    if index > len(node) or (index == len(node) and not adding):
        raise PatchFailed(f"index {index} is out of the list's range (length {len(node)})")
    return index


def _get(document: Any, tokens: list[str]) -> Any:
    node = document
    for depth, token in enumerate(tokens):
        if isinstance(node, dict):
            if token not in node:
                raise PatchFailed(f"{_where(tokens[: depth + 1])} is missing")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, adding=False)]
        else:
            raise PatchFailed(f"{_where(tokens[:depth])} is not an object or a list")
    return node


def _where(tokens: list[str]) -> str:
    return "/" + "/".join(t.replace("~", "~0").replace("/", "~1") for t in tokens)


def _add(document: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _get(document, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, adding=True), value)
    else:
        raise PatchFailed(f"{_where(tokens[:-1])} is not an object or a list")
    return document


def _remove(document: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise PatchFailed("the whole document cannot be removed")
    parent = _get(document, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchFailed(f"{_where(tokens)} is missing")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, adding=False))
    raise PatchFailed(f"{_where(tokens[:-1])} is not an object or a list")


def weight(value: Any, limit: int) -> tuple[int, int]:
    """``(weight, depth)`` of a JSON value: one for each value, plus the characters of its strings
    and keys; lists and mappings count one level each. No recursion, and the walk stops as
    soon as the weight passes ``limit`` (what it returns is then only more than ``limit``)."""
    total, deepest = 0, 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending and total <= limit:
        item, depth = pending.pop()
        total += 1
        if isinstance(item, dict):
            deepest = max(deepest, depth + 1)
            total += sum(len(key) for key in item)
            pending.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth + 1)
            pending.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            total += len(item)
    return total, deepest


class _Budget:
    """What a patch may still put into the document."""

    def __init__(self, document: Any) -> None:
        used, depth = weight(document, MAX_PATCHED_WEIGHT)
        self.left = MAX_PATCHED_WEIGHT - used
        if self.left < 0 or depth > MAX_NESTING_DEPTH:
            raise PatchFailed("the object is too large to patch")

    def spend(self, value: Any, tokens: list[str], *, moved: bool = False) -> None:
        """Count ``value`` placed at ``tokens`` (``moved``: it leaves its place, only its depth
        counts); ``PatchFailed`` past the weight or depth."""
        cost, depth = weight(value, MAX_PATCHED_WEIGHT if moved else self.left)
        if moved:
            cost = 0
        elif cost > self.left:
            raise PatchFailed(
                f"the patched object would weigh more than {MAX_PATCHED_WEIGHT} "
                "(values plus characters)"
            )
        if len(tokens) + depth > MAX_NESTING_DEPTH:
            raise PatchFailed(f"the patched object would nest more than {MAX_NESTING_DEPTH} levels")
        self.left -= cost


def _apply_one(document: Any, op: dict[str, Any], budget: _Budget) -> Any:
    kind = op["op"]
    tokens = parse_pointer(op.get("path"))
    if kind in ("add", "replace", "test") and "value" not in op:
        raise PatchFailed("the operation has no value")
    if kind in ("add", "replace"):
        budget.spend(op["value"], tokens)
    if kind == "add":
        return _add(document, tokens, copy.deepcopy(op["value"]))
    if kind == "remove":
        _remove(document, tokens)
        return document
    if kind == "replace":
        _get(document, tokens)  # must be there
        if not tokens:
            return copy.deepcopy(op["value"])
        _remove(document, tokens)
        return _add(document, tokens, copy.deepcopy(op["value"]))
    if kind == "test":
        found = _get(document, tokens)
        wanted = op["value"]
        if found != wanted or isinstance(found, bool) != isinstance(wanted, bool):
            raise PatchFailed(f"the value is {found!r}, not {wanted!r}: test failed")
        return document
    source = parse_pointer(op.get("from"))
    if kind == "move":
        if tokens[: len(source)] == source and tokens != source:
            raise PatchFailed("a value cannot be moved into itself")
        budget.spend(_get(document, source), tokens, moved=True)
        value = _remove(document, source)
    else:  # copy: measured before it is made
        found = _get(document, source)
        budget.spend(found, tokens)
        value = copy.deepcopy(found)
    return _add(document, tokens, value)


def json_patch(target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` (a list of RFC 6902 operations) applied; ``target`` itself is
    left as it is."""
    if not isinstance(patch, list):
        raise bad_request("a JSON patch must be a list of operations")
    if len(patch) > MAX_PATCH_OPERATIONS:
        raise bad_request(
            f"a JSON patch may have at most {MAX_PATCH_OPERATIONS} operations, this one has "
            f"{len(patch)}"
        )
    for number, op in enumerate(patch):
        if not isinstance(op, dict) or op.get("op") not in _OPS:
            raise bad_request(
                f"JSON patch operation {number} must be an object with an op of "
                f"{', '.join(_OPS)}; got {op!r}"
            )
    try:
        budget = _Budget(target)
    except PatchFailed as error:
        raise ApiError(
            HTTPStatus.UNPROCESSABLE_ENTITY, "Invalid", f"the JSON patch cannot be applied: {error}"
        ) from None
    document = copy.deepcopy(target)
    for number, op in enumerate(patch):
        try:
            document = _apply_one(document, op, budget)
        except PatchFailed as error:
            raise ApiError(
                HTTPStatus.UNPROCESSABLE_ENTITY,
                "Invalid",
                f"the JSON patch cannot be applied: operation {number} ({op['op']} "
                f"{op.get('path')!r}): {error}",
            ) from None
    return document
