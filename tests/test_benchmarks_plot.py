"""The benchmarks' plots: the curves read out of a run's rows, the PNGs drawn from them, and the
plots the documentation shows, drawn from the committed record."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.__main__ import main
from benchmarks._common import Row
from benchmarks._plot import PLOTS, curves, draw
from tests.paths import REPO

FIGURES = REPO / "docs" / "benchmarks" / "figures.json"
PAGE = REPO / "docs" / "benchmarks.md"
COST, ONCE, _ = PLOTS


def sync_row(kind: str, n: int, seconds: float, base: float) -> Row:
    return Row("sync_cost", f"{kind} pass, {n:,} pods: time per pod", seconds, "s", baseline=base)


def test_the_cost_curves_come_from_the_time_per_pod_rows() -> None:
    rows = [
        sync_row("relist", 1000, 2e-6, 1e-7),
        sync_row("relist", 100, 3e-6, 2e-7),
        sync_row("resync", 100, 9e-6, 2e-7),
        Row("sync_cost", "relist pass, 100 pods: time per sync", 3e-4, "s", baseline=2e-5),
        Row("sync_cost", "relist pass, 10,000 pods: runtime calls per sync", 1.0),
    ]
    found = curves(COST, rows)
    assert found["kubecore, relist pass"] == [(100, pytest.approx(3.0)), (1000, pytest.approx(2.0))]
    assert found["kubecore, resync pass"] == [(100, pytest.approx(9.0))]
    assert found["a bare loop over the pods"] == [
        (100, pytest.approx(0.2)),
        (1000, pytest.approx(0.1)),
    ]


def test_each_peer_is_a_curve_of_its_own() -> None:
    figure = "--once {n} pods (whole process): kubecore vs {peer}"
    rows = [
        Row("once_start", figure.format(n=n, peer=peer), ours, "s", baseline=theirs)
        for n, ours in ((10, 2.0), (50, 8.0))
        for peer, theirs in (("docker-py same calls", ours - 0.5), ("podman kube play", None))
    ]
    found = curves(ONCE, rows)
    assert found == {
        "kubecore": [(10, 2.0), (50, 8.0)],
        "docker-py same calls": [(10, 1.5), (50, 7.5)],
    }


def test_the_documented_plots_are_drawn_from_the_record(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    assert main(["--plot", str(tmp_path), "--from-json", str(FIGURES)]) == 0
    drawn = sorted(path.name for path in tmp_path.iterdir())
    shown = sorted(re.findall(r"\(benchmarks/([a-z_]+\.png)\)", PAGE.read_text()))
    assert drawn == shown
    for name in drawn:
        assert (PAGE.parent / "benchmarks" / name).exists()


def test_a_lone_point_is_not_a_curve(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    assert draw([sync_row("relist", 100, 1e-6, 1e-7)], tmp_path) == []


def test_from_json_needs_plot() -> None:
    with pytest.raises(SystemExit, match="--from-json needs --plot"):
        main(["--from-json", str(FIGURES)])
