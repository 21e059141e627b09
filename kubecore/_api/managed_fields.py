"""Server-side apply's field ownership (``metadata.managedFields``), as the API server's field
manager keeps it, for the kinds this API serves (pods, ConfigMaps, Secrets).

Each write records which fields its manager set: an Update (create, replace, merge, strategic
merge and JSON patches: ``kubectl label`` is the manager ``kubectl-label``) takes the fields it
changed from every other manager; an Apply (``kubectl apply --server-side``: manager ``kubectl``)
owns exactly the fields of its configuration. An apply merges its configuration into the live
object instead of replacing it, so a field another manager owns and the configuration does not
mention is kept; a field the applier owned before and now omits is removed (unless another
manager owns it too); setting a field another manager owns to another value is a conflict (409,
the manager and the field named) unless the apply is forced, which takes the field over.

The structure followed (the structured-merge rules that matter here): maps (objects) merge key
by key; the lists of ``MERGE_KEYS`` (containers, ports by ``containerPort``, env, volumes, volume
mounts, ...) merge item by item by their key; every other list, and every scalar, is one atomic
value. Not covered: the OpenAPI schema's full list types and keys (``ports`` keyed by
``containerPort`` alone, not with ``protocol``), ``x-kubernetes-map-type: atomic`` maps (every
map merges), managers per API version (every entry is ``v1``), ``status`` (never applied), and
the ``metadata.managedFields`` a client sends (ignored: the server's are kept).

A field set is a frozenset of paths; a path is a tuple of ``fieldsV1`` tokens: ``f:<field>`` for
a map's field, ``k:<json key>`` for a keyed list's item (``k:{"name":"main"}``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any

import attrs

from kubecore._api.errors import ApiError
from kubecore._api.patch import MERGE_KEYS
from kubecore._util.timefmt import rfc3339

Path = tuple[str, ...]
FieldSet = frozenset[Path]
APPLY = "Apply"
UPDATE = "Update"
_SKIPPED_TOP = frozenset({"apiVersion", "kind", "status"})
_SKIPPED_META = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "resourceVersion",
        "generation",
        "managedFields",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    }
)
_LIST_KEYS = {key: value for key, value in MERGE_KEYS.items() if key != "conditions"}
"""The keyed lists an apply merges item by item (``conditions`` are status only)."""
_MISSING = object()


@attrs.frozen
class Entry:
    """One ``ManagedFieldsEntry``: what ``manager`` set by ``operation`` (Apply or Update)."""

    manager: str
    operation: str
    time: str
    fields: FieldSet

    def to_dict(self) -> dict[str, Any]:
        return {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": "v1",
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(self.fields),
        }


Entries = tuple[Entry, ...]


def entries_from(data: object) -> Entries:
    """The entries of a stored ``managedFields`` list (what cannot be read is left out)."""
    out: list[Entry] = []
    for item in data if isinstance(data, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("manager"), str):
            continue
        fields = from_fields_v1(item.get("fieldsV1"))
        operation = APPLY if item.get("operation") == APPLY else UPDATE
        out.append(Entry(item["manager"], operation, str(item.get("time") or ""), fields))
    return tuple(out)


# --- field sets ---------------------------------------------------------------------------


def _item_key(field: str, item: object) -> str | None:
    key = _LIST_KEYS.get(field)
    if key is None or not isinstance(item, dict) or key not in item:
        return None
    return "k:" + json.dumps({key: item[key]}, separators=(",", ":"), sort_keys=True)


def _keyed(field: str, items: list[Any]) -> bool:
    """Whether a list merges item by item: a keyed list whose items all have their key."""
    return bool(items) and all(_item_key(field, item) is not None for item in items)


def field_set(document: Mapping[str, Any]) -> FieldSet:
    """The fields an object sets (its leaves, and each item of its keyed lists)."""
    paths: set[Path] = set()
    for key, value in document.items():
        if key in _SKIPPED_TOP:
            continue
        if key == "metadata" and isinstance(value, dict):
            meta = {k: v for k, v in value.items() if k not in _SKIPPED_META}
            _collect(meta, ("f:metadata",), paths)
        else:
            _collect_value(key, value, (f"f:{key}",), paths)
    return frozenset(paths)


def _collect(mapping: Mapping[str, Any], path: Path, paths: set[Path]) -> None:
    for key, value in mapping.items():
        _collect_value(key, value, (*path, f"f:{key}"), paths)


def _collect_value(field: str, value: Any, path: Path, paths: set[Path]) -> None:
    if isinstance(value, dict) and value:
        _collect(value, path, paths)
    elif isinstance(value, list) and _keyed(field, value):
        for item in value:
            item_path = (*path, str(_item_key(field, item)))
            paths.add(item_path)
            _collect(item, item_path, paths)
    else:
        paths.add(path)


def value_at(document: Any, path: Path) -> Any:
    """The value at ``path`` (``_MISSING`` when there is none)."""
    node = document
    for token in path:
        node = _child(node, token)
        if node is _MISSING:
            break
    return node


def _child(node: Any, token: str) -> Any:
    if token.startswith("f:") and isinstance(node, dict):
        return node.get(token[2:], _MISSING)
    if token.startswith("k:") and isinstance(node, list):
        wanted = json.loads(token[2:])
        for item in node:
            if isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items()):
                return item
    return _MISSING


def remove_path(document: dict[str, Any], path: Path) -> None:
    """Take the field or list item at ``path`` out of ``document`` (nothing when absent)."""
    parent = value_at(document, path[:-1])
    last = path[-1]
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        item = _child(parent, last)
        if item is not _MISSING:
            parent.remove(item)


def to_fields_v1(fields: Iterable[Path]) -> dict[str, Any]:
    """The ``fieldsV1`` tree of a field set (``.`` marks an item owned with its fields)."""
    tree: dict[str, Any] = {}
    for path in sorted(fields):
        node = tree
        for token in path:
            node = node.setdefault(token, {})
    _mark_items(tree, set(fields), ())
    return tree


def _mark_items(tree: dict[str, Any], fields: set[Path], path: Path) -> None:
    for token, child in tree.items():
        here = (*path, token)
        if child and here in fields:
            child["."] = {}
        if token != ".":
            _mark_items(child, fields, here)


def from_fields_v1(tree: object, path: Path = ()) -> FieldSet:
    """The field set of a ``fieldsV1`` tree."""
    paths: set[Path] = set()
    if not isinstance(tree, dict):
        return frozenset()
    for token, child in tree.items():
        if token == ".":
            paths.add(path)
        elif isinstance(token, str) and token[:2] in ("f:", "k:"):
            if child:
                paths |= from_fields_v1(child, (*path, token))
            else:
                paths.add((*path, token))
    return frozenset(paths)


def dotted(path: Path) -> str:
    """A path as the API server names a field in a conflict:
    ``.spec.containers[name="a"].image``."""
    out = ""
    for token in path:
        if token.startswith("f:"):
            out += "." + token[2:]
        else:
            key = json.loads(token[2:])
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.items()) + "]"
    return out


# --- writes -------------------------------------------------------------------------------


def created(manager: str, operation: str, document: Mapping[str, Any], now: float) -> Entries:
    """The entries of an object created by ``manager``."""
    return (Entry(manager, operation, rfc3339(now), field_set(document)),)


def updated(
    entries: Entries,
    manager: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    now: float,
) -> Entries:
    """The entries after an Update by ``manager`` changed ``old`` into ``new``: the fields it
    changed are its own (and no one else's), the fields it removed are no one's."""
    new_set, old_set = field_set(new), field_set(old)
    changed = {
        path
        for path in new_set
        if path not in old_set
        or (not path[-1].startswith("k:") and value_at(new, path) != value_at(old, path))
    }
    removed = old_set - new_set
    out: list[Entry] = []
    mine = frozenset(changed)
    for entry in entries:
        left = entry.fields - removed - changed
        if (entry.manager, entry.operation) == (manager, UPDATE):
            mine = left | mine
        elif left:
            out.append(attrs.evolve(entry, fields=left))
    if mine:
        out.append(Entry(manager, UPDATE, rfc3339(now), mine))
    return tuple(out)


def applied(
    entries: Entries,
    manager: str,
    live: dict[str, Any],
    config: dict[str, Any],
    *,
    force: bool,
    now: float,
) -> tuple[dict[str, Any], Entries]:
    """Server-side apply of ``config`` by ``manager`` to ``live``: the merged object and the
    entries after it. A 409 naming every conflict unless ``force``."""
    applying = field_set(config)
    conflicts = [
        (entry.manager, path)
        for entry in entries
        if entry.manager != manager
        for path in sorted(entry.fields & applying)
        if not path[-1].startswith("k:") and value_at(config, path) != value_at(live, path)
    ]
    if conflicts and not force:
        raise _conflict(conflicts)
    before = next(
        (e.fields for e in entries if (e.manager, e.operation) == (manager, APPLY)), frozenset()
    )
    others: list[Entry] = []
    for entry in entries:
        if (entry.manager, entry.operation) == (manager, APPLY):
            continue
        left = entry.fields if entry.manager == manager else entry.fields - _taken(conflicts)
        if left:
            others.append(attrs.evolve(entry, fields=left))
    kept: set[Path] = set().union(*(e.fields for e in others)) if others else set()
    merged = merge_applied(copy.deepcopy(live), config, "")
    # Parents first: an item removed takes its fields with it (its key among them).
    for path in sorted(before - applying - kept, key=len):
        remove_path(merged, path)
    return merged, (*others, Entry(manager, APPLY, rfc3339(now), applying))


def _taken(conflicts: list[tuple[str, Path]]) -> frozenset[Path]:
    return frozenset(path for _, path in conflicts)


def merge_applied(live: Any, config: Any, field: str) -> Any:
    """``config`` merged into ``live``: maps by key, keyed lists by item, the rest replaced."""
    if isinstance(live, dict) and isinstance(config, dict):
        result = dict(live)
        for key, value in config.items():
            result[key] = merge_applied(live.get(key), value, key)
        return result
    if isinstance(live, list) and isinstance(config, list) and _keyed(field, config):
        if not _keyed(field, live):
            return copy.deepcopy(config)
        result_list = list(live)
        for item in config:
            token = _item_key(field, item)
            at = next(
                (i for i, old in enumerate(result_list) if _item_key(field, old) == token), -1
            )
            if at >= 0:
                result_list[at] = merge_applied(result_list[at], item, "")
            else:
                result_list.append(copy.deepcopy(item))
        return result_list
    return copy.deepcopy(config)


def _conflict(conflicts: list[tuple[str, Path]]) -> ApiError:
    count = len(conflicts)
    managers = sorted({manager for manager, _ in conflicts})
    if len(managers) == 1 and count == 1:
        manager, path = conflicts[0]
        summary = f'conflict with "{manager}" using v1: {dotted(path)}'
    else:
        lines = [
            f'conflicts with "{manager}" using v1:\n'
            + "\n".join(f"- {dotted(p)}" for m, p in conflicts if m == manager)
            for manager in managers
        ]
        summary = "\n".join(lines)
    noun = "conflict" if count == 1 else "conflicts"
    return ApiError(
        HTTPStatus.CONFLICT,
        "Conflict",
        f"Apply failed with {count} {noun}: {summary}",
        details={
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": f'conflict with "{manager}" using v1',
                    "field": dotted(path),
                }
                for manager, path in conflicts
            ]
        },
    )


class ManagedFieldsBook:
    """The entries of each object the API owns, by ``(kind, namespace, name)``."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str, str], Entries] = {}

    def get(self, kind: str, namespace: str, name: str) -> Entries:
        return self._entries.get((kind, namespace, name), ())

    def put(self, kind: str, namespace: str, name: str, entries: Entries) -> None:
        key = (kind, namespace, name)
        self._entries = {**self._entries, key: entries}

    def forget(self, kind: str, namespace: str, name: str) -> None:
        key = (kind, namespace, name)
        self._entries = {k: v for k, v in self._entries.items() if k != key}

    def shown(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` (an object served) with its ``metadata.managedFields`` (a copy: ``body`` is
        left as it is)."""
        meta = body.get("metadata") or {}
        entries = self.get(
            str(body.get("kind", "")), meta.get("namespace", ""), meta.get("name", "")
        )
        if not entries:
            return body
        return {**body, "metadata": {**meta, "managedFields": [e.to_dict() for e in entries]}}
