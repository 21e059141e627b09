"""5. Start-up: ``import kubecore``, the imports of the run path, and ``kubecore run EMPTY --once
--runtime fake``, ``kubecore validate FILE`` and ``kubecore version`` as whole processes (the
installed command), median of N runs, each beside ``python -c pass`` (the interpreter alone)
measured in the same run, alternated with it, so that a busy moment hits every command alike.
Each command imports only what it needs (``kubecore`` and ``kubecore._cli`` import every name on
first use), so the difference from the baseline is kubecore's own start-up.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import attrs

from benchmarks._common import Context, Row, compile_sources, make_pods
from benchmarks.once_start import kubecore_command
from kubecore.manifest import dump_pods_yaml

NAME = "startup"
RUN_PATH_IMPORTS = "import kubecore._agent.kubelet, kubecore._cli.commands"


@attrs.frozen
class Target:
    """What a command may cost: ``ratio`` to ``python -c pass``, ``added`` seconds over it, or
    ``total`` seconds as a whole process."""

    kind: str
    limit: float

    def describe(self) -> str:
        if self.kind == "ratio":
            return f"<= {self.limit:g}x python -c pass"
        if self.kind == "added":
            return f"<= {self.limit * 1e3:.0f} ms over python -c pass"
        return f"<= {self.limit * 1e3:.0f} ms"

    def met(self, seconds: float, baseline: float) -> bool:
        if self.kind == "ratio":
            return seconds <= self.limit * baseline
        if self.kind == "added":
            return seconds - baseline <= self.limit
        return seconds <= self.limit


TARGETS = {
    "import kubecore": Target("ratio", 2.0),
    "the run path's imports": Target("added", 0.150),
    "kubecore run EMPTY --once --runtime fake": Target("total", 0.350),
    "kubecore validate FILE": Target("total", 0.200),
    "kubecore version": Target("total", 0.150),
}


def commands(workdir: str) -> dict[str, list[str]]:
    manifest = os.path.join(workdir, "pods.yaml")
    with open(manifest, "w", encoding="utf-8") as out:
        out.write(dump_pods_yaml(make_pods(3, containers=1)))
    empty = os.path.join(workdir, "empty")
    os.mkdir(empty)
    kubecore = kubecore_command()
    run_empty = [*kubecore, "run", empty, "--manifest-allow-empty", "--once", "--runtime", "fake"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import kubecore": [sys.executable, "-c", "import kubecore"],
        "the run path's imports": [sys.executable, "-c", RUN_PATH_IMPORTS],
        "kubecore run EMPTY --once --runtime fake": run_empty,
        "kubecore validate FILE": [*kubecore, "validate", manifest],
        "kubecore version": [*kubecore, "version"],
    }


def run(ctx: Context) -> list[Row]:
    runs = 5 if ctx.quick else 21
    compile_sources(("kubecore",))  # as pip does: each timed process then starts without compiling
    with tempfile.TemporaryDirectory(prefix="kubecore-bench-startup-") as workdir:
        argvs = commands(workdir)
        times: dict[str, list[float]] = {name: [] for name in argvs}
        cpu: dict[str, list[float]] = {name: [] for name in argvs}
        for _ in range(runs):  # alternated, so that a busy moment hits every command alike
            for name, argv in argvs.items():
                wall, used = timed(argv, cwd=workdir)
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
            target=target.describe(),
            met=target.met(medians[name], baseline),
        )
        for name, target in TARGETS.items()
    ]


def timed(argv: list[str], cwd: str) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, timeout=60, check=False, cwd=cwd)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()}")
    return seconds, used
