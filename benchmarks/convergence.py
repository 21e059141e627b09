"""7. Cold convergence on the in-memory runtime: N pods of 2 containers from nothing to all
running (``sync_until_converged`` in virtual time), per pod, at 1,000 and 10,000 pods (10 and 100
with ``--quick``), each on a fresh node with no memory tracing (``sync_cost``'s largest node is
built under ``tracemalloc`` for ``memory_per_pod``, which slows it several times). The cost per pod
should not grow with N: the figure is the per-pod cost at the larger N against the smaller.

Wall time and CPU time (``time.process_time``) are both given: on a shared machine the wall time
includes waiting for the CPU and for the disk (each pod gets its directory and a termination-log
file per container), the CPU time is what the agent itself spent.
"""

from __future__ import annotations

import gc
import time

from benchmarks._common import Context, Row
from benchmarks._fake import SOURCE, expected_containers, fake_node, fake_pods, running_containers

NAME = "convergence"
TARGET_RATIO = 1.2


def sizes(quick: bool) -> tuple[int, int]:
    return (10, 100) if quick else (1_000, 10_000)


def run(ctx: Context) -> list[Row]:
    small, large = sizes(ctx.quick)
    per_pod: dict[int, tuple[float, float]] = {}
    for n in (small, large):
        wall, cpu = converge(ctx, n)
        per_pod[n] = (wall / n, cpu / n)
        ctx.note(
            f"{n:,} pods: converged in {wall:.2f} s ({cpu:.2f} s of CPU),"
            f" {wall / n * 1e3:.2f} ms per pod ({cpu / n * 1e3:.2f} ms of CPU)"
        )
    rows = []
    for index, kind in enumerate(("wall", "CPU")):
        ours, base = per_pod[large][index], per_pod[small][index]
        rows.append(
            Row(
                NAME,
                f"cold convergence, {kind} time per pod: {large:,} pods vs {small:,}",
                ours,
                "s",
                baseline=base,
                baseline_label=f"{small:,} pods",
                target=f"<= {TARGET_RATIO:g}x",
                met=ours <= TARGET_RATIO * base,
            )
        )
    return rows


def converge(ctx: Context, n: int) -> tuple[float, float]:
    """Seconds (wall, CPU) for a fresh node to converge on ``n`` pods."""
    pods = fake_pods(n, prefix=f"cold{n}")
    with fake_node(max_pods=n + 10) as node:
        node.kubelet.set_pods(pods, source=SOURCE)
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        converged = node.kubelet.sync_until_converged(max_syncs=40, step=1.0)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        running = running_containers(node.runtime)
    if not converged or running != expected_containers(pods):
        ctx.note(f"{n} pods did not converge ({running}/{expected_containers(pods)} running)")
    return wall, cpu
