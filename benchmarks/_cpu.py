"""Where the CPU goes during a pod start: the client's (this process, or the commands it ran)
and the engine's (its daemons, and the shims with the runc runs they reaped), read from
``/proc``. On a machine whose cores are shared, CPU seconds say what each side costs when wall
times are stretched by the load.

An engine's processes are its daemons (``dockerd``, ``containerd``) and shims
(``containerd-shim-runc-v2``) whose command line names its state directory (the test engines
keep everything under one: ``/var/tmp/kubecore-test-engine/``,
``/var/tmp/kubecore-test-containerd/``), so that another engine on the machine is not counted.
A shim's CPU includes the ``runc`` runs it waited for (``cutime``, ``cstime``).
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import attrs

from benchmarks._common import Context

_TICK = os.sysconf("SC_CLK_TCK")
SHIM = "containerd-shim"
ENGINE_PROGRAMS = ("dockerd", "containerd", "docker-proxy")
"""What an engine process runs (``containerd`` also matches the shims)."""


def _cpu_of(pid: str) -> float:
    """A process's CPU seconds, its reaped children's included (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    # after the command: state(0) ... utime(11) stime(12) cutime(13) cstime(14)
    return sum(int(f) for f in fields[11:15]) / _TICK


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@attrs.frozen
class EngineSample:
    """CPU seconds of each engine process (daemons and shims) at one moment."""

    cpu: dict[str, float]
    shims: frozenset[str]

    @classmethod
    def take(cls, state_dir: str) -> EngineSample:
        marker = state_dir.rstrip("/") + "/"
        cpu: dict[str, float] = {}
        shims: set[str] = set()
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            line = _cmdline(pid)
            program = os.path.basename(line.split(" ", 1)[0])
            if marker not in line or not program.startswith(ENGINE_PROGRAMS):
                continue
            cpu[pid] = _cpu_of(pid)
            if program.startswith(SHIM):
                shims.add(pid)
        return cls(cpu, frozenset(shims))

    def since(self, before: EngineSample) -> tuple[float, int]:
        """CPU seconds spent since ``before`` (by processes alive now), and how many shims are
        new."""
        spent = sum(max(0.0, v - before.cpu.get(pid, 0.0)) for pid, v in self.cpu.items())
        return spent, len(self.shims - before.shims)


@attrs.define
class Spent:
    """What one timed method cost: the client's CPU seconds, the engine's, the new shims."""

    client: float = 0.0
    engine: float = 0.0
    shims: int = 0


def state_dir_of(endpoint: str) -> str:
    """An engine's state directory: where its ``unix://`` socket is."""
    return os.path.dirname(endpoint.removeprefix("unix://"))


@contextmanager
def cpu_spent(state_dir: str, *, children: bool = False) -> Iterator[Spent]:
    """Measure the block: the client is this process (``children``: the commands it ran and
    waited for instead); the engine, the processes of ``state_dir``. The engine is sampled
    when the block ends, while the pods it started still run (their shims hold the CPU)."""
    spent = Spent()
    before = EngineSample.take(state_dir)
    client = _client_clock(children)
    mark = client()
    yield spent
    spent.client = client() - mark
    spent.engine, spent.shims = EngineSample.take(state_dir).since(before)


def _client_clock(children: bool) -> Callable[[], float]:
    if not children:
        return time.process_time

    def reaped() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    return reaped


@attrs.define
class Figures:
    """Each method's wall times and CPU, round by round."""

    times: dict[str, list[float]] = attrs.field(factory=dict)
    spent: dict[str, list[Spent]] = attrs.field(factory=dict)

    def add(self, name: str, seconds: float, spent: Spent) -> None:
        self.times.setdefault(name, []).append(seconds)
        self.spent.setdefault(name, []).append(spent)

    def median(self, name: str) -> float | None:
        values = self.times.get(name)
        return statistics.median(values) if values else None

    def cpu(self, name: str, side: str) -> float | None:
        values = [getattr(s, side) for s in self.spent.get(name, [])]
        return statistics.median(values) if values else None

    def note(self, ctx: Context, what: str) -> None:
        for name, values in self.times.items():
            spent = self.spent[name]
            ctx.note(
                f"{what}, {name}: "
                + ", ".join(f"{v:.2f}" for v in values)
                + " s; CPU client "
                + ", ".join(f"{s.client:.2f}" for s in spent)
                + " s, engine "
                + ", ".join(f"{s.engine:.2f}" for s in spent)
                + f" s; {spent[-1].shims} new shims"
            )
