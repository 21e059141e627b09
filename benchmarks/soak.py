"""7. Soak: the agent run for minutes as a process, its resources sampled: they stay flat.

* **in-memory runtime**: ``kubecore run DIR --runtime fake`` with 200 pods; every second the whole
  manifest directory is written again (same pods, one annotation changed in one file: the file
  source reads, hashes and merges every file, and one pod's metadata changes).
* **Docker**: ``kubecore run DIR --runtime docker`` with 20 pods; every 5 s a random app container
  is killed with SIGKILL (the agent restarts it, through the crash-loop back-off).

Every 10 s the agent process's resident memory (VmRSS), threads, open file descriptors and open
sockets (its engine connections and its API) are read from ``/proc``. The baseline is the first
sample after warm-up (a third of the run); the figure is the last sample, so the ratio is the
growth over the run (1.00x: flat). Full mode: 10 minutes in memory, 5 on Docker; quick mode: a few
seconds each, to prove the harness runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from benchmarks._common import TEST_IMAGE, Context, Row, Skip
from benchmarks._docker import NAMESPACE, PAUSE_IMAGE, base_url, cleanup, engine_client
from kubecore.runtime import CONTAINER_NAME_LABEL, POD_NAMESPACE_LABEL

NAME = "soak"
SAMPLE_EVERY = 10.0


@attrs.frozen
class Sample:
    at: float
    rss_kb: int
    threads: int
    fds: int
    sockets: int


def read_sample(pid: int, at: float) -> Sample:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = {
        key: value.split()[0]
        for key, _, value in (line.partition(":") for line in status)
        if value.split()
    }
    fds = sockets = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        fds += 1
        with contextlib.suppress(OSError):
            sockets += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
    return Sample(at, int(fields["VmRSS"]), int(fields["Threads"]), fds, sockets)


def pod(name: str, namespace: str, image: str, note: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"soak/note": note}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "app",
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"],
                }
            ],
        },
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def soak(
    ctx: Context,
    what: str,
    command: list[str],
    seconds: float,
    every_second: Callable[[int], None],
) -> list[Row]:
    log_path = Path(tempfile.mkstemp(prefix="kubecore-soak-", suffix=".log")[1])
    with open(log_path, "wb") as log:
        agent = subprocess.Popen(command, stdout=log, stderr=log)
    samples: list[Sample] = []
    started = time.monotonic()
    tick = 0
    try:
        next_sample = started + 1.0
        while (now := time.monotonic()) - started < seconds:
            if agent.poll() is not None:
                raise RuntimeError(f"the agent exited ({agent.returncode}): {log_path}")
            if now >= next_sample:
                samples.append(read_sample(agent.pid, now - started))
                next_sample += SAMPLE_EVERY if not ctx.quick else 1.0
            every_second(tick)
            tick += 1
            time.sleep(max(0.0, started + tick - time.monotonic()))
        samples.append(read_sample(agent.pid, time.monotonic() - started))
    finally:
        agent.send_signal(signal.SIGTERM)
        try:
            agent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            agent.kill()
    warm = [s for s in samples if s.at >= seconds / 3] or samples
    first, last = warm[0], samples[-1]
    ctx.note(
        f"{what}: {len(samples)} samples (s: RSS MB / threads / fds / sockets): "
        + ", ".join(
            f"{s.at:.0f}: {s.rss_kb / 1024:.1f}/{s.threads}/{s.fds}/{s.sockets}" for s in samples
        )
    )
    log_path.unlink(missing_ok=True)
    figure = f"{what}, {seconds / 60:.0f} min"
    if seconds < 60:
        figure = f"{what}, {seconds:.0f} s"
    return [
        Row(
            NAME,
            f"{figure}: resident memory at the end",
            last.rss_kb * 1024.0,
            "B",
            first.rss_kb * 1024.0,
            "after warm-up",
            target="<= 1.10x",
            met=last.rss_kb <= first.rss_kb * 1.10,
        ),
        Row(
            NAME,
            f"{figure}: threads at the end",
            float(last.threads),
            "",
            float(first.threads),
            "after warm-up",
            target="flat",
            met=last.threads <= first.threads,
        ),
        Row(
            NAME,
            f"{figure}: open file descriptors at the end",
            float(last.fds),
            "",
            float(first.fds),
            "after warm-up",
            target="flat",
            met=last.fds <= first.fds + 2,
        ),
    ]


def fake_soak(ctx: Context) -> list[Row]:
    count = 20 if ctx.quick else 200
    seconds = 6.0 if ctx.quick else 600.0
    work = Path(tempfile.mkdtemp(prefix="kubecore-soak-"))
    manifests = work / "pods"
    manifests.mkdir()

    def write_all(tick: int) -> None:
        for i in range(count):
            note = str(tick) if i == tick % count else ""
            doc = pod(f"soak{i}", "soak", TEST_IMAGE, note)
            (manifests / f"soak{i}.json").write_text(json.dumps(doc))

    write_all(-1)
    command = [
        sys.executable, "-m", "kubecore", "run", str(manifests), "--runtime", "fake",
        "--root-dir", str(work / "root"), "--port", str(free_port()), "--node-name", "soak",
        "--file-check-interval", "1", "--manifest-settle", "0", "--log-level", "warning",
    ]  # fmt: skip
    try:
        return soak(ctx, f"in-memory runtime, {count} pods, manifests rewritten every second",
                    command, seconds, write_all)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


def docker_soak(ctx: Context) -> list[Row]:
    client = engine_client()
    count = 3 if ctx.quick else 20
    seconds = 6.0 if ctx.quick else 300.0
    work = Path(tempfile.mkdtemp(prefix="kubecore-soak-"))
    manifests = work / "pods"
    manifests.mkdir()
    for i in range(count):
        doc = pod(f"soak{i}", NAMESPACE, TEST_IMAGE)
        (manifests / f"soak{i}.json").write_text(json.dumps(doc))
    rng = random.Random(7)

    def kill_one(tick: int) -> None:
        if tick % 5:
            return
        running = [
            c
            for c in client.containers(filters={"label": f"{POD_NAMESPACE_LABEL}={NAMESPACE}"})
            if c["Labels"].get(CONTAINER_NAME_LABEL) == "app"
        ]
        if running:
            client.kill(rng.choice(running)["Id"])

    command = [
        sys.executable, "-m", "kubecore", "run", str(manifests), "--runtime", "docker",
        "--runtime-option", f"base_url={base_url()}", "--runtime-option",
        f"sandbox_image={PAUSE_IMAGE}", "--root-dir", str(work / "root"),
        "--port", str(free_port()), "--node-name", "soak-docker", "--log-level", "warning",
    ]  # fmt: skip
    try:
        return soak(
            ctx, f"Docker, {count} pods, a container killed every 5 s", command, seconds, kill_one
        )
    finally:
        cleanup(client)
        client.close()
        shutil.rmtree(work, ignore_errors=True)


def run(ctx: Context) -> list[Row]:
    rows = fake_soak(ctx)
    try:
        rows += docker_soak(ctx)
    except Skip as skip:
        ctx.note(f"Docker part skipped: {skip}")
    return rows
