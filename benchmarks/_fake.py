"""Agents on the in-memory runtime, built the way an embedding program builds them."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import attrs

from benchmarks._common import TEST_IMAGE
from kubecore._clock import Clock, ManualClock
from kubecore._kubelet import Kubelet, KubeletConfig
from kubecore._model import Pod
from kubecore._runtime import RuntimeState
from kubecore_fake import FakeRuntime

PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
SOURCE = "bench"
LIST_OPS = frozenset({"snapshot", "list_containers", "list_sandboxes"})


@attrs.frozen
class FakeNode:
    kubelet: Kubelet
    runtime: FakeRuntime
    clock: Clock
    root_dir: str


@contextmanager
def fake_node(
    *,
    clock: Clock | None = None,
    max_pods: int = 110,
    root_dir: str | None = None,
    **config: object,
) -> Iterator[FakeNode]:
    """An agent on its own FakeRuntime with the test image present; stopped and its root
    directory removed on exit."""
    clock = clock if clock is not None else ManualClock()
    own_dir = root_dir is None
    root = root_dir or tempfile.mkdtemp(prefix="kubecore-bench-")
    runtime = FakeRuntime(clock, pulled=(TEST_IMAGE, PAUSE_IMAGE))
    kubelet = Kubelet(
        runtime,
        runtime,
        config=KubeletConfig(root_dir=root, max_pods=max_pods, **config),  # type: ignore[arg-type]
        clock=clock,
    )
    try:
        yield FakeNode(kubelet, runtime, clock, root)
    finally:
        kubelet.stop()
        kubelet.close()
        runtime.close()
        if own_dir:
            shutil.rmtree(root, ignore_errors=True)


def running_containers(runtime: FakeRuntime) -> int:
    snapshot = runtime.snapshot()
    return sum(1 for c in snapshot.containers if c.state is RuntimeState.RUNNING)


def expected_containers(pods: Sequence[Pod]) -> int:
    return sum(len(p.spec.containers) for p in pods)


def calls_since(runtime: FakeRuntime, mark: int) -> list[str]:
    """Operation names the runtime saw since the call log had ``mark`` entries."""
    return [op for op, _ in runtime.calls[mark:]]
