"""6. Manifest edits: from a write to a manifest file to the pod's container running, on an
agent as ``kubecore run DIR`` builds it (the file source with its default check interval of
20 s and settle time, the source poller and the sync loop running, real time), on the in-memory
runtime. Each edit writes a new manifest file in place (not a rename) holding one more pod; the
figure is the time until that pod's container runs (median and p99). Without the file watch an
edit waits for the next check (up to 20 s) plus the settle time.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

from benchmarks._common import TEST_IMAGE, Context, Row, make_pods
from kubecore import FileSource, Kubelet, KubeletConfig, Pod, SourcePoller
from kubecore.manifest import dump_pods_yaml
from kubecore.runtime import RuntimeState, SystemClock
from kubecore_fake import FakeRuntime

NAME = "manifest_watch"
TARGET = 1.0
TIMEOUT = 30.0


def run(ctx: Context) -> list[Row]:
    edits = 5 if ctx.quick else 40
    latencies: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kubecore-bench-watch-") as workdir:
        manifests = os.path.join(workdir, "manifests")
        os.mkdir(manifests)
        runtime = FakeRuntime(clock=SystemClock(), images=[TEST_IMAGE])
        kubelet = Kubelet(
            runtime,
            runtime,
            config=KubeletConfig(root_dir=os.path.join(workdir, "root")),
            clock=SystemClock(),
            sources=("file",),
        )
        source = FileSource(manifests)
        poller = SourcePoller([source], kubelet.update)
        kubelet.start()
        poller.start()
        try:
            if not source.wait_watching(10.0):
                ctx.note("the file watch did not start within 10 s: the figures are the polling")
            for pod in make_pods(edits, containers=1, prefix="edit", namespace="default"):
                if latencies and ctx.time_left() < 2.0:
                    break
                latencies.append(edit_latency(runtime, manifests, pod))
        finally:
            poller.stop()
            kubelet.stop()
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    ctx.note(
        f"{len(latencies)} edits: median {statistics.median(latencies) * 1e3:.0f} ms,"
        f" p99 {p99 * 1e3:.0f} ms, max {ordered[-1] * 1e3:.0f} ms (file check interval 20 s)"
    )
    return [
        Row(
            NAME,
            "manifest edit -> pod running: median",
            statistics.median(latencies),
            "s",
            target=f"<= {TARGET:g} s",
            met=statistics.median(latencies) <= TARGET,
        ),
        Row(
            NAME,
            "manifest edit -> pod running: p99",
            p99,
            "s",
            target=f"<= {TARGET:g} s",
            met=p99 <= TARGET,
        ),
    ]


def edit_latency(runtime: FakeRuntime, manifests: str, pod: Pod) -> float:
    """Write ``pod`` as a new manifest; seconds until its container runs."""
    name = pod.metadata.name
    path = os.path.join(manifests, f"{name}.yaml")
    started = time.perf_counter()
    with open(path, "w", encoding="utf-8") as out:
        out.write(dump_pods_yaml([pod]))
    while time.perf_counter() - started < TIMEOUT:
        if runtime.find_containers(pod_name=name, state=RuntimeState.RUNNING):
            return time.perf_counter() - started
        time.sleep(0.002)
    raise RuntimeError(f"pod {name} did not run within {TIMEOUT:g} s of its manifest")
