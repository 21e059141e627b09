"""A deleted pod's probe series leave ``/metrics/probes`` with it, even when a probe of the pod was
still running as it left."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from kubecore._contract.values import ProbeOutcome, ProbeResult, ProbeTarget
from kubecore._model.v1 import ExecAction, Probe
from kubecore_fake import FakeHealthChecker
from tests.agent.support import make_node
from tests.builders import ctr, make_pod


def probed_pod() -> object:
    live = Probe(exec=ExecAction(command=("true",)), period_seconds=1)
    return make_pod("web", ctr("app", liveness_probe=live), uid="uid-web")


def test_a_deleted_pod_leaves_no_probe_series(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    node.kubelet.set_pods([probed_pod()])
    node.converge()
    node.clock.sleep(2)
    node.kubelet.sync()
    assert b'pod="web"' in node.kubelet.metrics.render_probes()
    node.kubelet.set_pods([])
    node.converge()
    assert b"pod_uid" not in node.kubelet.metrics.render_probes()


class BlockingChecker(FakeHealthChecker):
    """Probes answer only once ``release`` is set."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.started = threading.Event()
        self.release = threading.Event()
        self.answered = threading.Event()

    def check(self, probe: Probe, target: ProbeTarget) -> ProbeResult:
        self.started.set()
        assert self.release.wait(30)
        try:
            return ProbeResult(ProbeOutcome.FAILURE, "still failing")
        finally:
            self.answered.set()


def test_a_probe_answering_after_its_pod_left_records_nothing(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    checker = BlockingChecker(node.runtime)
    prober = node.kubelet._rooms.prober
    node.kubelet.set_pods([probed_pod()])
    node.converge()
    prober.manager._checker = checker  # from now on: the background pool's probe blocks
    node.clock.sleep(2)
    pod = node.kubelet.get_pod("default", "web")
    assert pod is not None
    prober.run_due([(pod, node.kubelet._pass.grouped[pod.uid])], node.clock.now(), inline=False)
    assert checker.started.wait(30)
    node.kubelet.set_pods([])
    node.converge()
    checker.release.set()
    assert checker.answered.wait(30)
    deadline = time.monotonic() + 30
    while prober._in_flight and time.monotonic() < deadline:  # the result is being recorded
        time.sleep(0.01)
    prober.shutdown()
    assert not prober._in_flight
    assert b"pod_uid" not in node.kubelet.metrics.render_probes()
    assert "Unhealthy" not in node.reasons("web")
