"""2. Engine HTTP requests per steady-state sync on Docker, for 1, 10 and 50 converged pods.

The agent runs on the ``docker`` runtime plugin (loaded through its entry point, as users load
it); a counting transport adapter is mounted on the docker-py ``APIClient`` the plugin built, so
every HTTP request the adapter sends to dockerd is counted where it leaves the process, by method
and path. The pods grow 1 -> 10 -> 50 on one node (each size converged before it is measured);
then ``Kubelet.sync()`` runs several times and the requests of each pass are counted.

The baseline is the floor: one list request per pass. The seed kubelet sent one list per sync
plus an inspect per pod and a list per container, so its count grew with the pods.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter

from benchmarks._common import CallCounts, Context, Row, make_pods
from benchmarks._docker import (
    NAMESPACE,
    cleanup,
    converge,
    docker_node,
    engine_client,
    foreign_agents_note,
    running_app_containers,
)
from kubecore import Kubelet

NAME = "docker_requests"


def run(ctx: Context) -> list[Row]:
    client = engine_client()
    sizes = (1, 3) if ctx.quick else (1, 10, 50)
    rounds = 3 if ctx.quick else 10
    rows: list[Row] = []
    try:
        cleanup(client)
        warning = foreign_agents_note(client)
        if warning:
            ctx.note(warning)
        pods = make_pods(max(sizes), containers=1, prefix="req", namespace=NAMESPACE)
        with docker_node(max_pods=max(sizes) + 10) as node:
            counts_by_size: dict[int, list[int]] = {}
            for n in sizes:
                if ctx.time_left() < 10:
                    ctx.note(f"out of time before {n} pods")
                    break
                node.kubelet.set_pods(pods[:n], source="bench")
                t0 = time.monotonic()
                ok = converge(node.kubelet, min(120.0, ctx.time_left() - 5))
                running = running_app_containers(client)
                ctx.log(
                    f"{n} pods: converged={ok} in {time.monotonic() - t0:.1f}s, {running} running"
                )
                if not ok or running < n:
                    ctx.note(
                        f"{n} pods did not converge ({running}/{n} running); count is not steady"
                    )
                counts, paths = count_passes(node.kubelet, node.counter, rounds)
                counts_by_size[n] = counts
                ctx.note(
                    f"{n} pods: requests per pass {counts}; by endpoint over {rounds} passes: "
                    + ", ".join(f"{k} x{v}" for k, v in sorted(paths.items()))
                )
            constant = len({max(c) for c in counts_by_size.values()}) == 1
            for n, counts in counts_by_size.items():
                rows.append(
                    Row(
                        NAME,
                        f"engine requests per steady-state sync, {n} pod{'' if n == 1 else 's'}",
                        float(statistics.median(counts)),
                        "req",
                        baseline=1.0,
                        baseline_source="the floor, one list request a pass: a constant",
                        target="constant in pods",
                        met=constant,
                        strict=True,
                        note=f"max {max(counts)}",
                    )
                )
    finally:
        removed = cleanup(client)
        ctx.log(f"removed {removed} containers")
        client.close()
    return rows


def count_passes(
    kubelet: Kubelet, counter: CallCounts, rounds: int
) -> tuple[list[int], Counter[str]]:
    """Requests (calls) sent during each of ``rounds`` passes, and all of them by endpoint
    (method)."""
    counts: list[int] = []
    before_all = counter.snapshot()
    for _ in range(rounds):
        mark = counter.total
        kubelet.sync()
        counts.append(counter.total - mark)
        time.sleep(0.1)
    return counts, counter.snapshot() - before_all
