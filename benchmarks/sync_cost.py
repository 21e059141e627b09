"""1. Steady-state sync cost on the in-memory runtime (100 / 1,000 / 10,000 pods of 2 containers).

The node is converged first (``sync_until_converged`` in virtual time), then ``Kubelet.sync()`` is
timed in two steady states:

* **relist pass**: nothing changed since the last pass (what the agent does every second);
* **resync pass**: the periodic resync is due, so every pod is planned again (every minute).

Between passes the ManualClock is advanced (untimed) by 1 s, or by the resync interval. The figure
is the median wall time of the passes (and per pod), and the number of runtime calls per pass from
the fake's own call log. The baseline, in the same process on the same pods, is the floor: a bare
loop that only looks each pod up in a dict.

Why plain ``time.perf_counter`` with medians and not pytest-benchmark: each timed call needs an
untimed step before it (advance the virtual clock), the runtime call count must come from exactly
the timed calls, the number of rounds must be capped by a time budget (a 10,000-pod pass is
slow), and the harness must run outside pytest; pytest-benchmark's fixture calibrates and repeats on
its own terms inside a pytest session. A full ``gc.collect()`` runs before each timed call.
"""

from __future__ import annotations

import time
from collections import Counter

import attrs

from benchmarks._common import Context, Row, make_pods, median, timed_runs
from benchmarks._fake import (
    LIST_OPS,
    FakeNode,
    expected_containers,
    fake_node,
    running_containers,
)
from kubecore._clock import ManualClock
from kubecore._kubelet import SyncReport

NAME = "sync_cost"
TARGET_US_PER_POD = 10.0


def run(ctx: Context) -> list[Row]:
    sizes = (10, 100) if ctx.quick else (100, 1_000, 10_000)
    rows: list[Row] = []
    for index, n in enumerate(sizes):
        share = ctx.time_left() / (len(sizes) - index)
        rows.extend(measure(ctx, n, share, with_target=n == sizes[-1]))
    return rows


def measure(ctx: Context, n: int, seconds: float, *, with_target: bool) -> list[Row]:
    rounds = 3 if ctx.quick else (15 if n <= 1_000 else 7)
    pods = make_pods(n, prefix=f"sync{n}")
    index = {p.uid: p for p in pods}

    def floor() -> None:
        for pod in pods:
            index[pod.uid]

    with fake_node(max_pods=n + 10) as node:
        kubelet, runtime = node.kubelet, node.runtime
        kubelet.set_pods(pods, source="bench")
        t0 = time.perf_counter()
        converged = kubelet.sync_until_converged(max_syncs=30, step=1.0)
        ctx.log(f"{n} pods: converged={converged} in {time.perf_counter() - t0:.1f}s")
        running = running_containers(runtime)
        if not converged or running != expected_containers(pods):
            ctx.note(
                f"{n} pods did not converge ({running}/{expected_containers(pods)} containers "
                "running): the figures below are not steady-state"
            )
        resync = kubelet.config.resync_interval
        passes = {
            kind: time_passes(node, step, rounds, max(1.0, seconds * 0.4))
            for kind, step in (("relist", 1.0), ("resync", resync))
        }
        for kind, p in passes.items():
            ctx.log(
                f"{n} pods {kind}: median {median(p.times) * 1e3:.2f} ms over {len(p.times)} "
                f"passes, pods planned {p.planned}, calls of the last pass {p.last_ops}"
            )
        floor_times = timed_runs(floor, rounds=max(rounds, 9), max_seconds=2.0)

    base = median(floor_times)
    rows: list[Row] = []
    for kind, p in passes.items():
        times, calls, lists, planned = p.times, p.calls, p.lists, p.planned
        per_sync = median(times)
        per_pod = per_sync / n
        target = ""
        met: bool | None = None
        if with_target:
            target = f"<= {TARGET_US_PER_POD:g} µs/pod"
            met = per_pod * 1e6 <= TARGET_US_PER_POD
        rows.append(
            Row(
                NAME,
                f"{kind} pass, {n:,} pods: time per sync",
                per_sync,
                "s",
                baseline=base,
                note=f"median of {len(times)}; pods planned per pass {max(planned)}",
            )
        )
        rows.append(
            Row(
                NAME,
                f"{kind} pass, {n:,} pods: time per pod",
                per_pod,
                "s",
                baseline=base / n,
                target=target,
                met=met,
            )
        )
        rows.append(
            Row(
                NAME,
                f"{kind} pass, {n:,} pods: runtime calls per sync",
                float(max(calls)),
                "",
                target="1 list call",
                met=max(lists) == 1,
                note=f"list/snapshot calls per pass: {sorted(set(lists))}",
            )
        )
    return rows


@attrs.frozen
class Passes:
    times: list[float]
    calls: list[int]
    """Runtime calls of each pass."""
    lists: list[int]
    """Of which list / snapshot calls."""
    planned: list[int]
    """Pods planned in each pass (``SyncReport.synced``)."""
    last_ops: dict[str, int]


def time_passes(node: FakeNode, step: float, rounds: int, seconds: float) -> Passes:
    """Time up to ``rounds`` syncs (``seconds`` at most), advancing virtual time ``step`` first."""
    runtime, clock = node.runtime, node.clock
    assert isinstance(clock, ManualClock)
    marks: list[int] = []
    reports: list[SyncReport] = []

    def between() -> None:
        clock.advance(step)
        marks.append(len(runtime.calls))

    times = timed_runs(
        lambda: reports.append(node.kubelet.sync()),
        rounds=rounds,
        max_seconds=seconds,
        between=between,
    )
    log = [op for op, _ in runtime.calls]
    per_pass = [
        Counter(log[m : (marks[i + 1] if i + 1 < len(marks) else len(log))])
        for i, m in enumerate(marks)
    ]
    return Passes(
        times=times,
        calls=[sum(ops.values()) for ops in per_pass],
        lists=[sum(ops[op] for op in LIST_OPS) for ops in per_pass],
        planned=[r.synced for r in reports],
        last_ops=dict(per_pass[-1]) if per_pass else {},
    )
