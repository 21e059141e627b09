"""The benchmarks page's tables (``<!-- generated: benchmark-NAME -->``), rendered from the
committed record ``docs/benchmarks/figures.json``: each figure is one a run printed, beside its
baseline (and, when that was not measured in the same run, what it is instead), with the command,
commit, machine and load of the run that wrote it."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from benchmarks._common import Row, fmt_met, fmt_ratio, fmt_value
from benchmarks._record import COMMITTED, read, rows_of

HEADER = "| figure | kubecore | baseline | ratio | target | met? |\n|---|---|---|---|---|---|"


def baseline_cell(row: Row) -> str:
    """The baseline with what it is: its label, and its source when the run did not measure it."""
    cell = fmt_value(row.baseline, row.unit)
    words = "; ".join(part for part in (row.baseline_label, row.baseline_source) if part)
    return f"{cell} ({words})" if words and row.baseline is not None else cell


def table_row(row: Row) -> str:
    cells = (
        row.figure,
        fmt_value(row.kubecore, row.unit),
        baseline_cell(row),
        fmt_ratio(row.ratio),
        row.target or "—",
        fmt_met(row.met),
    )
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def provenance(name: str, part: Mapping[str, object]) -> str:
    machine = part["machine"]
    assert isinstance(machine, dict)
    before, after = part["load_before"], part["load_after"]
    assert isinstance(before, list) and isinstance(after, list)
    mode = "full mode" if part["mode"] == "full" else "quick mode (CI sizes: proves it runs)"
    commit = str(part["commit"])
    return (
        f"*`{part['command']}`, {mode}, {part['seconds']} s at commit `{commit[:10]}"
        f"{'+dirty' if commit.endswith('+dirty') else ''}`, {part['finished']}; Python "
        f"{machine['python']} on {machine['cores']} cores, load average (1 min) {before[0]} "
        f"before and {after[0]} after.*"
    )


def render(name: str, record: Mapping[str, Mapping[str, Mapping[str, object]]]) -> str:
    part = record["benchmarks"].get(name)
    command = f"python -m benchmarks --only {name} --record docs/benchmarks/figures.json"
    if part is None:
        return f"*No figures of `{name}` in the record: `{command}` adds them.*\n"
    lines = []
    rows = rows_of({"benchmarks": {name: part}})
    if rows:
        lines += [HEADER, *(table_row(row) for row in rows), ""]
    if part.get("skipped"):
        lines += [f"*Skipped: {part['skipped']}*", ""]
    if part.get("crashed"):
        lines += ["*Crashed: no figures.*", ""]
    lines.append(provenance(name, part))
    notes = part.get("notes") or []
    assert isinstance(notes, list)
    if notes:
        lines += ["", "The run's notes:", ""]
        lines += [f"- {' '.join(str(note).split())}" for note in notes]
    return "\n".join(lines) + "\n"


def generators() -> dict[str, Callable[[], str]]:
    from benchmarks.__main__ import BENCHMARKS

    def one(name: str) -> Callable[[], str]:
        return lambda: render(name, read(COMMITTED))

    return {f"benchmark-{name.replace('_', '-')}": one(name) for name in BENCHMARKS}
