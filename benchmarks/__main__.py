"""``python -m benchmarks [--quick [--strict]] [--only NAME ...] [--json FILE | --record FILE]
[--plot DIR]``: run, then print the table (and write the record, draw the plots).

Full mode (the default) gives the figures the documentation quotes and may install the peers it
compares against (Docker Compose, podman) from the distribution; it takes up to ~15 minutes on a
2-core machine (every loop is bounded in count and in time). ``--quick`` is for CI: small N, no
installs, a couple of minutes at most; it fails when a benchmark crashes and, with ``--strict``,
when a target that holds on a loaded 2-core machine is missed (the rows marked ``strict``).
``--json FILE`` writes the run's record (figures, baselines, notes, commit, machine and load);
``--record FILE`` merges it into an existing record, each benchmark that ran replacing its own
entry: ``--record docs/benchmarks/figures.json`` is how the documented figures are renewed.
``--plot DIR`` draws the curves of the run into DIR (matplotlib: ``pip install kubecore[plot]``);
with ``--from-json FILE`` it draws those of an earlier ``--json`` run, running nothing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from benchmarks import _record
from benchmarks._common import Context, Row, Skip, render_table
from benchmarks._plot import rows_from_json

# name -> (seconds allowed in full mode, in quick mode); run in this order.
BENCHMARKS: dict[str, tuple[float, float]] = {
    "sync_cost": (300.0, 20.0),
    "convergence": (300.0, 20.0),
    "memory_per_pod": (120.0, 15.0),
    "many_nodes": (150.0, 15.0),
    "reaction": (90.0, 30.0),
    "subscribe": (180.0, 40.0),
    "docker_requests": (150.0, 20.0),
    "docker_start": (240.0, 30.0),
    "once_start": (900.0, 60.0),
    "cri_requests": (150.0, 20.0),
    "cri_start": (900.0, 30.0),
    "cri_once": (1200.0, 45.0),
    "startup": (60.0, 15.0),
    "manifest_watch": (90.0, 20.0),
    "soak": (1000.0, 40.0),
    "etcd_nodes": (400.0, 30.0),
    "kubectl_streams": (240.0, 45.0),
    "plan": (600.0, 60.0),
}


def command_for(name: str, quick: bool) -> str:
    return f"python -m benchmarks --only {name}" + (" --quick" if quick else "")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small N, prove each still runs")
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(BENCHMARKS),
        metavar="NAME",
        help=f"run only this benchmark (repeatable): {', '.join(BENCHMARKS)}",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit non-zero when a target marked strict (holds on a loaded machine) is missed",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the run's record to FILE")
    parser.add_argument(
        "--record",
        metavar="FILE",
        help="merge the run's record into FILE (each benchmark run replaces its entry)",
    )
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument(
        "--plot",
        metavar="DIR",
        help="also draw the curves (cost per pod, start time against pods) into DIR as PNG",
    )
    parser.add_argument(
        "--from-json",
        metavar="FILE",
        help="with --plot: draw the figures of an earlier --json run instead of running",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print cProfile's hottest functions for the in-process benchmarks (stderr)",
    )
    return parser.parse_args(argv)


def run_one(
    name: str, quick: bool, profile: bool = False
) -> tuple[list[Row], Context, str | None, str | None]:
    """Rows, context, skip reason, crash traceback."""
    full_budget, quick_budget = BENCHMARKS[name]
    ctx = Context(
        name=name,
        quick=quick,
        budget=quick_budget if quick else full_budget,
        command=command_for(name, quick),
        install=not quick,
        profile=profile,
    )
    ctx.log("start")
    try:
        module = importlib.import_module(f"benchmarks.{name}")
        run = cast(Callable[[Context], list[Row]], module.run)
        rows = run(ctx)
    except Skip as skip:
        ctx.log(f"skipped: {skip}")
        return [], ctx, str(skip), None
    except Exception:
        trace = traceback.format_exc()
        ctx.log(f"crashed:\n{trace}")
        return [], ctx, None, trace
    ctx.log(f"done ({len(rows)} figures)")
    return rows, ctx, None, None


def plot(rows: Sequence[Row], directory: str) -> None:
    from pathlib import Path

    from benchmarks._plot import draw

    written = draw(rows, Path(directory))
    print("plots: " + (", ".join(str(path) for path in written) or "none (no figure to draw)"))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for name in BENCHMARKS:
            print(name)
        return 0
    if args.from_json:
        if not args.plot:
            raise SystemExit("--from-json needs --plot DIR")
        with open(args.from_json, encoding="utf-8") as saved:
            plot(rows_from_json(json.load(saved)), args.plot)
        return 0
    names = [n for n in BENCHMARKS if not args.only or n in args.only]
    started = time.monotonic()
    commit = _record.git_commit()
    rows: list[Row] = []
    notes: dict[str, list[str]] = {}
    skipped: dict[str, str] = {}
    crashed: dict[str, str] = {}
    entries: dict[str, dict[str, object]] = {}
    for name in names:
        load_before, t0 = _record.load_average(), time.monotonic()
        got, ctx, skip, trace = run_one(name, args.quick, args.profile)
        entries[name] = _record.entry(
            mode="quick" if args.quick else "full",
            command=command_for(name, args.quick),
            commit=commit,
            load_before=load_before,
            load_after=_record.load_average(),
            seconds=time.monotonic() - t0,
            rows=got,
            notes=ctx.notes,
            skipped=skip,
            crashed=trace,
        )
        rows.extend(got)
        notes[name] = list(ctx.notes)
        if skip is not None:
            skipped[name] = skip
        if trace is not None:
            crashed[name] = trace
    elapsed = time.monotonic() - started

    mode = (
        "quick (CI: proves each benchmark runs; figures are not meaningful)"
        if args.quick
        else "full"
    )
    info = _record.machine()
    print()
    print(
        f"kubecore benchmarks, {mode} mode, {elapsed:.0f} s; Python {info['python']} on "
        f"{info['cores']} cores ({info['platform']}), commit {commit}"
    )
    print()
    print(render_table(rows) if rows else "(no figures)")
    print()
    for name in names:
        print(f"{name}: `{command_for(name, args.quick)}`")
        if name in skipped:
            print(f"  - skipped: {skipped[name]}")
        if name in crashed:
            print("  - CRASHED (traceback above)")
        for note in notes[name]:
            print(f"  - {note}")
    if args.json:
        _record.write(Path(args.json), entries, merge=False)
    if args.record:
        _record.write(Path(args.record), entries, merge=True)
    if args.plot:
        plot(rows, args.plot)
    if crashed:
        print(f"\ncrashed: {', '.join(crashed)}", file=sys.stderr)
        return 1
    missed = _record.missed_strict(rows) if args.strict else []
    for row in missed:
        print(f"missed (strict): {row.benchmark}: {row.figure}: {row.target}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
