"""``kubecore run DIR --runtime cri --once`` as a user runs it, on containerd: the whole process,
from the command to its exit with every pod running, beside its floor and beside the same on
Docker, alternated in one run (medians); 10 and 50 single-container busybox pods.

* **kubecore --once on cri**: the installed ``kubecore`` command on a directory of N pod
  manifests, ``--runtime cri`` on the test containerd (its own node name, no API server, a log
  root of its own). It exits once every pod is settled.
* **bare CRI client** (the floor): a ``python`` process that imports only grpc and
  ``kubecore_cri``'s generated stubs and makes the CRI calls kubecore makes for a pod, 8 threads
  as kubecore's 8 pod workers (``benchmarks/_bare_cri.py`` run as a script), then lists once.
* **kubecore --once on docker** and **docker-py same calls**: ``once_start``'s two commands, on
  the test Docker engine when one answers (else left out, saying so).

One untimed warm-up (1 pod) per method (none in ``--quick``), then the rounds alternate the
methods; everything is removed between runs (untimed).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
from collections.abc import Callable
from typing import Any

from benchmarks import _docker
from benchmarks._common import Context, Row, Skip, make_pods
from benchmarks._cri import (
    NAMESPACE,
    Containerd,
    bare_command,
    cleanup,
    find_containerd,
    foreign_agents_note,
)
from benchmarks.once_start import NODE, kubecore_command, manifests_dir, timed
from benchmarks.once_start import RUN_LABEL as DOCKER_RUN_LABEL
from benchmarks.once_start import start_direct as start_docker_direct
from benchmarks.once_start import start_kubecore as start_docker_kubecore

NAME = "cri_once"
TARGET_RATIO = 1.10
RUN_LABEL = "cri_once"
KUBECORE_CRI = "kubecore --once on cri"
BARE_CRI = "bare CRI client"
KUBECORE_DOCKER = "kubecore --once on docker"
DOCKER_DIRECT = "docker-py same calls"


def run(ctx: Context) -> list[Row]:
    containerd = find_containerd()
    sizes = [2] if ctx.quick else [10, 50]
    rounds = 1 if ctx.quick else 3
    workdir = tempfile.mkdtemp(prefix="kubecore-bench-cri-once-")
    docker: Any = None
    try:
        docker = _docker.engine_client()
    except Skip as skip:
        ctx.note(f"Docker left out: {skip}")
    figures: dict[int, dict[str, float]] = {}

    def clean() -> None:
        cleanup(containerd, RUN_LABEL)
        if docker is not None:
            _docker.cleanup(docker, DOCKER_RUN_LABEL)

    try:
        clean()
        warning = foreign_agents_note(containerd)
        if warning:
            ctx.note(warning)
        for size in sizes:
            if ctx.time_left() < 60 and figures:
                ctx.note(f"out of time before {size} pods")
                break
            times = alternate(ctx, methods(containerd, workdir, docker), size, rounds, clean)
            figures[size] = {name: statistics.median(v) for name, v in times.items() if v}
            for name, values in times.items():
                ctx.note(f"{size} pods, {name}: " + ", ".join(f"{v:.2f}" for v in values) + " s")
    finally:
        clean()
        if docker is not None:
            docker.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return rows_of(figures)


def methods(containerd: Containerd, workdir: str, docker: Any) -> dict[str, Callable[[int], float]]:
    """Each method, given how many pods to start: the command's wall time."""
    found: dict[str, Callable[[int], float]] = {
        KUBECORE_CRI: lambda n: start_kubecore(containerd, workdir, n),
        BARE_CRI: lambda n: timed(bare_command(containerd, RUN_LABEL, f"once-bare-{n}", n)),
    }
    if docker is not None:

        def docker_pods(n: int) -> list[Any]:
            return make_pods(n, containers=1, prefix="once", namespace=_docker.NAMESPACE)

        found[KUBECORE_DOCKER] = lambda n: start_docker_kubecore(workdir, docker_pods(n))
        found[DOCKER_DIRECT] = lambda n: start_docker_direct(docker_pods(n))
    return found


def alternate(
    ctx: Context,
    methods: dict[str, Callable[[int], float]],
    size: int,
    rounds: int,
    clean: Callable[[], None],
) -> dict[str, list[float]]:
    """Each method once on one pod (untimed; not in ``--quick``), then ``rounds`` rounds of every
    method in turn."""
    times: dict[str, list[float]] = {name: [] for name in methods}
    for round_ in range(0 if ctx.quick else -1, rounds):
        warm = round_ < 0
        batch = 1 if warm else size
        for name, method in methods.items():
            if not warm and times[name] and ctx.time_left() < 30:
                continue
            try:
                seconds = method(batch)
            finally:
                clean()
            if not warm:
                times[name].append(seconds)
            ctx.log(f"{name}: {batch} pods in {seconds:.2f}s{' (warm-up)' * warm}")
    return times


def start_kubecore(containerd: Containerd, workdir: str, count: int) -> float:
    pods = make_pods(
        count, containers=1, prefix="once", namespace=NAMESPACE, image=containerd.image
    )
    root = tempfile.mkdtemp(prefix="root-", dir=workdir)
    argv = [
        *kubecore_command(),
        "run",
        manifests_dir(os.path.join(workdir, "cri"), pods),
        "--runtime",
        "cri",
        "--runtime-option",
        f"endpoint={containerd.endpoint}",
        "--runtime-option",
        f"log_root={os.path.join(root, 'pods')}",
        "--once",
        "--port",
        "0",
        "--node-name",
        f"{NODE}-cri",
        "--root-dir",
        root,
        "--log-level",
        "warning",
        "--deadline",
        "120",
    ]
    return timed(argv)


def rows_of(figures: dict[int, dict[str, float]]) -> list[Row]:
    rows: list[Row] = []
    for size, medians in figures.items():
        ours, floor = medians[KUBECORE_CRI], medians[BARE_CRI]
        rows.append(
            Row(
                NAME,
                f"--once {size} pods on containerd (whole process): kubecore vs bare CRI client",
                ours,
                "s",
                baseline=floor,
                target=f"<= {TARGET_RATIO:.2f}x",
                met=ours <= TARGET_RATIO * floor,
            )
        )
        if KUBECORE_DOCKER not in medians:
            continue
        docker, direct = medians[KUBECORE_DOCKER], medians[DOCKER_DIRECT]
        rows += [
            Row(
                NAME,
                f"--once {size} pods on Docker (whole process): kubecore vs docker-py same calls",
                docker,
                "s",
                baseline=direct,
                target=f"<= {TARGET_RATIO:.2f}x",
                met=docker <= TARGET_RATIO * direct,
            ),
            Row(
                NAME,
                f"--once {size} pods (whole process): kubecore on containerd vs on Docker",
                ours,
                "s",
                baseline=docker,
            ),
            Row(
                NAME,
                f"--once {size} pods, the floors: bare CRI client vs docker-py same calls",
                floor,
                "s",
                baseline=direct,
            ),
        ]
    return rows
