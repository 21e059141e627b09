"""``kubecore plan`` against ``kubecore run --once`` on the same node on Docker, nothing to change.

100 pods (5 with ``--quick``) are brought up with ``kubecore run --once``; then both commands run
again as real programs, each three times, and their wall times are compared (the median): what
an operator waits for to learn that nothing would change, against what a one-shot sync takes to
find and do nothing. The engine requests are counted in-process, with a counting adapter on the
docker-py client, on a new agent's ``Kubelet.plan`` (the planner ``kubecore plan`` runs) and its
first pass (``Kubelet.sync``, what ``run --once`` starts with), each on a runtime of its own as
each command is a new process. A plan lists the runtime once; the Docker adapter's first
snapshot in a process inspects each container it has not seen (a new agent's does too).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, cast

from benchmarks._common import Context, Row, make_pods
from benchmarks._docker import (
    PAUSE_IMAGE,
    RequestCounter,
    base_url,
    engine_client,
    remove_labelled,
)
from kubecore import FileSource, Kubelet, KubeletConfig, load_runtime
from kubecore.manifest import dump_pods_yaml
from kubecore.runtime import MANAGED_LABEL, POD_NAMESPACE_LABEL
from kubecore_docker import DockerRuntime

NAME = "plan"
NAMESPACE = "kubecore-bench-plan"
"""Its own namespace: the other Docker benchmarks clean up theirs (``kubecore-bench``) as they
start, and a plan would find the pods they removed."""
NODE = "bench-plan"
ROUNDS = 3


def run(ctx: Context) -> list[Row]:
    client = engine_client()
    count = 5 if ctx.quick else 100
    work = Path(tempfile.mkdtemp(prefix="kubecore-bench-plan-"))
    rows: list[Row] = []
    try:
        cleanup(client)
        manifests = work / "pods"
        manifests.mkdir()
        pods = make_pods(count, containers=1, prefix="plan", namespace=NAMESPACE)
        (manifests / "pods.yaml").write_text(dump_pods_yaml(pods))
        root = work / "root"
        t0 = time.monotonic()
        up = command(manifests, root, "run", "--once", "--deadline", "600", "--log-level", "error")
        done = subprocess.run(up, capture_output=True, text=True, timeout=900, check=False)
        ctx.log(f"{count} pods up in {time.monotonic() - t0:.1f}s (exit {done.returncode})")
        if done.returncode != 0:
            ctx.note(f"run --once did not converge: {done.stdout[-300:]}{done.stderr[-300:]}")
        plan_times, plan_codes = timed(command(manifests, root, "plan"), ctx)
        once_times, _ = timed(up, ctx)
        if set(plan_codes) != {0}:
            ctx.note(f"plan exit statuses {plan_codes}: something would change")
        planned, synced, lists, paths = count_requests(manifests, root)
        ctx.note(
            f"{count} pods: plan {planned} requests ({', '.join(paths)}); a new agent's first"
            f" pass {synced} requests; wall times plan {plan_times}, run --once {once_times}"
        )
        rows.append(
            Row(
                NAME,
                f"kubecore plan, {count} running pods, no change",
                statistics.median(plan_times),
                "s",
                baseline=statistics.median(once_times),
                baseline_label="kubecore run --once on the same node",
                note="wall time of the command (median of 3)",
            )
        )
        rows.append(
            Row(
                NAME,
                f"engine requests of a plan, {count} pods",
                float(planned),
                "req",
                baseline=float(synced),
                baseline_label="a new agent's first pass (run --once)",
                target="one list call",
                met=lists == 1,
                note=", ".join(paths),
            )
        )
    finally:
        removed = cleanup(client)
        ctx.log(f"removed {removed} containers")
        client.close()
        shutil.rmtree(work, ignore_errors=True)
    return rows


def cleanup(client: Any) -> int:
    return remove_labelled(client, [MANAGED_LABEL, f"{POD_NAMESPACE_LABEL}={NAMESPACE}"])


def command(manifests: Path, root: Path, *words: str) -> list[str]:
    return [
        sys.executable, "-m", "kubecore", words[0], str(manifests), *words[1:],
        "--runtime", "docker", "--runtime-option", f"base_url={base_url()}",
        "--runtime-option", f"sandbox_image={PAUSE_IMAGE}",
        "--root-dir", str(root), "--node-name", NODE,
    ]  # fmt: skip


def timed(argv: list[str], ctx: Context) -> tuple[list[float], list[int]]:
    """Wall times and exit statuses of ``ROUNDS`` runs; a plan that finds changes is noted with
    its first rows (what the sync before it left undone)."""
    times: list[float] = []
    codes: list[int] = []
    for _ in range(ROUNDS):
        if ctx.time_left() < 20:
            ctx.note("out of time: fewer rounds")
            break
        t0 = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        times.append(round(time.monotonic() - t0, 3))
        codes.append(done.returncode)
        if "plan" in argv and done.returncode == 2:
            changing = [line for line in done.stdout.splitlines()[1:] if " nothing " not in line]
            ctx.note("plan found: " + " | ".join(changing[:4]))
    return times, codes


def count_requests(manifests: Path, root: Path) -> tuple[int, int, int, list[str]]:
    """Engine requests of a new agent's plan (``Kubelet.plan``, the planner ``kubecore plan``
    runs) and of a new agent's first pass, each agent on a runtime of its own as each command
    is a new process; the plan's list calls, and its requests by endpoint."""
    update = FileSource(manifests, settle=0, watch=False).refresh()
    assert update is not None
    config = KubeletConfig(node_name=NODE, root_dir=str(root))
    measured: list[int] = []
    by_path: Counter[str] = Counter()
    for what in ("plan", "sync"):
        runtime, puller, counter = counted_runtime()
        with Kubelet(runtime, puller, config=config) as kubelet:
            kubelet.update(update)
            before = counter.snapshot()
            kubelet.plan() if what == "plan" else kubelet.sync()
            measured.append(sum((counter.snapshot() - before).values()))
            if what == "plan":
                by_path = counter.snapshot() - before
        runtime.close()
    lists = sum(v for k, v in by_path.items() if k.endswith("/containers/json"))
    paths = [f"{k} x{v}" for k, v in sorted(by_path.items())]
    return measured[0], measured[1], lists, paths


def counted_runtime() -> tuple[DockerRuntime, Any, RequestCounter]:
    bundle = load_runtime("docker", base_url=base_url(), sandbox_image=PAUSE_IMAGE)
    runtime = cast(DockerRuntime, bundle.runtime)
    counter = RequestCounter()
    counter.mount_on(runtime.connection.api())
    return runtime, bundle.puller, counter
