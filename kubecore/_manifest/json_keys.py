"""JSON objects that repeat a key: Python's decoder keeps the last value silently, Kubernetes
refuses them (as YAML's are refused, ``kubecore._manifest.documents``). ``json_object`` is the
decoder's ``object_pairs_hook``; ``repeated_keys`` then names each repeated key with its path."""

from __future__ import annotations

from typing import Any


class _RepeatedKeys(dict[str, Any]):
    """A JSON object that names a key more than once (``repeated``, in order; the last value
    kept): found after parsing, where its path is known."""

    repeated: list[str]


def json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A decoded JSON object, marked when it repeats a key."""
    mapping: dict[str, Any] = {}
    repeated = []
    for key, value in pairs:
        if key in mapping:
            repeated.append(key)
        mapping[key] = value
    if not repeated:
        return mapping
    marked = _RepeatedKeys(mapping)
    marked.repeated = repeated
    return marked


def repeated_keys(document: object) -> list[str]:
    """A note for each key a JSON object of ``document`` repeats, with the object's path
    (``spec.containers[0]``), as Kubernetes refuses them (no recursion)."""
    notes: list[str] = []
    pending: list[tuple[object, str]] = [(document, "")]
    while pending:
        item, path = pending.pop()
        if isinstance(item, dict):
            if isinstance(item, _RepeatedKeys):
                where = f" in {path}" if path else ""
                notes.extend(f"duplicate key {key!r}{where}" for key in item.repeated)
            pending.extend((v, f"{path}.{k}" if path else str(k)) for k, v in item.items())
        elif isinstance(item, list):
            pending.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return sorted(notes)
