"""The README's table of figures, generated from the committed benchmark record
(``docs/benchmarks/figures.json``): ``python scripts/readme_figures.py`` rewrites it in place,
``--check`` exits 1 when the README's table is not what the record gives (the test suite runs
that check). Each row is the last figure of its benchmark whose name matches (the largest size
run), so a run at other sizes still fills the table."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._record import COMMITTED, read, rows_of  # noqa: E402
from scripts.docgen.benchmark_figures import baseline_cell  # noqa: E402

README = ROOT / "README.md"
START = "<!-- figures: generated from docs/benchmarks/figures.json by scripts/readme_figures.py -->"
END = "<!-- figures: end -->"

# (benchmark, figure name pattern): one README row each, in this order.
PICKS: tuple[tuple[str, str], ...] = (
    ("sync_cost", r"resync pass, [\d,]+ pods: time per pod$"),
    ("convergence", r"cold convergence, CPU time per pod"),
    ("docker_start", r"start \d+ pods: kubecore vs docker-py direct$"),
    ("once_start", r"--once \d+ pods \(whole process\): kubecore vs docker-py same calls$"),
    ("cri_start", r"daemon start \d+ pods on containerd: kubecore vs bare CRI client$"),
    ("startup", r"start-up of `kubecore version`"),
    ("manifest_watch", r"manifest edit -> pod running: median$"),
)


def render(record: Mapping[str, Mapping[str, Mapping[str, object]]]) -> str:
    from benchmarks._common import fmt_value

    lines = ["| figure | kubecore | baseline | run | command |", "| --- | --- | --- | --- | --- |"]
    for name, pattern in PICKS:
        part = record["benchmarks"].get(name)
        found = [
            row
            for row in rows_of({"benchmarks": {name: part}} if part else {"benchmarks": {}})
            if re.match(pattern, row.figure)
        ]
        if part is None or not found:
            continue
        row = found[-1]
        load = part["load_before"]
        assert isinstance(load, list)
        run = f"{part['mode']}, load {load[0]}"
        cells = (row.figure, fmt_value(row.kubecore, row.unit), baseline_cell(row), run)
        cells = tuple(cell.replace("|", "\\|") for cell in cells)
        lines.append("| " + " | ".join(cells) + f" | `python -m benchmarks --only {name}` |")
    return "\n".join(lines)


def with_table(readme: str, table: str) -> str:
    head, found, rest = readme.partition(START)
    if not found or END not in rest:
        raise SystemExit(f"README.md has no {START!r} ... {END!r} section")
    return head + START + "\n" + table + "\n" + END + rest.split(END, 1)[1]


def main(argv: Sequence[str]) -> int:
    text = README.read_text(encoding="utf-8")
    wanted = with_table(text, render(read(COMMITTED)))
    if "--check" in argv:
        if wanted != text:
            print("README.md's figures are not the record's: python scripts/readme_figures.py")
            return 1
        return 0
    README.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
