"""1. Steady-state sync cost on the in-memory runtime (100 / 1,000 / 10,000 pods of 2 containers).

The node is converged first (``sync_until_converged`` in virtual time), then ``Kubelet.sync()`` is
timed in two steady states:

* **relist pass**: nothing changed since the last pass (what the agent does every second);
* **resync pass**: the periodic resync is due, so every pod is planned again (every minute).

Between passes the ManualClock is advanced (untimed) by 1 s, or by the resync interval. The figure
is the median wall time of the passes (and per pod), and the number of runtime calls per pass,
counted by a proxy between the agent and the runtime. A pass includes the in-memory runtime's own
``snapshot`` (it builds a value for each of the 3 objects of every pod); its median alone is given
in the notes. The baseline, in the same process on the same pods, is the floor: a bare loop that
only looks each pod up in a dict.

Why plain ``time.perf_counter`` with medians and not pytest-benchmark: each timed call needs an
untimed step before it (advance the virtual clock), the runtime call count must come from exactly
the timed calls, the number of rounds must be capped by a time budget (a 10,000-pod pass is
slow), and the harness runs outside pytest; pytest-benchmark's fixture calibrates and repeats on
its own terms inside a pytest session. A full ``gc.collect()`` runs before each timed call.
"""

from __future__ import annotations

from collections import Counter

import attrs

from benchmarks._common import Context, Row, median, print_profile, timed_runs
from benchmarks._fake import LIST_OPS, FakeNode, converged_node, expected_containers, release
from kubecore import SyncReport
from kubecore.testing import ManualClock

NAME = "sync_cost"
TARGET_US_PER_POD = 10.0


def sizes(quick: bool) -> tuple[int, ...]:
    return (10, 100) if quick else (100, 1_000, 10_000)


def run(ctx: Context) -> list[Row]:
    wanted = sizes(ctx.quick)
    rows: list[Row] = []
    for index, n in enumerate(wanted):
        share = ctx.time_left() / (len(wanted) - index)
        largest = n == wanted[-1]
        rows.extend(measure(ctx, n, share, largest=largest))
        if not largest:
            release(n)  # the largest stays for the memory benchmark (same node)
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
    ops: dict[str, int]
    """Every call of every pass, by operation."""


def time_passes(node: FakeNode, step: float, rounds: int, seconds: float) -> Passes:
    """Time up to ``rounds`` syncs (``seconds`` at most), advancing virtual time ``step`` first."""
    clock, watch = node.clock, node.watch
    assert isinstance(clock, ManualClock)
    begins: list[tuple[int, Counter[str]]] = []
    ends: list[tuple[int, Counter[str]]] = []
    reports: list[SyncReport] = []

    def between() -> None:
        if len(begins) > len(ends):
            ends.append((watch.total, watch.calls()))
        clock.advance(step)
        begins.append((watch.total, watch.calls()))

    times = timed_runs(
        lambda: reports.append(node.kubelet.sync()),
        rounds=rounds,
        max_seconds=seconds,
        between=between,
    )
    ends.append((watch.total, watch.calls()))
    marks = [(e[0] - b[0], e[1] - b[1]) for b, e in zip(begins, ends, strict=True)]
    ops: Counter[str] = Counter()
    for _, per in marks:
        ops.update(per)
    return Passes(
        times=times,
        calls=[total for total, _ in marks],
        lists=[sum(v for op, v in per.items() if op in LIST_OPS) for _, per in marks],
        planned=[r.synced for r in reports],
        ops=dict(ops),
    )


def measure(ctx: Context, n: int, seconds: float, *, largest: bool) -> list[Row]:
    rounds = 3 if ctx.quick else (15 if n <= 1_000 else 7)
    built = converged_node(n, trace=largest, log=ctx.log)
    node, pods = built.node, built.pods
    if not built.converged or built.running != expected_containers(pods):
        ctx.note(
            f"{n} pods did not converge ({built.running}/{expected_containers(pods)} containers "
            "running): the figures below are not steady-state"
        )
    index = {p.uid: p for p in pods}

    def floor() -> None:
        for pod in pods:
            index[pod.uid]

    budget = max(1.0, (seconds - built.seconds) * 0.4)
    resync = node.kubelet.config.resync_interval
    passes = {
        kind: time_passes(node, step, rounds, budget)
        for kind, step in (("relist", 1.0), ("resync", resync))
    }
    if ctx.profile and largest:
        for kind, step in (("relist", 1.0), ("resync", resync)):
            assert isinstance(node.clock, ManualClock)
            node.clock.advance(step)
            print_profile(f"{kind} pass, {n} pods", node.kubelet.sync)
    floor_times = timed_runs(floor, rounds=max(rounds, 9), max_seconds=2.0)
    snapshot_times = timed_runs(node.runtime.snapshot, rounds=rounds, max_seconds=budget / 4)
    base = median(floor_times)
    ctx.note(
        f"{n:,} pods: the in-memory runtime's snapshot alone takes"
        f" {median(snapshot_times) * 1e3:.2f} ms (median of {len(snapshot_times)}),"
        " part of every pass"
    )
    rows: list[Row] = []
    for kind, p in passes.items():
        ctx.log(
            f"{n} pods {kind}: median {median(p.times) * 1e3:.2f} ms over {len(p.times)} passes,"
            f" pods planned {p.planned}, runtime calls {p.ops}"
        )
        per_sync = median(p.times)
        target, met = "", None
        if largest:
            target = f"<= {TARGET_US_PER_POD:g} µs/pod"
            met = per_sync / n * 1e6 <= TARGET_US_PER_POD
        what = f"{kind} pass, {n:,} pods"
        if largest:
            ctx.note(
                f"{what}: {len(p.times)} passes, pods planned per pass {sorted(set(p.planned))},"
                f" runtime calls in all: {p.ops}"
            )
        rows.append(
            Row(NAME, f"{what}: time per sync", per_sync, "s", baseline=base),
        )
        rows.append(
            Row(
                NAME,
                f"{what}: time per pod",
                per_sync / n,
                "s",
                baseline=base / n,
                target=target,
                met=met,
            )
        )
        if largest:
            own = max(0.0, per_sync - median(snapshot_times)) / n
            rows.append(
                Row(
                    NAME,
                    f"{what}: time per pod, the runtime's own snapshot excluded",
                    own,
                    "s",
                    baseline=base / n,
                    target=target,
                    met=own * 1e6 <= TARGET_US_PER_POD,
                )
            )
        rows.append(
            Row(
                NAME,
                f"{what}: runtime calls per sync",
                float(max(p.calls)),
                "",
                target="1 list call",
                met=max(p.lists) == 1 and min(p.lists) == 1,
                strict=True,
            )
        )
    return rows
