"""Agents on the in-memory runtime, built the way an embedding program builds them.

The pods given to the fake run the image's default command (the fake reads a container's shell
command to decide how it behaves; that parsing is the fake's cost, not kubecore's).

A converged node of N pods is expensive to build, so ``converged_node`` keeps it for the rest of
the process: the sync-cost benchmark times passes on the same 10,000-pod node whose memory the
memory benchmark reports (taken with tracemalloc while it was built, before any timing).
"""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

import attrs

from benchmarks._common import TEST_IMAGE, make_pods
from benchmarks._timing import WatchedRuntime
from kubecore import EventRecorder, Kubelet, KubeletConfig, Pod
from kubecore.runtime import Clock, RuntimeState
from kubecore.testing import ManualClock
from kubecore_fake import FakeRuntime

PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
SOURCE = "bench"
LIST_OPS = frozenset({"snapshot", "list_containers", "list_sandboxes"})
TRACE_FRAMES = 1  # deeper tracebacks make tracing several times slower


@attrs.frozen
class FakeNode:
    kubelet: Kubelet
    runtime: FakeRuntime
    watch: WatchedRuntime
    """Counts the agent's calls into the runtime."""
    clock: Clock
    root_dir: str


@contextmanager
def fake_node(
    *,
    clock: Clock | None = None,
    max_pods: int = 110,
    root_parent: str | None = None,
    recorder: EventRecorder | None = None,
    max_calls: int = 100_000,
    **config: object,
) -> Iterator[FakeNode]:
    """An agent on its own FakeRuntime with the test image present; stopped and its root
    directory (made under ``root_parent``, default the temporary directory) removed on exit.
    ``max_calls``: the length of the runtime's call log (a test's record, not the agent's)."""
    clock = clock if clock is not None else ManualClock()
    root = tempfile.mkdtemp(prefix="kubecore-bench-", dir=root_parent)
    runtime = FakeRuntime(clock, pulled=(TEST_IMAGE, PAUSE_IMAGE), max_calls=max_calls)
    watch = WatchedRuntime(runtime)
    kubelet = Kubelet(
        watch.proxy(),
        runtime,
        config=KubeletConfig(root_dir=root, max_pods=max_pods, **config),  # type: ignore[arg-type]
        clock=clock,
        recorder=recorder,
    )
    try:
        yield FakeNode(kubelet, runtime, watch, clock, root)
    finally:
        kubelet.close()
        runtime.close()
        shutil.rmtree(root, ignore_errors=True)


def fake_pods(count: int, prefix: str, containers: int = 2) -> list[Pod]:
    return make_pods(count, containers=containers, prefix=prefix, command=())


def running_containers(runtime: FakeRuntime) -> int:
    snapshot = runtime.snapshot()
    return sum(1 for c in snapshot.containers if c.state is RuntimeState.RUNNING)


def expected_containers(pods: Sequence[Pod]) -> int:
    return sum(len(p.spec.containers) for p in pods)


# --- one converged node per size, shared by the benchmarks of one process -------------------


@attrs.frozen
class MemoryFigures:
    """Python heap (tracemalloc) of building and converging one node."""

    pods: int
    spec_bytes: int
    """The desired Pod objects themselves (the input every agent must hold)."""
    retained_bytes: int
    """Held after convergence (garbage collected) by the agent and the in-memory runtime,
    the pod objects excluded."""
    peak_bytes: int
    """Peak above the start while converging, the pod objects included."""
    by_owner: dict[str, int]
    """``retained_bytes`` by the code that allocated it (see ``_owner``)."""
    top: list[tuple[str, int]]
    """The allocation sites that retain most."""


@attrs.frozen
class ConvergedNode:
    node: FakeNode
    pods: list[Pod]
    converged: bool
    seconds: float
    """Wall time to converge (under tracemalloc when ``memory`` is set: slower than untraced)."""
    running: int
    memory: MemoryFigures | None


_NODES: dict[int, tuple[ConvergedNode, ExitStack]] = {}


def converged_node(
    n: int, *, trace: bool, log: Callable[[str], None], max_syncs: int = 40
) -> ConvergedNode:
    """A node converged on ``n`` two-container pods, built once per process. With ``trace`` its
    memory is measured while it is built."""
    cached = _NODES.get(n)
    if cached is not None and (cached[0].memory is not None or not trace):
        return cached[0]
    release(n)
    stack = ExitStack()
    if trace:
        gc.collect()
        tracemalloc.start(TRACE_FRAMES)
    try:
        base = tracemalloc.get_traced_memory()[0] if trace else 0
        pods = fake_pods(n, prefix=f"node{n}")
        spec = tracemalloc.get_traced_memory()[0] - base if trace else 0
        before = tracemalloc.take_snapshot() if trace else None
        node = stack.enter_context(fake_node(max_pods=n + 10))
        node.kubelet.set_pods(pods, source=SOURCE)
        t0 = time.perf_counter()
        converged = node.kubelet.sync_until_converged(max_syncs=max_syncs, step=1.0)
        seconds = time.perf_counter() - t0
        memory = None
        if trace and before is not None:
            gc.collect()
            current, peak = tracemalloc.get_traced_memory()
            after = tracemalloc.take_snapshot()
            memory = MemoryFigures(
                pods=n,
                spec_bytes=spec,
                retained_bytes=current - base - spec,
                peak_bytes=peak - base,
                by_owner=_by_owner(after, before),
                top=top_lines(after, before),
            )
            del after, before
    except BaseException:
        stack.close()
        raise
    finally:
        if trace:
            tracemalloc.stop()
    running = running_containers(node.runtime)
    log(f"{n} pods converged={converged} in {seconds:.1f}s ({running} containers running)")
    result = ConvergedNode(node, pods, converged, seconds, running, memory)
    _NODES[n] = (result, stack)
    return result


def release(n: int) -> None:
    cached = _NODES.pop(n, None)
    if cached is not None:
        cached[1].close()


@atexit.register
def _release_all() -> None:
    for n in list(_NODES):
        release(n)


def _owner(filename: str) -> str:
    """Who allocated, by the innermost frame: a kubecore or kubecore_fake module, or the
    ``__init__`` attrs generated for a class of one (charged to the class's package)."""
    if "kubecore_fake" in filename:
        return "in-memory runtime (kubecore_fake)"
    if "/kubecore/" in filename:
        return "agent (kubecore code)"
    if "attrs generated" in filename and "kubecore." in filename:
        return "agent (kubecore attrs values)"
    if "/benchmarks/" in filename:
        return "benchmark harness"
    return "other (stdlib, libraries)"


def _by_owner(after: tracemalloc.Snapshot, before: tracemalloc.Snapshot) -> dict[str, int]:
    owners: Counter[str] = Counter()
    for diff in after.compare_to(before, "filename"):
        owners[_owner(diff.traceback[0].filename)] += diff.size_diff
    return dict(owners.most_common())


def top_lines(
    after: tracemalloc.Snapshot, before: tracemalloc.Snapshot, limit: int = 6
) -> list[tuple[str, int]]:
    """The allocation sites that grew most."""
    out = []
    for diff in after.compare_to(before, "lineno")[:limit]:
        frame = diff.traceback[0]
        name = frame.filename
        for package in ("/kubecore_fake/", "/kubecore/"):
            if package in name:
                name = package.strip("/") + "/" + name.split(package, 1)[1]
                break
        else:
            name = os.path.basename(name)
        out.append((f"{name}:{frame.lineno}", diff.size_diff))
    return out
