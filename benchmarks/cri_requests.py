"""CRI calls per steady-state sync on containerd, for 1, 10 and 50 converged pods, beside the
engine requests Docker gets for the same pods in the same run.

The agent runs on the ``cri`` runtime over the test containerd, on a gRPC channel with a client
interceptor that counts every call where it leaves the process, by method. The pods grow
1 -> 10 -> 50 on one node (each size converged before it is measured); then ``Kubelet.sync()``
runs several times and the calls of each pass are counted. The same is done on Docker (the
``docker_requests`` way: a counting transport adapter under docker-py) when its engine answers.

The floor on CRI is two calls per pass: CRI lists sandboxes (``ListPodSandbox``) and
containers (``ListContainers``) apart, where Docker lists both in one request. A container's
status and a sandbox's IP are asked once per state they are listed in, not once per pass. The
notes give the CPU a pass costs the engine (its daemons and shims) and the agent.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from benchmarks import _docker
from benchmarks._common import CallCounts, Context, Row, Skip, make_pods
from benchmarks._cpu import cpu_spent, state_dir_of
from benchmarks._cri import NAMESPACE, cleanup, cri_node, find_containerd, foreign_agents_note
from benchmarks._docker import converge
from benchmarks.docker_requests import count_passes
from kubecore import Kubelet

NAME = "cri_requests"
CRI_FLOOR = 2


def run(ctx: Context) -> list[Row]:
    containerd = find_containerd()
    sizes = (1, 3) if ctx.quick else (1, 10, 50)
    rounds = 3 if ctx.quick else 10
    cleanup(containerd)
    warning = foreign_agents_note(containerd)
    if warning:
        ctx.note(warning)
    try:
        pods = make_pods(
            max(sizes), containers=1, prefix="req", namespace=NAMESPACE, image=containerd.image
        )
        with cri_node(containerd, max_pods=max(sizes) + 10) as node:
            cri = measure(
                ctx,
                "CRI",
                state_dir_of(containerd.endpoint),
                node.kubelet,
                node.counter,
                pods,
                sizes,
                rounds,
            )
    finally:
        removed = cleanup(containerd)
        ctx.log(f"removed {removed} sandboxes")
    docker = docker_counts(ctx, sizes, rounds)
    constant = len({max(c) for c in cri.values()}) == 1
    rows = []
    for n, counts in cri.items():
        theirs = docker.get(n)
        rows.append(
            Row(
                NAME,
                f"CRI calls per steady-state sync, {n} pod{'' if n == 1 else 's'}"
                " (baseline: Docker's engine requests)",
                float(statistics.median(counts)),
                "req",
                baseline=float(statistics.median(theirs)) if theirs else None,
                target=f"{CRI_FLOOR} (the CRI floor), constant in pods",
                met=constant and max(counts) <= CRI_FLOOR,
                strict=True,
                note=f"max {max(counts)}",
            )
        )
    return rows


def docker_counts(ctx: Context, sizes: tuple[int, ...], rounds: int) -> dict[int, list[int]]:
    """The same on the test Docker engine (empty, saying so, when none answers)."""
    try:
        client = _docker.engine_client()
    except Skip as skip:
        ctx.note(f"Docker left out: {skip}")
        return {}
    try:
        _docker.cleanup(client)
        pods = make_pods(max(sizes), containers=1, prefix="req", namespace=_docker.NAMESPACE)
        with _docker.docker_node(max_pods=max(sizes) + 10) as node:
            return measure(
                ctx,
                "Docker",
                state_dir_of(_docker.base_url()),
                node.kubelet,
                node.counter,
                pods,
                sizes,
                rounds,
            )
    finally:
        _docker.cleanup(client)
        client.close()


def measure(
    ctx: Context,
    engine: str,
    state_dir: str,
    kubelet: Kubelet,
    counter: CallCounts,
    pods: list[Any],
    sizes: tuple[int, ...],
    rounds: int,
) -> dict[int, list[int]]:
    """Calls per pass for each size of pods (converged first), noted with their methods."""
    counts_by_size: dict[int, list[int]] = {}
    for n in sizes:
        if ctx.time_left() < 10:
            ctx.note(f"{engine}: out of time before {n} pods")
            break
        kubelet.set_pods(pods[:n], source="bench")
        t0 = time.monotonic()
        ok = converge(kubelet, min(120.0, ctx.time_left() - 5))
        ctx.log(f"{engine}, {n} pods: converged={ok} in {time.monotonic() - t0:.1f}s")
        if not ok:
            ctx.note(f"{engine}: {n} pods did not converge; the count is not steady")
        with cpu_spent(state_dir) as spent:
            counts, methods = count_passes(kubelet, counter, rounds)
        counts_by_size[n] = counts
        ctx.note(
            f"{engine}, {n} pods: calls per pass {counts}; by method over {rounds} passes: "
            + ", ".join(f"{k} x{v}" for k, v in sorted(methods.items()))
            + f"; CPU per pass: the engine's {spent.engine / rounds * 1000:.0f} ms, the agent's"
            f" {spent.client / rounds * 1000:.0f} ms"
        )
    return counts_by_size
