"""3. Pod start on Docker: N pods (a sandbox and one container each, local image) from nothing to
all running, by kubecore and by the tools a user could choose instead, on the same engine in the
same run.

* **kubecore**: an agent on the ``docker`` plugin with its loop running and idle gets the N pods
  (``set_pods``); timed until the N-th app container's start returns (a proxy between the agent
  and the runtime notes it). The agent's 8 pod workers give it its parallelism.
* **docker-py direct** (the baseline): the same engine calls written by hand with docker-py's
  ``APIClient``, at the same parallelism (8 threads): per pod, create and start a pause container
  (``ipc_mode=shareable``), then create and start the app container in its network and IPC
  namespaces. No image checks, no list, no labels beyond one: the floor for this work.
* **Docker Compose v1** (Debian's ``docker-compose`` 1.29): ``up -d`` of the same containers (a
  pause service on the default bridge, the app in ``network_mode: service:...``). Timed as the
  command, so its start-up (in the notes) is included. ``COMPOSE_PARALLEL_LIMIT`` stays at its
  default (64): compose 1.29 deadlocks when it is lower than the number of dependent services.
* **podman kube play** of the same v1 Pod YAML (podman 4.3; its own runtime and storage, with an
  infra container per pod). Timed as the command.

Every method runs once untimed (N=1) to warm up (podman builds its pause image on first use),
then the rounds interleave the methods; the figure is the median. Everything is removed between
runs (labels, ``down``), untimed. Peers are installed from the distribution in full mode only.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import yaml

from benchmarks._common import BENCH_LABEL, TERM_LOOP, TEST_IMAGE, Context, Row, make_pods
from benchmarks._docker import (
    NAMESPACE,
    PAUSE_IMAGE,
    base_url,
    cleanup,
    docker_node,
    engine_client,
    foreign_agents_note,
)
from kubecore import Pod

NAME = "docker_start"
WORKERS = 8
TARGET_RATIO = 1.10
RUN_LABEL = "docker_start"
PROJECT = "kcbench"
CONTAINERS_CONF = "/etc/containers/containers.conf"
CONTAINERS_CONF_TEXT = """\
# Written by kubecore's benchmarks (python -m benchmarks): podman's default rlimits are refused
# on some hosts.
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
"""


def run(ctx: Context) -> list[Row]:
    client = engine_client()
    n = 2 if ctx.quick else 20
    rounds = 1 if ctx.quick else 3
    pods = make_pods(n, containers=1, prefix="start", namespace=NAMESPACE)
    workdir = tempfile.mkdtemp(prefix="kubecore-bench-start-")
    methods: dict[str, Callable[[list[Pod]], float]] = {
        "kubecore": lambda p: start_kubecore(ctx, p),
        "docker-py direct": lambda p: start_direct(client, p),
    }
    teardown: dict[str, Callable[[list[Pod]], None]] = {}
    try:
        cleanup(client)
        warning = foreign_agents_note(client)
        if warning:
            ctx.note(warning)
        if peer_ready(ctx, "docker-compose", ("docker-compose",)):
            methods["Docker Compose v1"] = lambda p: start_compose(workdir, p)
            teardown["Docker Compose v1"] = lambda p: down_compose(workdir, p)
        if peer_ready(ctx, "podman", ("podman", "catatonit")) and podman_ready(ctx):
            methods["podman kube play"] = lambda p: start_podman(workdir, p)
            teardown["podman kube play"] = lambda p: down_podman(workdir, p)
        times: dict[str, list[float]] = {name: [] for name in methods}
        broken: dict[str, str] = {}
        for round_ in range(rounds + 1):
            warm = round_ == 0
            for name, method in methods.items():
                if name in broken or (not warm and ctx.time_left() < 20 and times[name]):
                    continue
                batch = pods[:1] if warm else pods
                try:
                    seconds = method(batch)
                    if not warm:
                        times[name].append(seconds)
                    ctx.log(f"{name}: {len(batch)} pods in {seconds:.2f}s{' (warm-up)' * warm}")
                except (subprocess.SubprocessError, OSError, PeerFailed) as error:
                    if name in ("kubecore", "docker-py direct"):
                        raise
                    broken[name] = str(error)[-400:]
                    ctx.note(f"{name} failed, left out: {broken[name]}")
                finally:
                    if name in teardown:
                        try:
                            teardown[name](batch)
                        except (subprocess.SubprocessError, OSError, PeerFailed) as error:
                            ctx.log(f"{name} teardown: {error}")
                    cleanup(client, RUN_LABEL)
        if "Docker Compose v1" in methods and "Docker Compose v1" not in broken:
            ctx.note(f"Docker Compose CLI start-up alone: {compose_startup(workdir):.2f} s")
    finally:
        cleanup(client, RUN_LABEL)
        client.close()
        shutil.rmtree(workdir, ignore_errors=True)

    for name, values in times.items():
        if values:
            ctx.note(f"{name}: " + ", ".join(f"{v:.2f}" for v in values) + " s")
    kubecore = statistics.median(times["kubecore"])
    rows = [
        Row(
            NAME,
            f"start {n} pods: kubecore vs docker-py direct",
            kubecore,
            "s",
            baseline=statistics.median(times["docker-py direct"]),
            target=f"<= {TARGET_RATIO:.2f}x",
            met=kubecore <= TARGET_RATIO * statistics.median(times["docker-py direct"]),
        )
    ]
    for peer in ("Docker Compose v1", "podman kube play"):
        if times.get(peer):
            rows.append(
                Row(
                    NAME,
                    f"start {n} pods: kubecore vs {peer}",
                    kubecore,
                    "s",
                    baseline=statistics.median(times[peer]),
                )
            )
    return rows


class PeerFailed(Exception):
    pass


# --- kubecore and the floor -------------------------------------------------------------


def start_kubecore(ctx: Context, pods: list[Pod]) -> float:
    with docker_node(workers=WORKERS) as node:
        node.kubelet.start()
        time.sleep(0.3)  # the first (empty) pass is done; the loop waits for work
        before = node.counter.snapshot()
        t0 = time.perf_counter()
        node.kubelet.set_pods(pods, source="bench")
        done = node.watch.wait_for_start(len(pods), 120.0)
        if done is None:
            raise RuntimeError(f"kubecore did not start {len(pods)} pods within 120 s")
        requests = node.counter.snapshot() - before
        calls = node.watch.calls()
    if calls["run_sandbox"] > len(pods):
        ctx.note(
            f"kubecore created {calls['run_sandbox']} sandboxes for {len(pods)} pods: another"
            " agent on this engine (tests?) removed some; this figure is disturbed"
        )
    if len(pods) > 1:
        ctx.log(f"kubecore engine requests: {dict(requests)}")
    return done - t0


def start_direct(client: Any, pods: list[Pod]) -> float:
    labels = {BENCH_LABEL: RUN_LABEL}
    no_restart = {"Name": "no"}

    def one(pod: Pod) -> None:
        name = f"{PROJECT}-direct-{pod.metadata.name}"
        sandbox = client.create_container(
            image=PAUSE_IMAGE,
            name=f"{name}-pause",
            labels=labels,
            host_config=client.create_host_config(ipc_mode="shareable", restart_policy=no_restart),
        )["Id"]
        client.start(sandbox)
        joined = f"container:{sandbox}"
        app = client.create_container(
            image=TEST_IMAGE,
            name=f"{name}-c0",
            entrypoint=list(TERM_LOOP),
            labels=labels,
            host_config=client.create_host_config(
                network_mode=joined, ipc_mode=joined, restart_policy=no_restart
            ),
        )["Id"]
        client.start(app)

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        t0 = time.perf_counter()
        list(pool.map(one, pods))
        return time.perf_counter() - t0


# --- peers --------------------------------------------------------------------------------


def _run(argv: list[str], *, timeout: float = 180.0, **kwargs: Any) -> float:
    env = dict(os.environ, DOCKER_HOST=base_url())
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, **kwargs)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise PeerFailed(
            f"{' '.join(argv[:3])} ... exited {done.returncode}: {done.stderr.strip()}"
        )
    return seconds


def peer_ready(ctx: Context, package: str, commands: tuple[str, ...]) -> bool:
    """The peer's commands are installed (installed from the distribution in full mode)."""
    missing = [c for c in commands if shutil.which(c) is None]
    if not missing:
        return True
    if not ctx.install:
        ctx.note(f"{package} not installed: left out (quick mode never installs)")
        return False
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        ctx.note(f"{package} not installed and cannot be (needs root and apt-get): left out")
        return False
    packages = sorted({package, *missing})
    ctx.log(f"installing {' '.join(packages)}")
    try:
        subprocess.run(
            ["apt-get", "install", "-y", "-q", *packages],
            capture_output=True,
            timeout=600,
            check=True,
            env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
        )
    except (subprocess.SubprocessError, OSError) as error:
        ctx.note(f"{package} could not be installed ({error}): left out")
        return False
    return all(shutil.which(c) for c in commands)


def compose_file(workdir: str, pods: list[Pod]) -> str:
    services: dict[str, Any] = {}
    labels = {BENCH_LABEL: RUN_LABEL}
    for pod in pods:
        name = pod.metadata.name
        services[f"{name}-pause"] = {
            "image": PAUSE_IMAGE,
            "ipc": "shareable",
            "network_mode": "bridge",
            "labels": labels,
        }
        services[f"{name}-c0"] = {
            "image": TEST_IMAGE,
            "entrypoint": [arg.replace("$", "$$") for arg in TERM_LOOP],
            "network_mode": f"service:{name}-pause",
            "ipc": f"service:{name}-pause",
            "depends_on": [f"{name}-pause"],
            "labels": labels,
        }
    path = os.path.join(workdir, f"compose-{len(pods)}.yaml")
    with open(path, "w", encoding="utf-8") as out:
        yaml.safe_dump({"version": "2.4", "services": services}, out)
    return path


def start_compose(workdir: str, pods: list[Pod]) -> float:
    path = compose_file(workdir, pods)
    return _run(["docker-compose", "-p", PROJECT, "-f", path, "up", "-d", "--no-build"])


def down_compose(workdir: str, pods: list[Pod]) -> None:
    path = compose_file(workdir, pods)
    _run(["docker-compose", "-p", PROJECT, "-f", path, "down", "-t", "0"])


def compose_startup(workdir: str) -> float:
    path = compose_file(workdir, [])
    return _run(["docker-compose", "-p", PROJECT, "-f", path, "config", "-q"])


def podman_ready(ctx: Context) -> bool:
    """podman can run here: its configuration and the test image."""
    if not os.path.exists(CONTAINERS_CONF):
        if not ctx.install:
            ctx.note(f"podman: {CONTAINERS_CONF} missing: left out (quick mode changes nothing)")
            return False
        os.makedirs(os.path.dirname(CONTAINERS_CONF), exist_ok=True)
        with open(CONTAINERS_CONF, "w", encoding="utf-8") as out:
            out.write(CONTAINERS_CONF_TEXT)
        ctx.log(f"wrote {CONTAINERS_CONF}")
    exists = subprocess.run(
        ["podman", "image", "exists", TEST_IMAGE], capture_output=True, timeout=60
    )
    if exists.returncode == 0:
        return True
    try:
        save = subprocess.Popen(
            ["docker", "save", TEST_IMAGE],
            stdout=subprocess.PIPE,
            env=dict(os.environ, DOCKER_HOST=base_url()),
        )
        load = subprocess.run(
            ["podman", "load"], stdin=save.stdout, capture_output=True, timeout=120
        )
        save.wait(timeout=120)
    except (subprocess.SubprocessError, OSError) as error:
        ctx.note(f"podman: could not load {TEST_IMAGE} from Docker ({error}): left out")
        return False
    if load.returncode != 0:
        ctx.note(f"podman: could not load {TEST_IMAGE}: {load.stderr.decode()[-300:]}: left out")
        return False
    return True


def pod_yaml(workdir: str, pods: list[Pod]) -> str:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{PROJECT}-{pod.metadata.name}",
                "labels": {BENCH_LABEL: RUN_LABEL},
            },
            "spec": {
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 2,
                "containers": [
                    {
                        "name": "c0",
                        "image": TEST_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "command": list(TERM_LOOP),
                    }
                ],
            },
        }
        for pod in pods
    ]
    path = os.path.join(workdir, f"pods-{len(pods)}.yaml")
    with open(path, "w", encoding="utf-8") as out:
        yaml.safe_dump_all(docs, out)
    return path


def start_podman(workdir: str, pods: list[Pod]) -> float:
    return _run(["podman", "kube", "play", "--quiet", pod_yaml(workdir, pods)])


def down_podman(workdir: str, pods: list[Pod]) -> None:
    _run(["podman", "kube", "down", pod_yaml(workdir, pods)])
