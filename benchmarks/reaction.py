"""4. Reaction time: a container of a running pod dies; how long until its replacement is started.

The agent runs its own background loop (``Kubelet.start()``) in real time, with the relist and
resync intervals both set long (30 s), so only the runtime's event stream can explain a reaction
faster than that. Each sample kills the container of a different pod (a first death restarts at
once; a second would wait out the crash-loop backoff). The time runs from the kill returning
until the replacement's ``start_container`` returns (noted by a proxy between the agent and the
runtime).

* **in-memory runtime**: ``FakeRuntime.crash`` on a SystemClock, no injected latency.
* **Docker**: ``docker kill`` (SIGKILL) through docker-py; the engine's ``die`` event wakes the
  agent, which creates and starts a new container.

The baseline is the interval the agent would otherwise wait for (its relist/resync, 30 s here; a
Kubernetes kubelet relists every 1 s).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from benchmarks._common import Context, Row, Skip, make_pods
from benchmarks._docker import NAMESPACE, cleanup, docker_node, engine_client, foreign_agents_note
from benchmarks._fake import SOURCE, fake_node, fake_pods
from benchmarks._timing import WatchedRuntime
from kubecore.runtime import (
    CONTAINER_NAME_LABEL,
    MANAGED_LABEL,
    POD_UID_LABEL,
    RuntimeState,
    SystemClock,
)

BASELINE_SOURCE = "the relist/resync interval the benchmark sets itself, not measured"
NAME = "reaction"
INTERVAL = 30.0
FAKE_TARGET = 0.1
DOCKER_TARGET = INTERVAL / 10


def run(ctx: Context) -> list[Row]:
    rows = [fake_reaction(ctx)]
    try:
        rows.append(docker_reaction(ctx))
    except Skip as skip:
        ctx.note(f"Docker part skipped: {skip}")
    return rows


def _sample(watch: WatchedRuntime, kill: Any, container_id: str, timeout: float) -> float | None:
    before = watch.start_count()
    t0 = time.perf_counter()
    kill(container_id)
    t1 = time.perf_counter()
    started = watch.wait_for_start(before + 1, timeout)
    if started is None:
        return None
    return started - t1 if started > t1 else started - t0


def _summary(ctx: Context, what: str, samples: list[float], missed: int) -> None:
    ms = ", ".join(f"{s * 1e3:.1f}" for s in samples)
    ctx.note(
        f"{what}: {len(samples)} samples (ms): {ms}"
        + (f"; {missed} missed (no replacement within the wait)" if missed else "")
    )


def fake_reaction(ctx: Context) -> Row:
    count = 3 if ctx.quick else 20
    pods = fake_pods(count, prefix="react", containers=1)
    samples: list[float] = []
    missed = 0
    with fake_node(clock=SystemClock(), resync_interval=INTERVAL, relist_interval=INTERVAL) as node:
        node.kubelet.set_pods(pods, source=SOURCE)
        node.kubelet.start()
        if node.watch.wait_for_start(count, 30.0) is None:
            raise RuntimeError(f"the {count} pods did not start on the fake runtime within 30 s")
        time.sleep(0.2)
        by_uid = {
            c.labels.get(POD_UID_LABEL): c.id
            for c in node.runtime.snapshot().containers
            if c.state is RuntimeState.RUNNING
        }
        for pod in pods:
            if samples and ctx.time_left() < 5:
                break
            sample = _sample(node.watch, node.runtime.crash, by_uid[pod.uid], 5.0)
            if sample is None:
                missed += 1
            else:
                samples.append(sample)
            time.sleep(0.05)
    _summary(ctx, "in-memory runtime", samples, missed)
    value = statistics.median(samples) if samples else None
    return Row(
        NAME,
        "container death -> replacement started, in-memory runtime (median)",
        value,
        "s",
        baseline=INTERVAL,
        baseline_source=BASELINE_SOURCE,
        target=f"<= {FAKE_TARGET * 1e3:g} ms",
        met=value is not None and not missed and value <= FAKE_TARGET,
    )


def docker_reaction(ctx: Context) -> Row:
    client = engine_client()
    count = 2 if ctx.quick else 8
    pods = make_pods(count, containers=1, prefix="react", namespace=NAMESPACE)
    samples: list[float] = []
    missed = 0
    try:
        cleanup(client)
        warning = foreign_agents_note(client)
        if warning:
            ctx.note(warning)
        with docker_node(resync_interval=INTERVAL, relist_interval=INTERVAL) as node:
            node.kubelet.set_pods(pods, source="bench")
            node.kubelet.start()
            if node.watch.wait_for_start(count, 60.0) is None:
                raise RuntimeError(f"the {count} pods did not start on Docker within 60 s")
            time.sleep(2.0)  # let the loop settle and the event stream connect

            def kill(container_id: str) -> None:
                client.kill(container_id, signal="KILL")

            for pod in pods:
                if samples and ctx.time_left() < 12:
                    break
                listed = client.containers(
                    filters={
                        "label": [
                            MANAGED_LABEL,
                            f"{POD_UID_LABEL}={pod.uid}",
                            f"{CONTAINER_NAME_LABEL}=c0",
                        ]
                    }
                )
                if not listed:
                    missed += 1
                    continue
                sample = _sample(node.watch, kill, listed[0]["Id"], 10.0)
                if sample is None:
                    missed += 1
                else:
                    samples.append(sample)
                time.sleep(0.2)
    finally:
        cleanup(client)
        client.close()
    _summary(ctx, "Docker", samples, missed)
    value = statistics.median(samples) if samples else None
    return Row(
        NAME,
        "container death -> replacement started, Docker (median)",
        value,
        "s",
        baseline=INTERVAL,
        baseline_source=BASELINE_SOURCE,
        target=f"< {DOCKER_TARGET:g} s (resync / 10)",
        met=value is not None and not missed and value < DOCKER_TARGET,
    )
