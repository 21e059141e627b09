"""Pod start on containerd (CRI) beside Docker: 10 and 50 pods (a sandbox and one container
each, local image) from nothing to all running, by the agent's loop and by the bare engine
clients, on both engines in the same run.

* **kubecore on cri**: an agent on the ``cri`` runtime (``CriRuntime`` over the test
  containerd) with its loop running and idle gets the N pods (``set_pods``); timed until the
  N-th app container's ``StartContainer`` returns (a proxy between the agent and the runtime
  notes it). Its 8 pod workers give it its parallelism. Its CRI calls are counted (a gRPC client
  interceptor) and shown in the notes.
* **bare CRI client** (the floor on containerd): the CRI calls kubecore makes for a pod, made by
  hand on the generated stubs at the same parallelism (8 threads, ``_bare_cri``):
  ``RunPodSandbox``, ``PodSandboxStatus``, ``ImageStatus``, ``CreateContainer``,
  ``StartContainer``, with what in kubecore's requests makes the engine work (the host's DNS, the
  ``/etc/hosts`` and termination-log bind mounts); then one ``ListContainers`` sees them running.
* **kubecore on docker** and **docker-py direct**: the same as ``docker_start`` (its floor:
  a pause container and the app container joined to it, 8 threads), on the test Docker engine,
  when one answers (else left out, saying so).

One untimed warm-up (1 pod) per method (none in ``--quick``), then the rounds interleave the
methods; the figure is the median. Everything is removed between runs, untimed.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from benchmarks import _docker
from benchmarks._common import TEST_IMAGE, Context, Row, Skip, make_pods
from benchmarks._cpu import Figures, cpu_spent, state_dir_of
from benchmarks._cri import (
    NAMESPACE,
    WORKERS,
    Containerd,
    cleanup,
    cri_node,
    find_containerd,
    foreign_agents_note,
    start_bare,
)
from benchmarks.docker_start import start_direct as start_docker_direct
from benchmarks.docker_start import start_kubecore as start_docker_kubecore
from kubecore import Pod

NAME = "cri_start"
TARGET_RATIO = 1.10
RUN_LABEL = "cri_start"
DOCKER_RUN_LABEL = "docker_start"
"""The label ``docker_start``'s direct method puts on its containers."""
KUBECORE_CRI = "kubecore on cri"
BARE_CRI = "bare CRI client"
KUBECORE_DOCKER = "kubecore on docker"
DOCKER_DIRECT = "docker-py direct"


def run(ctx: Context) -> list[Row]:
    containerd = find_containerd()
    # pods -> rounds: more of the smaller size, whose times vary more from round to round
    rounds = {2: 1} if ctx.quick else {10: 5, 50: 3}
    engines = Engines(ctx, containerd)
    figures: dict[int, Figures] = {}
    try:
        engines.clean()
        for warning in engines.warnings():
            ctx.note(warning)
        for size, count in rounds.items():
            if ctx.time_left() < 30 and figures:
                ctx.note(f"out of time before {size} pods")
                break
            figures[size] = engines.alternate(size, count)
            figures[size].note(ctx, f"{size} pods")
        for size, calls in engines.cri_calls.items():
            ctx.note(
                f"{size} pods, kubecore's CRI calls while starting them: "
                + ", ".join(f"{k} x{v}" for k, v in sorted(calls.items()))
            )
    finally:
        engines.clean()
        engines.close()
    ctx.note(f"containerd: {containerd.version} at {containerd.endpoint}")
    ctx.note(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return [row for size, found in figures.items() for row in rows_of(size, found)]


class Engines:
    """The methods to time, on containerd and (when it answers) Docker, and their cleanup."""

    def __init__(self, ctx: Context, containerd: Containerd) -> None:
        self.ctx = ctx
        self.containerd = containerd
        self.cri_calls: dict[int, Counter[str]] = {}
        self.docker: Any = None
        try:
            self.docker = _docker.engine_client()
        except Skip as skip:
            ctx.note(f"Docker left out: {skip}")

    def methods(self, size: int) -> dict[str, tuple[str, Callable[[], float]]]:
        """Each method: the state directory of its engine, and the method."""
        cri_pods = make_pods(
            size, containers=1, prefix="cri", namespace=NAMESPACE, image=self.containerd.image
        )
        bare_pods = make_pods(size, containers=1, prefix="bare", namespace=NAMESPACE)
        on_cri = state_dir_of(self.containerd.endpoint)
        methods: dict[str, tuple[str, Callable[[], float]]] = {
            KUBECORE_CRI: (on_cri, lambda: self.start_kubecore(cri_pods)),
            BARE_CRI: (on_cri, lambda: start_bare(self.containerd, bare_pods, RUN_LABEL)),
        }
        if self.docker is not None:
            docker_pods = make_pods(
                size, containers=1, prefix="start", namespace=_docker.NAMESPACE, image=TEST_IMAGE
            )
            on_docker = state_dir_of(_docker.base_url())
            methods[KUBECORE_DOCKER] = (
                on_docker,
                lambda: start_docker_kubecore(self.ctx, docker_pods),
            )
            methods[DOCKER_DIRECT] = (
                on_docker,
                lambda: start_docker_direct(self.docker, docker_pods),
            )
        return methods

    def alternate(self, size: int, rounds: int) -> Figures:
        """Each method once on one pod (untimed; not in ``--quick``), then ``rounds`` rounds of
        them in turn."""
        warm_up = self.methods(1)
        timed = self.methods(size)
        found = Figures()
        for round_ in range(0 if self.ctx.quick else -1, rounds):
            warm = round_ < 0
            for name, (state_dir, method) in (warm_up if warm else timed).items():
                if not warm and found.times.get(name) and self.ctx.time_left() < 20:
                    continue
                try:
                    with cpu_spent(state_dir) as spent:
                        seconds = method()
                finally:
                    self.clean()
                if not warm:
                    found.add(name, seconds, spent)
                self.ctx.log(
                    f"{name}: {1 if warm else size} pods in {seconds:.2f}s{' (warm-up)' * warm}"
                )
        return found

    def start_kubecore(self, pods: list[Pod]) -> float:
        with cri_node(self.containerd, workers=WORKERS) as node:
            node.kubelet.start()
            time.sleep(0.3)  # the first (empty) pass is done; the loop waits for work
            before = node.counter.snapshot()
            t0 = time.perf_counter()
            node.kubelet.set_pods(pods, source="bench")
            done = node.watch.wait_for_start(len(pods), 120.0)
            if done is None:
                raise RuntimeError(f"kubecore did not start {len(pods)} pods on cri within 120 s")
            calls = node.counter.snapshot() - before
        if len(pods) > 1:
            self.cri_calls[len(pods)] = calls
        return done - t0

    def clean(self) -> None:
        cleanup(self.containerd, RUN_LABEL)
        if self.docker is not None:
            _docker.cleanup(self.docker, DOCKER_RUN_LABEL)

    def warnings(self) -> list[str]:
        found = [foreign_agents_note(self.containerd)]
        if self.docker is not None:
            found.append(_docker.foreign_agents_note(self.docker))
        return [w for w in found if w]

    def close(self) -> None:
        if self.docker is not None:
            self.docker.close()


def rows_of(size: int, found: Figures) -> list[Row]:
    ours, floor = found.median(KUBECORE_CRI), found.median(BARE_CRI)
    assert ours is not None and floor is not None
    rows = [
        Row(
            NAME,
            f"daemon start {size} pods on containerd: kubecore vs bare CRI client",
            ours,
            "s",
            baseline=floor,
            target=f"<= {TARGET_RATIO:.2f}x",
            met=ours <= TARGET_RATIO * floor,
        ),
        Row(
            NAME,
            f"client CPU starting {size} pods on containerd: kubecore vs bare CRI client",
            found.cpu(KUBECORE_CRI, "client"),
            "s",
            baseline=found.cpu(BARE_CRI, "client"),
        ),
        Row(
            NAME,
            f"containerd's CPU starting {size} pods: for kubecore vs for the bare CRI client",
            found.cpu(KUBECORE_CRI, "engine"),
            "s",
            baseline=found.cpu(BARE_CRI, "engine"),
        ),
    ]
    docker, direct = found.median(KUBECORE_DOCKER), found.median(DOCKER_DIRECT)
    if docker is None or direct is None:
        return rows
    return [
        *rows,
        Row(
            NAME,
            f"daemon start {size} pods on Docker: kubecore vs docker-py direct",
            docker,
            "s",
            baseline=direct,
            target=f"<= {TARGET_RATIO:.2f}x",
            met=docker <= TARGET_RATIO * direct,
        ),
        Row(
            NAME,
            f"daemon start {size} pods: kubecore on containerd vs kubecore on Docker",
            ours,
            "s",
            baseline=docker,
        ),
        Row(
            NAME,
            f"start {size} pods, the floors: bare CRI client vs docker-py direct",
            floor,
            "s",
            baseline=direct,
        ),
        Row(
            NAME,
            f"engine CPU starting {size} pods, the floors: containerd vs Docker",
            found.cpu(BARE_CRI, "engine"),
            "s",
            baseline=found.cpu(DOCKER_DIRECT, "engine"),
        ),
    ]
