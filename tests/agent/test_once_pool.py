"""``kubecore run --once`` on a real clock drives the pods through the agent's worker pool."""

from __future__ import annotations

import io
import logging
import threading
from pathlib import Path

import pytest

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._cli import EXIT_OK, Display, PullTracker, run_once
from kubecore._cli.output import CLEAR_SCREEN
from kubecore._config.poller import SourcePoller
from kubecore._config.static import StaticSource
from kubecore._contract.values import SandboxConfig
from kubecore._util.clock import SystemClock
from kubecore_fake import FakeRuntime
from tests.builders import make_pod


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


def pooled_kubelet(tmp_path: Path, runtime: FakeRuntime) -> Kubelet:
    return Kubelet(
        runtime,
        runtime,
        config=KubeletConfig(root_dir=str(tmp_path / "root")),
        clock=SystemClock(),
        sources=("api",),
    )


def test_run_once_on_a_terminal_draws_the_live_table_then_the_final_one(tmp_path: Path) -> None:
    runtime = FakeRuntime(clock=SystemClock(), images=["busybox:1.36"])
    kubelet = pooled_kubelet(tmp_path, runtime)
    poller = SourcePoller([StaticSource([make_pod("web")])], kubelet.update, clock=kubelet.clock)
    out = io.StringIO()
    display = Display(out, True, "HEADER", PullTracker(), clear_on_close=True)
    try:
        code = run_once(kubelet, poller, kubelet.clock, 30.0, out, display)
    finally:
        kubelet.stop()
    assert code == EXIT_OK, out.getvalue()
    live, _, final = out.getvalue().rpartition(CLEAR_SCREEN)
    assert "HEADER" in live and "web" in live  # drawn while the pod started
    assert final.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert final.splitlines()[1].split()[:3] == ["web", "1/1", "Running"]


def test_run_once_off_a_terminal_logs_a_line_per_change(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = FakeRuntime(clock=SystemClock(), images=["busybox:1.36"])
    kubelet = pooled_kubelet(tmp_path, runtime)
    poller = SourcePoller([StaticSource([make_pod("web")])], kubelet.update, clock=kubelet.clock)
    out = io.StringIO()
    with caplog.at_level(logging.INFO, logger="kubecore._cli.output"):
        try:
            code = run_once(
                kubelet, poller, kubelet.clock, 30.0, out, Display(out, False, "", PullTracker())
            )
        finally:
            kubelet.stop()
    assert code == EXIT_OK
    lines = [r.getMessage() for r in caplog.records if r.name == "kubecore._cli.output"]
    assert any(line.startswith("pod default/web: ") for line in lines), lines
    assert CLEAR_SCREEN not in out.getvalue()
