"""``python -m benchmarks [--quick] [--only NAME ...] [--json FILE] [--plot DIR]``: run, then
print the table (and draw the plots).

Full mode (the default) gives the figures the documentation quotes and may install the peers it
compares against (Docker Compose, podman) from the distribution; it takes up to ~15 minutes on a
2-core machine (every loop is bounded in count and in time). ``--quick`` is for CI: small N, no
installs, a couple of minutes at most; it fails only when a benchmark crashes, never on a figure.
``--plot DIR`` draws the curves of the run into DIR (matplotlib: ``pip install kubecore[plot]``);
with ``--from-json FILE`` it draws those of an earlier ``--json`` run, running nothing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import cast

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


def machine() -> dict[str, object]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }


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
    parser.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
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
    rows: list[Row] = []
    notes: dict[str, list[str]] = {}
    skipped: dict[str, str] = {}
    crashed: dict[str, str] = {}
    for name in names:
        got, ctx, skip, trace = run_one(name, args.quick, args.profile)
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
    info = machine()
    print()
    print(
        f"kubecore benchmarks, {mode} mode, {elapsed:.0f} s; Python {info['python']} on "
        f"{info['cpus']} CPUs ({info['platform']})"
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
        data = {
            "mode": "quick" if args.quick else "full",
            "seconds": elapsed,
            "machine": info,
            "rows": [r.to_json() for r in rows],
            "notes": notes,
            "skipped": skipped,
            "crashed": crashed,
            "commands": {n: command_for(n, args.quick) for n in names},
        }
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")
    if args.plot:
        plot(rows, args.plot)
    if crashed:
        print(f"\ncrashed: {', '.join(crashed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
