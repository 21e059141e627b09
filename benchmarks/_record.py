"""The record of a run (``--json FILE``, ``--record FILE``): for each benchmark, its rows (figure,
baseline and where the baseline comes from), its notes, the command, the commit and the machine
(cores, load average before and after it ran, Python). The documentation's tables are rendered
from the committed record (``docs/benchmarks/figures.json``), never typed in."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from benchmarks._common import Row

FORMAT = 2
COMMITTED = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "figures.json"
"""The record the documentation is generated from."""


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def git_commit() -> str:
    """The commit the benchmarks ran from, with ``+dirty`` when the tree had changes."""
    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "kubecore", "benchmarks")
    return commit + ("+dirty" if dirty else "")


def machine() -> dict[str, object]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cores": os.cpu_count(),
    }


def entry(
    *,
    mode: str,
    command: str,
    commit: str,
    load_before: list[float],
    load_after: list[float],
    seconds: float,
    rows: Iterable[Row],
    notes: Iterable[str],
    skipped: str | None = None,
    crashed: str | None = None,
) -> dict[str, object]:
    """One benchmark's part of the record, as its run wrote it."""
    return {
        "mode": mode,
        "command": command,
        "commit": commit,
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_after,
        "seconds": round(seconds, 1),
        "rows": [row.to_json() for row in rows],
        "notes": list(notes),
        "skipped": skipped,
        "crashed": crashed,
    }


def write(path: Path, entries: Mapping[str, dict[str, object]], *, merge: bool) -> None:
    """Write ``entries`` to ``path``; with ``merge``, over the benchmarks of the record already
    there (each benchmark's entry is replaced whole, the others kept as their runs wrote them)."""
    benchmarks: dict[str, object] = {}
    if merge and path.exists():
        benchmarks.update(read(path)["benchmarks"])
    benchmarks.update(entries)
    data = {"format": FORMAT, "benchmarks": benchmarks}
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read(path: Path = COMMITTED) -> dict[str, dict[str, dict[str, object]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a benchmark record of format {FORMAT}")
    return data  # type: ignore[no-any-return]


def rows_of(record: Mapping[str, Mapping[str, Mapping[str, object]]]) -> list[Row]:
    """Every row of a record, benchmark by benchmark (``ratio`` is derived, not read)."""
    import attrs

    fields = {field.name for field in attrs.fields(Row)}
    rows: list[Row] = []
    for part in record["benchmarks"].values():
        raw = part.get("rows", [])
        assert isinstance(raw, list)
        rows.extend(Row(**{k: v for k, v in row.items() if k in fields}) for row in raw)
    return rows


def missed_strict(rows: Iterable[Row]) -> list[Row]:
    """The rows whose target ``--strict`` enforces and that missed it."""
    return [row for row in rows if row.strict and row.met is False]
