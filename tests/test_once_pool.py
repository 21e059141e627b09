"""``kubecore run --once`` on a real clock drives the pods through the agent's worker pool."""

from __future__ import annotations

import io
import threading
from pathlib import Path

from kubecore._cli import EXIT_OK, run_once
from kubecore._clock import SystemClock
from kubecore._kubelet import Kubelet, KubeletConfig
from kubecore._runtime import SandboxConfig
from kubecore._sources import SourcePoller, StaticSource
from kubecore_fake import FakeRuntime
from tests._kubelet_support import make_pod


class GatedRuntime(FakeRuntime):
    """Each sandbox waits until ``width`` sandboxes are being created at once: pods started
    one after another never get past the first (the barrier times out and the start fails)."""

    def __init__(self, width: int) -> None:
        super().__init__(clock=SystemClock(), images=["busybox:1.36"])
        self.gate = threading.Barrier(width, timeout=10.0)

    def run_sandbox(self, config: SandboxConfig) -> str:
        self.gate.wait()
        return super().run_sandbox(config)


def test_run_once_on_a_real_clock_starts_pods_in_parallel(tmp_path: Path) -> None:
    width = 4
    runtime = GatedRuntime(width)
    kubelet = Kubelet(
        runtime,
        runtime,
        config=KubeletConfig(root_dir=str(tmp_path / "root"), workers=width),
        clock=SystemClock(),
        sources=("api",),
    )
    source = StaticSource([make_pod(f"p{i}") for i in range(width)])
    poller = SourcePoller([source], kubelet.update, clock=kubelet.clock)
    out = io.StringIO()
    try:
        code = run_once(kubelet, poller, kubelet.clock, 30.0, out)
    finally:
        kubelet.stop()
    assert code == EXIT_OK, out.getvalue()
    rows = [line.split() for line in out.getvalue().splitlines()[1:]]
    assert sorted(row[0] for row in rows) == [f"p{i}" for i in range(width)]
    assert all(row[1:3] == ["1/1", "Running"] for row in rows), out.getvalue()
    assert not runtime.gate.broken


def test_run_once_on_a_real_clock_reports_a_pod_that_does_not_settle(tmp_path: Path) -> None:
    runtime = FakeRuntime(clock=SystemClock(), images=[])  # no image: ImagePullBackOff
    kubelet = Kubelet(
        runtime,
        runtime,
        config=KubeletConfig(root_dir=str(tmp_path / "root")),
        clock=SystemClock(),
        sources=("api",),
    )
    poller = SourcePoller([StaticSource([make_pod("web")])], kubelet.update, clock=kubelet.clock)
    out = io.StringIO()
    try:
        code = run_once(kubelet, poller, kubelet.clock, 5.0, out)
    finally:
        kubelet.stop()
    assert code != EXIT_OK
    assert "pod default/web failed: container app: " in out.getvalue(), out.getvalue()
