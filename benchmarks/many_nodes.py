"""5. Many nodes in one process: 100 agents, each on its own in-memory runtime and virtual clock,
110 pods each (11,000 pods), as a cluster simulator would host them.

**Time**: every agent gets its pods, then the agents are synced round-robin in one thread (one
pass each, then every clock advances 1 s) until every agent's pass does nothing. The baseline, in
the same run, is the number of nodes times one agent converging its 110 pods alone: the ratio
shows what hosting many agents in one process costs beyond doing their work one after the other.

**Memory**: the Python heap by tracemalloc (not RSS), traced in a second pass on a sample of the
agents (tracing slows the work down, so the timed pass is untraced): the peak above the start
while they are built and converge, per agent, their pods and runtime included (a hollow node also
holds its pods and fakes its runtime in-process). The RSS growth of the timed pass is in the notes
for comparison. Reference: a Kubernetes hollow node (kubemark) costs 100-220 MB; the baseline
column quotes its low end (not measured here).
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Sequence
from contextlib import ExitStack

from benchmarks._common import Context, Row, fmt_value, print_profile
from benchmarks._fake import (
    SOURCE,
    FakeNode,
    expected_containers,
    fake_node,
    fake_pods,
    running_containers,
)
from kubecore import Pod
from kubecore.testing import ManualClock

NAME = "many_nodes"
HOLLOW_NODE_BYTES = 100 * 1000 * 1000
TARGET_BYTES = 5 * 1000 * 1000
TARGET_SECONDS = 10.0


def rss_bytes() -> int:
    """Resident set size of this process (Linux), 0 where it cannot be read."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def converge_all(nodes: Sequence[FakeNode], max_rounds: int, deadline: float) -> tuple[bool, int]:
    """Round-robin passes until every node's pass does nothing; (all converged, rounds)."""
    pending = list(nodes)
    end = time.monotonic() + deadline
    for rounds in range(1, max_rounds + 1):
        pending = [node for node in pending if not node.kubelet.sync().converged]
        if not pending:
            return True, rounds
        if time.monotonic() > end:
            break
        for node in nodes:
            assert isinstance(node.clock, ManualClock)
            node.clock.advance(1.0)
    return False, max_rounds


def build(stack: ExitStack, count: int, per_node: int) -> tuple[list[FakeNode], list[list[Pod]]]:
    nodes = [stack.enter_context(fake_node(node_name=f"hollow-{i:03d}")) for i in range(count)]
    pods = [fake_pods(per_node, prefix=f"n{i:03d}") for i in range(count)]
    return nodes, pods


def run(ctx: Context) -> list[Row]:
    count, per_node = (4, 20) if ctx.quick else (100, 110)
    sample = count if ctx.quick else 10
    deadline = max(10.0, ctx.time_left() * 0.4)

    # Baseline: one agent alone (a warm-up, then the median of three).
    alone_times = []
    for _ in range(4):
        with ExitStack() as stack:
            (alone,), (alone_pods,) = build(stack, 1, per_node)
            alone.kubelet.set_pods(alone_pods, source=SOURCE)
            t0 = time.perf_counter()
            converge_all([alone], 40, deadline)
            alone_times.append(time.perf_counter() - t0)
    one_node = statistics.median(alone_times[1:])

    # Timed pass, untraced.
    gc.collect()
    rss_before = rss_bytes()
    with ExitStack() as stack:
        t0 = time.perf_counter()
        nodes, pods = build(stack, count, per_node)
        built = time.perf_counter() - t0
        t0 = time.perf_counter()
        for node, own in zip(nodes, pods, strict=True):
            node.kubelet.set_pods(own, source=SOURCE)
        ok, rounds = converge_all(nodes, 40, deadline)
        seconds = time.perf_counter() - t0
        gc.collect()
        rss_growth = rss_bytes() - rss_before
        running = sum(running_containers(node.runtime) for node in nodes)
        wanted = sum(expected_containers(own) for own in pods)
    ctx.log(
        f"{count} nodes: converged={ok} in {seconds:.1f}s ({rounds} rounds), {running}/{wanted}"
    )
    if not ok or running != wanted:
        ctx.note(f"not every node converged: {running}/{wanted} containers running")
    ctx.note(
        f"{count} agents x {per_node} pods: built in {built:.2f} s, converged in {rounds} rounds;"
        f" RSS grew {fmt_value(rss_growth / count, 'B')} per node"
    )

    # Memory pass, traced, on a sample of the nodes.
    gc.collect()
    tracemalloc.start(1)
    try:
        base = tracemalloc.get_traced_memory()[0]
        with ExitStack() as stack:
            nodes, pods = build(stack, sample, per_node)
            for node, own in zip(nodes, pods, strict=True):
                node.kubelet.set_pods(own, source=SOURCE)
            converge_all(nodes, 40, deadline)
            gc.collect()
            current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    per_node_peak = (peak - base) / sample
    if ctx.profile:
        with ExitStack() as stack:
            nodes, pods = build(stack, sample, per_node)
            for node, own in zip(nodes, pods, strict=True):
                node.kubelet.set_pods(own, source=SOURCE)
            print_profile(
                f"{sample} agents x {per_node} pods converging",
                lambda: converge_all(nodes, 40, deadline),
            )
    ctx.note(
        f"memory traced on {sample} of the {count} agents; retained after convergence"
        f" {fmt_value((current - base) / sample, 'B')} per node"
    )
    total_pods = count * per_node
    return [
        Row(
            NAME,
            f"{count} agents x {per_node} pods ({total_pods:,}): time to converge",
            seconds,
            "s",
            baseline=one_node * count,
            target=f"< {TARGET_SECONDS:g} s",
            met=ok and seconds < TARGET_SECONDS,
        ),
        Row(
            NAME,
            f"{count} agents x {per_node} pods: peak heap per node",
            per_node_peak,
            "B",
            baseline=float(HOLLOW_NODE_BYTES),
            baseline_source="a Kubernetes hollow node's low end (kubemark), quoted, not measured",
            target=f"< {fmt_value(TARGET_BYTES, 'B')}",
            met=per_node_peak < TARGET_BYTES,
        ),
    ]
