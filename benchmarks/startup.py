"""5. Start-up: ``kubecore version`` and ``kubecore validate FILE`` as whole processes (the
installed command), median of N runs, beside ``python -c pass`` (the interpreter alone) as the
baseline. Each command imports only what it needs (``kubecore`` and ``kubecore._cli`` import
every name on first use), so the difference from the baseline is kubecore's own start-up.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks._common import Context, Row, make_pods
from benchmarks.once_start import kubecore_command
from kubecore.manifest import dump_pods_yaml

NAME = "startup"
TARGET = 0.150


def run(ctx: Context) -> list[Row]:
    runs = 5 if ctx.quick else 21
    with tempfile.TemporaryDirectory(prefix="kubecore-bench-startup-") as workdir:
        manifest = os.path.join(workdir, "pods.yaml")
        with open(manifest, "w", encoding="utf-8") as out:
            out.write(dump_pods_yaml(make_pods(3, containers=1)))
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "kubecore version": [*kubecore_command(), "version"],
            "kubecore validate FILE": [*kubecore_command(), "validate", manifest],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):  # alternated, so that a busy moment hits every command alike
            for name, argv in commands.items():
                wall, used = timed(argv)
                times[name].append(wall)
                cpu[name].append(used)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        ctx.note(
            f"{name}: median {value * 1e3:.0f} ms of {runs} runs"
            f" ({statistics.median(cpu[name]) * 1e3:.0f} ms of CPU: steadier on a busy machine)"
        )
    baseline = medians["python -c pass"]
    return [
        Row(
            NAME,
            f"start-up of `{name}` (whole process)",
            medians[name],
            "s",
            baseline=baseline,
            baseline_label="python -c pass",
            target=f"<= {TARGET * 1e3:.0f} ms",
            met=medians[name] <= TARGET,
        )
        for name in ("kubecore version", "kubecore validate FILE")
    ]


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()}")
    return seconds, used
