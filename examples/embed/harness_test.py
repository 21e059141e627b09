"""A test harness: a whole node on the fake runtime, in virtual time (no engine, no sleeping).

Run it with ``pytest examples/embed/harness_test.py``. Each test builds a node, hands it pods as a
manifest, moves a ``ManualClock`` forward while the node syncs, and asserts on pod status exactly
as ``kubectl get pod -o yaml`` would show it.
"""

from __future__ import annotations

from pathlib import Path

from kubecore import (
    Kubelet,
    KubeletConfig,
    ManualClock,
    PodStatus,
    load_pods_from_string,
    load_runtime,
)
from kubecore_fake import Behaviour, FakeRuntime

CRASHING = "echo starting; exit 1"
PODS = f"""
apiVersion: v1
kind: Pod
metadata: {{name: flaky}}
spec:
  containers:
  - {{name: app, image: busybox:1.36, command: [sh, -c, "{CRASHING}"]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: job}}
spec:
  restartPolicy: OnFailure
  containers:
  - {{name: work, image: busybox:1.36, command: [sh, -c, "echo working; sleep 5"]}}
"""


def run_for(node: Kubelet, clock: ManualClock, seconds: int) -> None:
    """What the node's loop does in ``seconds`` of virtual time: a sync each second."""
    for _ in range(seconds):
        node.sync()
        clock.advance(1.0)


def status(node: Kubelet, name: str) -> PodStatus:
    pod = node.get_pod("default", name)
    assert pod is not None and pod.status is not None, f"no status for pod {name}"
    return pod.status


def test_a_crashing_container_backs_off_then_recovers(tmp_path: Path) -> None:
    clock = ManualClock()
    fake = load_runtime("fake", clock=clock)
    node = Kubelet.from_bundle(fake, clock=clock, config=KubeletConfig(root_dir=str(tmp_path)))
    node.set_pods(load_pods_from_string(PODS))

    run_for(node, clock, 60)
    app = status(node, "flaky").container_statuses[0]
    waiting, last = app.state.waiting, app.last_state.terminated
    assert waiting is not None and waiting.reason == "CrashLoopBackOff"
    assert last is not None and last.exit_code == 1 and app.restart_count >= 2
    assert status(node, "job").phase == "Succeeded"

    assert isinstance(fake.runtime, FakeRuntime)
    fake.runtime.script(command=CRASHING, behaviour=Behaviour())  # from now on it stays up
    run_for(node, clock, 300)
    assert status(node, "flaky").phase == "Running"
    app = status(node, "flaky").container_statuses[0]
    assert app.state.running is not None and app.ready and app.restart_count >= 3
