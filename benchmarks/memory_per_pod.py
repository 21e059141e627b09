"""6. Memory per pod at 10,000 pods (tracemalloc: the Python heap, not RSS).

tracemalloc runs while the node is built and converged (the same node the sync-cost benchmark
times afterwards, untraced). Figures, per pod:

* **retained**: what the agent and the in-memory runtime hold once converged (after a full
  collection), the desired Pod objects excluded; split in the notes by the code that allocated it;
* **peak**: the highest heap above the start while converging (pod objects included).

The baseline is the pod itself: the bytes of the desired Pod object (2 containers) that any
agent must hold. The target is derived from issue 6's per-node target: 5 MB per node of 110 pods
(the Kubernetes maximum) is about 45 KiB per pod.
"""

from __future__ import annotations

from benchmarks._common import Context, Row, fmt_value
from benchmarks._fake import converged_node, release
from benchmarks.sync_cost import sizes

NAME = "memory_per_pod"
TARGET_PER_POD = 5 * 1000 * 1000 / 110


def run(ctx: Context) -> list[Row]:
    n = sizes(ctx.quick)[-1]
    built = converged_node(n, trace=True, log=ctx.log)
    memory = built.memory
    release(n)
    assert memory is not None
    if not built.converged:
        ctx.note(f"{n} pods did not converge: the figures are not those of a converged node")
    spec = memory.spec_bytes / n
    ctx.note(
        f"{n:,} pods: retained by allocating code: "
        + ", ".join(
            f"{owner} {fmt_value(size / n, 'B')}/pod" for owner, size in memory.by_owner.items()
        )
    )
    ctx.note(
        f"{n:,} pods: top allocation sites retained: "
        + ", ".join(f"{where} {fmt_value(size / n, 'B')}/pod" for where, size in memory.top)
    )
    ctx.note(f"{n:,} pods converged in {built.seconds:.1f} s under tracemalloc")
    target = f"< {fmt_value(TARGET_PER_POD, 'B')}/pod"
    return [
        Row(
            NAME,
            f"heap retained per pod at {n:,} pods (agent + in-memory runtime)",
            memory.retained_bytes / n,
            "B",
            baseline=spec,
            target=target,
            met=memory.retained_bytes / n < TARGET_PER_POD,
        ),
        Row(
            NAME,
            f"peak heap per pod while converging {n:,} pods",
            memory.peak_bytes / n,
            "B",
            baseline=spec,
        ),
    ]
