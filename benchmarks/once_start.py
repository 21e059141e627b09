"""4. ``kubecore run DIR --runtime docker --once`` as a user runs it: the whole process, from the
command to its exit with every pod running, beside the other commands that start the same
single-container busybox pods on a machine, alternated in one run (medians).

* **kubecore --once**: the installed ``kubecore`` command on a directory of N pod manifests
  (its own node name, no API server). It exits once every pod is settled.
* **docker-py same calls** (the floor): a ``python`` process that imports docker-py and issues the
  engine calls kubecore makes for a pod, by hand, 8 threads as kubecore's 8 pod workers: create and
  start a pause container, then create and start the app container in its namespaces.
* **docker-compose up -d** of the same containers (a pause service and the app joined to it).
* **podman kube play** of the same v1 Pod YAML, on podman's own store; busybox:1.35 is loaded into
  it from Docker (``docker save | podman load``), never pulled.

One untimed warm-up (N=1) per method, then the rounds alternate the methods; everything is removed
between runs (untimed). ``--quick`` runs 3 pods once and leaves out a peer that is not installed.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import yaml

from benchmarks._common import (
    BENCH_LABEL,
    TERM_LOOP,
    TEST_IMAGE,
    Context,
    Row,
    compile_sources,
    make_pods,
)
from benchmarks._docker import NAMESPACE, PAUSE_IMAGE, base_url, cleanup, engine_client
from benchmarks.docker_start import (
    PeerFailed,
    down_compose,
    down_podman,
    podman_ready,
    start_compose,
    start_podman,
)
from kubecore import Pod
from kubecore.manifest import pod_to_dict

NAME = "once_start"
WORKERS = 8
RUN_LABEL = "once_start"
NODE = "kubecore-bench-once"
PEER_RATIO = 0.8
FLOOR_RATIO = 1.15
TIMEOUT = 180.0

DIRECT_SCRIPT = """
import sys
from concurrent.futures import ThreadPoolExecutor
import docker

url, pause, image, label, prefix, count = sys.argv[1:7]
command = sys.argv[7:]
client = docker.APIClient(base_url=url, version="auto", max_pool_size=16)
labels = {label: "once_start"}
no_restart = {"Name": "no"}

def one(i):
    name = f"{prefix}-{i:05d}"
    sandbox = client.create_container(
        image=pause, name=f"{name}-pause", labels=labels,
        host_config=client.create_host_config(ipc_mode="shareable", restart_policy=no_restart),
    )["Id"]
    client.start(sandbox)
    joined = f"container:{sandbox}"
    app = client.create_container(
        image=image, name=f"{name}-c0", entrypoint=command, labels=labels,
        host_config=client.create_host_config(
            network_mode=joined, ipc_mode=joined, restart_policy=no_restart
        ),
    )["Id"]
    client.start(app)

with ThreadPoolExecutor(max_workers=8) as pool:
    list(pool.map(one, range(int(count))))
"""


def kubecore_command() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "kubecore")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "kubecore"]


def run(ctx: Context) -> list[Row]:
    client = engine_client()
    sizes = [3] if ctx.quick else [10, 50]
    rounds = 1 if ctx.quick else 3
    workdir = tempfile.mkdtemp(prefix="kubecore-bench-once-")
    figures: dict[int, dict[str, float]] = {}
    try:
        compile_sources()  # as pip does: each timed process then starts without compiling
        cleanup(client, RUN_LABEL)
        methods: dict[str, Callable[[list[Pod]], float]] = {
            "kubecore --once": lambda p: start_kubecore(workdir, p),
            "docker-py same calls": lambda p: start_direct(p),
        }
        teardown: dict[str, Callable[[list[Pod]], None]] = {}
        if peer_installed(ctx, "docker-compose"):
            methods["docker-compose up -d"] = lambda p: start_compose(workdir, p)
            teardown["docker-compose up -d"] = lambda p: down_compose(workdir, p)
        if peer_installed(ctx, "podman") and podman_ready(ctx):
            methods["podman kube play"] = lambda p: start_podman(workdir, p)
            teardown["podman kube play"] = lambda p: down_podman(workdir, p)
        for size in sizes:
            pods = make_pods(size, containers=1, prefix="once", namespace=NAMESPACE)
            times = alternate(ctx, client, methods, teardown, pods, rounds)
            figures[size] = {name: statistics.median(v) for name, v in times.items() if v}
            for name, values in times.items():
                ctx.note(f"{size} pods, {name}: " + ", ".join(f"{v:.2f}" for v in values) + " s")
    finally:
        cleanup(client, RUN_LABEL)
        client.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return rows_of(figures)


def rows_of(figures: dict[int, dict[str, float]]) -> list[Row]:
    rows: list[Row] = []
    for size, medians in figures.items():
        ours = medians["kubecore --once"]
        floor = medians["docker-py same calls"]
        rows.append(
            Row(
                NAME,
                f"--once {size} pods (whole process): kubecore vs docker-py same calls",
                ours,
                "s",
                baseline=floor,
                target=f"<= {FLOOR_RATIO:.2f}x",
                met=ours <= FLOOR_RATIO * floor,
            )
        )
        for peer in ("docker-compose up -d", "podman kube play"):
            if peer in medians:
                rows.append(
                    Row(
                        NAME,
                        f"--once {size} pods (whole process): kubecore vs {peer}",
                        ours,
                        "s",
                        baseline=medians[peer],
                        target=f"<= {PEER_RATIO:.2f}x",
                        met=ours <= PEER_RATIO * medians[peer],
                    )
                )
    return rows


def alternate(
    ctx: Context,
    client: Any,
    methods: dict[str, Callable[[list[Pod]], float]],
    teardown: dict[str, Callable[[list[Pod]], None]],
    pods: list[Pod],
    rounds: int,
) -> dict[str, list[float]]:
    """Each method once on one pod (untimed), then ``rounds`` rounds of every method in turn."""
    times: dict[str, list[float]] = {name: [] for name in methods}
    broken: set[str] = set()
    for round_ in range(rounds + 1):
        warm = round_ == 0
        batch = pods[:1] if warm else pods
        for name, method in methods.items():
            if name in broken or (not warm and times[name] and ctx.time_left() < 30):
                continue
            try:
                seconds = method(batch)
                if not warm:
                    times[name].append(seconds)
                ctx.log(f"{name}: {len(batch)} pods in {seconds:.2f}s{' (warm-up)' * warm}")
            except (subprocess.SubprocessError, OSError, PeerFailed) as error:
                if name in ("kubecore --once", "docker-py same calls"):
                    raise
                broken.add(name)
                ctx.note(f"{name} failed, left out: {str(error)[-400:]}")
            finally:
                if name in teardown:
                    try:
                        teardown[name](batch)
                    except (subprocess.SubprocessError, OSError, PeerFailed) as error:
                        ctx.log(f"{name} teardown: {error}")
                cleanup(client, RUN_LABEL)
    return times


def peer_installed(ctx: Context, command: str) -> bool:
    if shutil.which(command) is None:
        ctx.note(f"{command} is not installed: left out")
        return False
    return True


def timed(argv: list[str], **kwargs: Any) -> float:
    env = dict(os.environ, DOCKER_HOST=base_url())
    t0 = time.perf_counter()
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=TIMEOUT, env=env, check=False, **kwargs
    )
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv[:4])} ... exited {done.returncode}:\n{done.stdout}{done.stderr}"
        )
    return seconds


def manifests_dir(workdir: str, pods: list[Pod]) -> str:
    path = os.path.join(workdir, f"manifests-{len(pods)}")
    if not os.path.isdir(path):
        os.makedirs(path)
        with open(os.path.join(path, "pods.yaml"), "w", encoding="utf-8") as out:
            yaml.safe_dump_all([pod_to_dict(p) for p in pods], out)
    return path


def start_kubecore(workdir: str, pods: list[Pod]) -> float:
    root = tempfile.mkdtemp(prefix="root-", dir=workdir)
    argv = [
        *kubecore_command(),
        "run",
        manifests_dir(workdir, pods),
        "--runtime",
        "docker",
        "--runtime-option",
        f"sandbox_image={PAUSE_IMAGE}",
        "--once",
        "--port",
        "0",
        "--node-name",
        NODE,
        "--root-dir",
        root,
        "--log-level",
        "warning",
        "--deadline",
        "120",
    ]
    return timed(argv)


def start_direct(pods: list[Pod]) -> float:
    argv = [
        sys.executable,
        "-c",
        DIRECT_SCRIPT,
        base_url(),
        PAUSE_IMAGE,
        TEST_IMAGE,
        BENCH_LABEL,
        f"once-direct-{len(pods)}",
        str(len(pods)),
        *TERM_LOOP,
    ]
    return timed(argv)
