"""``kubecore run DIR --runtime cri --once`` as a user runs it, on containerd: the whole process,
from the command to its exit with every pod running, beside its floor and beside the same on
Docker, alternated in one run (medians); 10 and 50 single-container busybox pods (5 and 3 rounds).

* **kubecore --once on cri**: the installed ``kubecore`` command on a directory of N pod
  manifests, ``--runtime cri`` on the test containerd (its own node name, no API server, a log
  root of its own). It exits once every pod is settled.
* **bare CRI client** (the floor): a ``python`` process that imports only grpc and
  ``kubecore_cri``'s generated stubs and makes the CRI calls kubecore makes for a pod, 8 threads
  as kubecore's 8 pod workers (``benchmarks/_bare_cri.py`` run as a script), then lists once.
* **kubecore --once on docker** and **docker-py same calls**: ``once_start``'s two commands, on
  the test Docker engine when one answers (else left out, saying so).

The packages are byte-compiled first (as pip does; ``PYTHONDONTWRITEBYTECODE`` may be set
here), and each process's fixed cost is taken too: the same commands on no pods. One untimed
warm-up (1 pod) per method (none in ``--quick``), then the rounds alternate the
methods; everything is removed between runs (untimed).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from benchmarks import _docker
from benchmarks._common import Context, Row, Skip, compile_sources, make_pods
from benchmarks._cpu import Figures, cpu_spent, state_dir_of
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
    # pods -> rounds: more of the smaller size, whose times vary more from round to round
    rounds = {2: 1} if ctx.quick else {10: 5, 50: 3}
    workdir = tempfile.mkdtemp(prefix="kubecore-bench-cri-once-")
    docker: Any = None
    try:
        docker = _docker.engine_client()
    except Skip as skip:
        ctx.note(f"Docker left out: {skip}")
    figures: dict[int, Figures] = {}

    def clean() -> None:
        cleanup(containerd, RUN_LABEL)
        if docker is not None:
            _docker.cleanup(docker, DOCKER_RUN_LABEL)

    try:
        compile_sources()
        clean()
        warning = foreign_agents_note(containerd)
        if warning:
            ctx.note(warning)
        fixed = alternate(ctx, fixed_methods(containerd, workdir), 0, 1 if ctx.quick else 3, clean)
        fixed.note(ctx, "no pods")
        for size, count in rounds.items():
            if ctx.time_left() < 60 and figures:
                ctx.note(f"out of time before {size} pods")
                break
            found = alternate(ctx, methods(containerd, workdir, docker), size, count, clean)
            found.note(ctx, f"{size} pods")
            figures[size] = found
    finally:
        clean()
        if docker is not None:
            docker.close()
        shutil.rmtree(workdir, ignore_errors=True)
    ctx.note(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    rows = [row for size, found in figures.items() for row in rows_of(size, found)]
    return [*fixed_rows(fixed), *rows]


Method = tuple[str, Callable[[int], float]]


def methods(containerd: Containerd, workdir: str, docker: Any) -> dict[str, Method]:
    """Each method: the state directory of its engine, and the command's wall time given how
    many pods to start."""
    on_cri = state_dir_of(containerd.endpoint)
    found: dict[str, Method] = {
        KUBECORE_CRI: (on_cri, lambda n: start_kubecore(containerd, workdir, n)),
        BARE_CRI: (
            on_cri,
            lambda n: timed(bare_command(containerd, RUN_LABEL, f"once-bare-{n}", n)),
        ),
    }
    if docker is not None:

        def docker_pods(n: int) -> list[Any]:
            return make_pods(n, containers=1, prefix="once", namespace=_docker.NAMESPACE)

        on_docker = state_dir_of(_docker.base_url())
        found[KUBECORE_DOCKER] = (
            on_docker,
            lambda n: start_docker_kubecore(workdir, docker_pods(n)),
        )
        found[DOCKER_DIRECT] = (on_docker, lambda n: start_docker_direct(docker_pods(n)))
    return found


def fixed_methods(containerd: Containerd, workdir: str) -> dict[str, Method]:
    """The fixed cost of each process: the same commands on no pods (an empty manifest
    directory; the bare client lists once)."""
    on_cri = state_dir_of(containerd.endpoint)
    return {
        KUBECORE_CRI: (on_cri, lambda _n: start_kubecore(containerd, workdir, 0)),
        BARE_CRI: (on_cri, lambda _n: timed(bare_command(containerd, RUN_LABEL, "none", 0))),
    }


def alternate(
    ctx: Context,
    methods: dict[str, Method],
    size: int,
    rounds: int,
    clean: Callable[[], None],
) -> Figures:
    """Each method once on one pod (untimed; not in ``--quick``), then ``rounds`` rounds of every
    method in turn. The client's CPU is the command's (it ran as a child of this process)."""
    found = Figures()
    for round_ in range(0 if ctx.quick else -1, rounds):
        warm = round_ < 0
        batch = 1 if warm else size
        for name, (state_dir, method) in methods.items():
            if not warm and found.times.get(name) and ctx.time_left() < 30:
                continue
            try:
                with cpu_spent(state_dir, children=True) as spent:
                    seconds = method(batch)
            finally:
                clean()
            if not warm:
                found.add(name, seconds, spent)
            ctx.log(f"{name}: {batch} pods in {seconds:.2f}s{' (warm-up)' * warm}")
    return found


def start_kubecore(containerd: Containerd, workdir: str, count: int) -> float:
    pods = make_pods(
        count, containers=1, prefix="once", namespace=NAMESPACE, image=containerd.image
    )
    root = tempfile.mkdtemp(prefix="root-", dir=workdir)
    empty = ["--manifest-allow-empty"] if count == 0 else []
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
        *empty,
    ]
    return timed(argv)


def fixed_rows(found: Figures) -> list[Row]:
    ours, floor = found.median(KUBECORE_CRI), found.median(BARE_CRI)
    return [
        Row(
            NAME,
            "--once on no pods (the process's fixed cost): kubecore on cri vs bare CRI client",
            ours,
            "s",
            baseline=floor,
        ),
        Row(
            NAME,
            "--once on no pods, the process's CPU: kubecore on cri vs bare CRI client",
            found.cpu(KUBECORE_CRI, "client"),
            "s",
            baseline=found.cpu(BARE_CRI, "client"),
        ),
    ]


def rows_of(size: int, found: Figures) -> list[Row]:
    ours, floor = found.median(KUBECORE_CRI), found.median(BARE_CRI)
    assert ours is not None and floor is not None
    rows = [
        Row(
            NAME,
            f"--once {size} pods on containerd (whole process): kubecore vs bare CRI client",
            ours,
            "s",
            baseline=floor,
            target=f"<= {TARGET_RATIO:.2f}x",
            met=ours <= TARGET_RATIO * floor,
        ),
        Row(
            NAME,
            f"--once {size} pods on containerd, the process's CPU: kubecore vs bare CRI client",
            found.cpu(KUBECORE_CRI, "client"),
            "s",
            baseline=found.cpu(BARE_CRI, "client"),
        ),
    ]
    docker, direct = found.median(KUBECORE_DOCKER), found.median(DOCKER_DIRECT)
    if docker is None or direct is None:
        return rows
    return [
        *rows,
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
