"""The Pod field table, generated from the decoding tables so that it cannot drift.

Every field of a Pod's ``metadata`` and ``spec`` (and ``apiVersion``/``kind``) with what kubecore
does with it: honoured, accepted as scheduler-only (it means something to a scheduler, nothing to
a node's agent), accepted and ignored (what an API server keeps about an object), or refused with
the reason (``fields.REASONS``, or the decoding table's own). The documentation site's Pod
fields page renders it when the site is built; ``python -m kubecore._manifest.field_table``
prints it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence

from kubecore._manifest import decoding as d
from kubecore._manifest.fields import (
    CONDITIONS,
    REFUSED_BY_VALIDATION,
    SCHEDULER_ONLY,
    field_pattern,
    refusal_reason,
)

HONOURED = "honoured"
SCHEDULER = "accepted, scheduler-only (no effect on a node)"
API_SERVER = "accepted and ignored (the API server's bookkeeping)"
_SKIPPED = frozenset({"status"})
"""Written by the agent, not read from a manifest's intent (the status section of /pods)."""


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def _scheduler_only(path: str) -> bool:
    return any(_under(path, s) for s in SCHEDULER_ONLY)


def _what(path: str) -> str:
    """What kubecore does with a field the decoding tables read."""
    if _scheduler_only(path):
        return SCHEDULER
    pattern = field_pattern(path)
    for prefix, reason in REFUSED_BY_VALIDATION.items():
        if _under(pattern, prefix):
            return f"refused: {reason}"
    for prefix, condition in CONDITIONS.items():
        if _under(pattern, prefix):
            return f"{HONOURED} {condition}"
    return HONOURED


def _rows(spec: d._Spec, path: str, seen: dict[int, str]) -> Iterator[tuple[str, str]]:
    # Containers before init containers, so that the init containers' row points to them.
    for field in sorted(spec.fields, key=lambda f: f.json != "containers"):
        if not path and field.json in _SKIPPED:
            continue
        where = _join(path, field.json)
        kind = field.kind
        if isinstance(kind, d._Obj | d._ObjList):
            inner = where + "[]" if isinstance(kind, d._ObjList) else where
            # A table met before (init containers are containers): one row pointing there.
            if len(kind.spec.fields) > 1 and id(kind.spec) in seen:
                what = _what(where)  # refused here (on an ephemeral container), else as there
                refused = what.startswith("refused")
                yield inner, what if refused else f"the fields of `{seen[id(kind.spec)]}`"
                continue
            seen.setdefault(id(kind.spec), inner)
            yield from _rows(kind.spec, inner, seen)
        else:
            yield where, _what(where)
    for name in sorted(spec.unsupported):
        where = _join(path, name)
        yield where, f"refused: {refusal_reason(field_pattern(where))}"
    for name, reason in sorted(spec.refused.items()):
        yield _join(path, name), f"refused: {reason}"
    for name in sorted(spec.ignored):
        yield _join(path, name), API_SERVER


def field_rows() -> list[tuple[str, str]]:
    """``(JSON path, what kubecore does)`` for every Pod field, in the tables' order."""
    return list(_rows(d._POD, "", {}))


def field_table() -> str:
    """The Markdown table, one line per field."""
    lines = ["| Pod field | kubecore |", "| --- | --- |"]
    lines += [f"| `{path}` | {what} |" for path, what in field_rows()]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(description="Print the Pod field table (Markdown)").parse_args(argv)
    sys.stdout.write(field_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
