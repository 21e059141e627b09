"""JSON Patch (RFC 6902, ``kubectl patch --type=json``) over JSON Pointers (RFC 6901): ``add``,
``remove``, ``replace``, ``move``, ``copy`` and ``test``, applied in order to a copy of the object
(all or nothing). A patch that is not a list of operations is a 400; an operation that does not
apply (a path that is not there, a failed ``test``) is a 422 naming the operation, its index and
its path, as the API server answers."""

from __future__ import annotations

import copy
from http import HTTPStatus
from typing import Any

from kubecore._api.errors import ApiError, bad_request

JSON_PATCH = "application/json-patch+json"
_OPS = ("add", "remove", "replace", "move", "copy", "test")


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


def _apply_one(document: Any, op: dict[str, Any]) -> Any:
    kind = op["op"]
    tokens = parse_pointer(op.get("path"))
    if kind in ("add", "replace", "test") and "value" not in op:
        raise PatchFailed("the operation has no value")
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
        value = _remove(document, source)
    else:  # copy
        value = copy.deepcopy(_get(document, source))
    return _add(document, tokens, value)


def json_patch(target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` (a list of RFC 6902 operations) applied; ``target`` itself is
    left as it is."""
    if not isinstance(patch, list):
        raise bad_request("a JSON patch must be a list of operations")
    for number, op in enumerate(patch):
        if not isinstance(op, dict) or op.get("op") not in _OPS:
            raise bad_request(
                f"JSON patch operation {number} must be an object with an op of "
                f"{', '.join(_OPS)}; got {op!r}"
            )
    document = copy.deepcopy(target)
    for number, op in enumerate(patch):
        try:
            document = _apply_one(document, op)
        except PatchFailed as error:
            raise ApiError(
                HTTPStatus.UNPROCESSABLE_ENTITY,
                "Invalid",
                f"the JSON patch cannot be applied: operation {number} ({op['op']} "
                f"{op.get('path')!r}): {error}",
            ) from None
    return document
