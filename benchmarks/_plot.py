"""Plots of a run's figures, where a curve says more than a table (``python -m benchmarks
--plot DIR``): the agent's cost per pod against the pod count, and the time to start pods against
their count for each tool. ``curves`` reads the curves out of the rows (no plotting library
needed); ``draw`` writes one PNG a plot with matplotlib (``pip install kubecore[plot]``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from benchmarks._common import Row

Curve = list[tuple[int, float]]


@attrs.frozen
class Plot:
    """One picture: its file name, its title and axes, and its curves by label."""

    name: str
    title: str
    x_label: str
    y_label: str
    scale: float
    """What a figure is multiplied by for the y axis (1e6: seconds shown as µs)."""
    pattern: re.Pattern[str]
    """Matches a row's figure: group ``n`` is the pod count, ``label`` the curve's name."""
    baseline: str = ""
    """The curve a row's baseline goes to ("": the label the pattern's ``peer`` group names)."""


PLOTS = (
    Plot(
        "cost_per_pod.png",
        "The agent's cost per pod against the pod count (sync_cost)",
        "pods on the node",
        "time per pod and pass (µs)",
        1e6,
        re.compile(r"^(?P<label>relist|resync) pass, (?P<n>[\d,]+) pods: time per pod$"),
        baseline="a bare loop over the pods",
    ),
    Plot(
        "start_time_once.png",
        "kubecore run --once against other tools, whole processes (once_start)",
        "pods",
        "seconds from the command to every pod running",
        1.0,
        re.compile(r"^--once (?P<n>[\d,]+) pods \(whole process\): kubecore vs (?P<peer>.+)$"),
    ),
    Plot(
        "start_time_docker.png",
        "Pods from nothing to running on Docker (docker_start)",
        "pods",
        "seconds",
        1.0,
        re.compile(r"^start (?P<n>[\d,]+) pods: kubecore vs (?P<peer>.+)$"),
    ),
)


def _add(curves: dict[str, Curve], label: str, n: int, value: float | None, scale: float) -> None:
    if value is None:
        return
    points = curves.setdefault(label, [])
    if all(x != n for x, _ in points):
        points.append((n, value * scale))
        points.sort()


def curves(plot: Plot, rows: Iterable[Row]) -> dict[str, Curve]:
    """The plot's curves from the rows that match it, each sorted by pod count."""
    found: dict[str, Curve] = {}
    for row in rows:
        match = plot.pattern.match(row.figure)
        if match is None:
            continue
        n = int(match.group("n").replace(",", ""))
        groups = match.groupdict()
        label = f"kubecore, {groups['label']} pass" if groups.get("label") else "kubecore"
        _add(found, label, n, row.kubecore, plot.scale)
        _add(found, plot.baseline or groups.get("peer") or "", n, row.baseline, plot.scale)
    return found


def draw(rows: Sequence[Row], directory: Path) -> list[Path]:
    """One PNG per plot whose figures in ``rows`` make a curve; the paths written."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install 'kubecore[plot]'") from None
    matplotlib.use("Agg")  # files only: no display
    from matplotlib import pyplot

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for plot in PLOTS:
        found = curves(plot, rows)
        if not any(len(points) > 1 for points in found.values()):
            continue  # a curve needs two pod counts at least
        figure, axes = pyplot.subplots(figsize=(7, 4.5))
        for label, points in found.items():
            axes.plot([x for x, _ in points], [y for _, y in points], marker="o", label=label)
        counts = [x for points in found.values() for x, _ in points]
        if max(counts) >= 10 * min(counts):
            axes.set_xscale("log")
        axes.set_title(plot.title, fontsize=10)
        axes.set_xlabel(plot.x_label)
        axes.set_ylabel(plot.y_label)
        axes.set_ylim(bottom=0)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=8)
        figure.tight_layout()
        path = directory / plot.name
        figure.savefig(path, dpi=120)
        pyplot.close(figure)
        written.append(path)
    return written


def rows_from_json(data: dict[str, object]) -> list[Row]:
    """The rows of a ``--json`` file (its ``ratio`` is derived, not stored)."""
    if "benchmarks" in data:  # a record (benchmarks._record)
        from benchmarks._record import rows_of

        return rows_of(data)  # type: ignore[arg-type]
    fields = {field.name for field in attrs.fields(Row)}
    raw = data.get("rows", [])
    assert isinstance(raw, list)
    return [Row(**{k: v for k, v in row.items() if k in fields}) for row in raw]
