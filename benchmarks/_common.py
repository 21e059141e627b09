"""What every benchmark shares: the result row, the run context, timing and formatting helpers."""

from __future__ import annotations

import compileall
import cProfile
import gc
import importlib.util
import io
import os
import pstats
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from kubecore import Pod
from kubecore.v1 import Container, ObjectMeta, PodSpec

BENCH_LABEL = "io.kubecore.benchmark"
"""Put on every engine object a benchmark creates outside kubecore (so cleanup finds them)."""

TEST_IMAGE = os.environ.get("KUBECORE_TEST_IMAGE") or "kubecore-test/busybox:1.35"
# A container that exits at once (0) on TERM, so cleanup never waits out a grace period.
TERM_LOOP = ("/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 1 & wait $!; done")


class CallCounts(Protocol):
    """What counts an engine's requests (``_docker.RequestCounter``, ``_cri.CallCounter``)."""

    total: int

    def snapshot(self) -> Counter[str]:
        """The requests so far, by endpoint or method."""
        ...


class Skip(Exception):
    """Raised by a benchmark (or part of one) that cannot run here; the message says why."""


@attrs.frozen
class Row:
    """One figure. Every figure here is "lower is better": ratio = kubecore / baseline."""

    benchmark: str
    figure: str
    kubecore: float | None
    unit: str = ""
    baseline: float | None = None
    baseline_label: str = ""
    """What the baseline is, when the column alone would not say (shown in the notes)."""
    baseline_source: str = ""
    """Empty when the baseline was measured in the same run; otherwise what it is instead, in
    words (a constant quoted or set by the benchmark), shown beside it on every page."""
    target: str = ""
    met: bool | None = None
    strict: bool = False
    """Whether ``--strict`` fails the run when this target is missed: only targets that hold on a
    loaded 2-core machine, in quick mode too (counts and ratios, not wall times)."""
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.kubecore is None or not self.baseline:
            return None
        return self.kubecore / self.baseline

    def to_json(self) -> dict[str, object]:
        data = attrs.asdict(self)
        data["ratio"] = self.ratio
        return data


@attrs.define
class Context:
    """One benchmark's run: mode, time budget and the command that reproduces it."""

    name: str
    quick: bool
    budget: float
    """Seconds this benchmark may take; loops stop early (with what they have) past it."""
    command: str
    install: bool = False
    """Whether peers may be installed (full mode only)."""
    profile: bool = False
    """Print where the time goes (cProfile) for the in-process benchmarks."""
    started: float = attrs.field(factory=time.monotonic)
    notes: list[str] = attrs.field(factory=list)

    def time_left(self) -> float:
        return self.budget - (time.monotonic() - self.started)

    def log(self, message: str) -> None:
        print(f"[{self.name} {time.monotonic() - self.started:6.1f}s] {message}", file=sys.stderr)

    def note(self, message: str) -> None:
        """A line printed under the table (how a figure was taken, what was skipped and why)."""
        self.notes.append(message)
        self.log(message)


def print_profile(title: str, fn: Callable[[], object], limit: int = 18) -> None:
    """Run ``fn`` once under cProfile; print its hottest functions (own time) to stderr."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        fn()
    finally:
        profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(limit)
    print(f"== profile: {title}\n{out.getvalue()}", file=sys.stderr)


def compile_sources(
    packages: Sequence[str] = ("kubecore", "kubecore_cri", "kubecore_docker"),
) -> None:
    """Byte-compile ``packages`` where they are imported from, as pip does when it installs
    them (untimed, before a benchmark starts processes): with ``PYTHONDONTWRITEBYTECODE`` set, as
    it may be here, nothing else would, and every ``kubecore`` process timed would first
    compile its modules from source (seconds on a loaded machine)."""
    for name in packages:
        spec = importlib.util.find_spec(name)
        for path in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(path, quiet=1)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def timed_runs(
    fn: Callable[[], object],
    *,
    rounds: int,
    max_seconds: float,
    between: Callable[[], object] | None = None,
    min_rounds: int = 1,
) -> list[float]:
    """Wall times (perf_counter) of up to ``rounds`` calls of ``fn``, stopping after
    ``max_seconds`` once ``min_rounds`` are in. A full collection runs before each timed call so
    one round does not pay for the garbage of the previous one; ``between`` runs untimed."""
    times: list[float] = []
    start = time.monotonic()
    for _ in range(rounds):
        if between is not None:
            between()
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= min_rounds and time.monotonic() - start > max_seconds:
            break
    return times


def make_pods(
    count: int,
    *,
    containers: int = 2,
    prefix: str = "bench",
    namespace: str = "bench",
    image: str = TEST_IMAGE,
    command: tuple[str, ...] = TERM_LOOP,
    grace: int = 2,
) -> list[Pod]:
    """``count`` pods of ``containers`` identical containers each, with distinct names and UIDs."""
    pods = []
    for i in range(count):
        name = f"{prefix}-{i:05d}"
        spec = PodSpec(
            containers=tuple(
                Container(name=f"c{j}", image=image, command=command) for j in range(containers)
            ),
            termination_grace_period_seconds=grace,
        )
        meta = ObjectMeta(name=name, namespace=namespace, uid=f"uid-{prefix}-{i:05d}")
        pods.append(Pod(metadata=meta, spec=spec))
    return pods


# --- formatting ---------------------------------------------------------------------------


def _sig(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "s":
        for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
            if abs(value) >= scale or scale == 1e-9:
                return f"{_sig(value / scale)} {name}"
    if unit == "B":
        for scale, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B")):
            if abs(value) >= scale or scale == 1:
                return f"{_sig(value / scale)} {name}"
    if unit == "x":
        return f"{_sig(value)}x"
    text = f"{value:,.0f}" if float(value).is_integer() else _sig(value)
    return f"{text} {unit}".rstrip()


def fmt_ratio(ratio: float | None) -> str:
    if ratio is None:
        return "—"
    if ratio >= 100:
        return f"{ratio:,.0f}x"
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.2g}x"


def fmt_met(met: bool | None) -> str:
    return "—" if met is None else ("yes" if met else "no")


def render_table(rows: Sequence[Row]) -> str:
    """A Markdown table (the benchmarks page quotes it as printed)."""
    header = ("benchmark", "figure", "kubecore", "baseline", "ratio", "target", "met?")
    body = [
        (
            r.benchmark,
            r.figure,
            fmt_value(r.kubecore, r.unit),
            fmt_value(r.baseline, r.unit),
            fmt_ratio(r.ratio),
            r.target or "—",
            fmt_met(r.met),
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out.extend(line(cells) for cells in body)
    return "\n".join(out)
