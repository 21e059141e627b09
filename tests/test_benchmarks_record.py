"""The benchmark record and the pages generated from it: every figure on the benchmarks page and
in the README is one the committed record holds (as a run wrote it), with where its baseline comes
from; ``--record`` merges a run into a record; ``--strict`` fails on a missed strict target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import benchmarks.__main__ as runner
from benchmarks._common import Context, Row
from benchmarks._record import COMMITTED, read, rows_of, write
from scripts import readme_figures
from scripts.docgen import expand, markers
from scripts.docgen.benchmark_figures import baseline_cell, render, table_row
from tests.paths import REPO

PAGE = REPO / "docs" / "benchmarks.md"


def test_every_figure_of_the_record_is_on_the_built_page() -> None:
    record = read(COMMITTED)
    built = expand(PAGE.read_text(), "benchmarks.md")
    rows = rows_of(record)
    assert rows
    for row in rows:
        assert table_row(row) in built, row.figure
    for name, part in record["benchmarks"].items():
        assert str(part["command"]) in built and str(part["commit"])[:10] in built, name


def test_the_page_types_in_no_figure_of_its_own() -> None:
    source = PAGE.read_text()
    assert not [line for line in source.splitlines() if line.startswith("|")]
    wanted = {f"benchmark-{name.replace('_', '-')}" for name in runner.BENCHMARKS}
    assert set(markers(source)) == wanted


def test_the_readme_table_is_what_the_record_gives() -> None:
    assert readme_figures.main(["--check"]) == 0
    table = readme_figures.render(read(COMMITTED))
    rows = table.splitlines()[2:]
    assert len(rows) >= 4
    figures = {table_row(row).split(" | ")[0][2:] for row in rows_of(read(COMMITTED))}
    for line in rows:
        assert line.split(" | ")[0][2:] in figures, line


def test_the_readme_check_fails_on_an_edited_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = tmp_path / "README.md"
    text = (REPO / "README.md").read_text()
    table = readme_figures.render(read(COMMITTED)).splitlines()
    edited = text.replace(table[2], table[2].replace(" | ", " | 9", 1))
    assert edited != text
    readme.write_text(edited)
    monkeypatch.setattr(readme_figures, "README", readme)
    assert readme_figures.main(["--check"]) == 1
    assert readme_figures.main([]) == 0
    assert readme.read_text() == text


def test_a_baseline_not_measured_in_the_run_says_what_it_is() -> None:
    quoted = Row("b", "f", 1.0, "B", baseline=1e8, baseline_source="a constant, quoted")
    assert baseline_cell(quoted) == "100 MB (a constant, quoted)"
    assert baseline_cell(Row("b", "f", 1.0, "s", baseline=2.0)) == "2.00 s"
    for row in rows_of(read(COMMITTED)):
        if row.benchmark in ("reaction", "docker_requests") or "hollow" in row.baseline_source:
            assert row.baseline is None or row.baseline_source, row.figure


def test_a_benchmark_missing_from_the_record_says_how_to_add_it() -> None:
    text = render("soak", {"benchmarks": {}})
    assert "No figures of `soak`" in text and "--record docs/benchmarks/figures.json" in text


def fake_runs(rows: list[Row]) -> object:
    def run_one(name: str, quick: bool, profile: bool = False) -> tuple[object, ...]:
        ctx = Context(name=name, quick=quick, budget=1.0, command="c")
        ctx.notes.append(f"{name} measured")
        return [r for r in rows if r.benchmark == name], ctx, None, None

    return run_one


def test_a_run_records_its_figures_commit_machine_and_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "run_one", fake_runs([Row("startup", "f", 1.0, "s", 2.0)]))
    out = tmp_path / "run.json"
    assert runner.main(["--quick", "--only", "startup", "--json", str(out)]) == 0
    part = read(out)["benchmarks"]["startup"]
    assert part["mode"] == "quick" and part["notes"] == ["startup measured"]
    assert len(str(part["commit"]).split("+")[0]) == 40
    machine = part["machine"]
    assert isinstance(machine, dict) and machine["cores"] and machine["python"]
    assert len(part["load_before"]) == 3 and len(part["load_after"]) == 3  # type: ignore[arg-type]
    assert [r.kubecore for r in rows_of(read(out))] == [1.0]


def test_record_replaces_only_the_benchmarks_that_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "record.json"
    write(out, {"soak": {"rows": [], "kept": True}, "startup": {"rows": []}}, merge=False)
    monkeypatch.setattr(runner, "run_one", fake_runs([Row("startup", "f", 3.0, "s")]))
    assert runner.main(["--quick", "--only", "startup", "--record", str(out)]) == 0
    data = json.loads(out.read_text())["benchmarks"]
    assert data["soak"] == {"rows": [], "kept": True}
    assert [row["kubecore"] for row in data["startup"]["rows"]] == [3.0]


@pytest.mark.parametrize(
    ("row", "strict_exit"),
    [
        (Row("sync_cost", "calls", 2.0, target="1 list call", met=False, strict=True), 1),
        (Row("sync_cost", "calls", 1.0, target="1 list call", met=True, strict=True), 0),
        (Row("sync_cost", "wall time", 9.0, "s", target="<= 1 s", met=False), 0),
    ],
)
def test_strict_fails_only_on_a_missed_strict_target(
    row: Row, strict_exit: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner, "run_one", fake_runs([row]))
    assert runner.main(["--quick", "--only", "sync_cost"]) == 0
    assert runner.main(["--quick", "--strict", "--only", "sync_cost"]) == strict_exit
    assert ("missed (strict): sync_cost: calls" in capsys.readouterr().err) == bool(strict_exit)
