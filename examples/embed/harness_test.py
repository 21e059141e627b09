"""A test harness: a whole node on the fake runtime, in virtual time (no engine, no sleeping).

Run it with ``pytest examples/embed/harness_test.py``. The ``kubecore_node`` fixture comes with
kubecore (its pytest plugin): a ``kubecore.testing.FakeNode`` in the test's ``tmp_path``. Each
test hands the node pods as a manifest, lets virtual time pass while the node syncs, and asserts
on pod status exactly as ``kubectl get pod -o yaml`` would show it, and on the node's events.
"""

from __future__ import annotations

from kubecore.testing import FakeNode
from kubecore.v1 import ContainerStatus
from kubecore_fake import Behaviour

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


def app(node: FakeNode) -> ContainerStatus:
    return node.status("flaky").container_statuses[0]


def test_a_crashing_container_backs_off_then_recovers(kubecore_node: FakeNode) -> None:
    node = kubecore_node
    node.apply(PODS)
    node.advance(60)
    waiting, last = app(node).state.waiting, app(node).last_state.terminated
    assert waiting is not None and waiting.reason == "CrashLoopBackOff"
    assert last is not None and last.exit_code == 1 and app(node).restart_count >= 2
    assert node.events(reason="BackOff", pod="flaky")[0].type == "Warning"
    assert node.status("job").phase == "Succeeded"

    node.runtime.script(command=CRASHING, behaviour=Behaviour())  # from now on it stays up
    node.run_until(lambda: app(node).ready, timeout=300)
    assert node.status("flaky").phase == "Running" and app(node).restart_count >= 3


def test_a_restarted_agent_adopts_the_running_containers(kubecore_node: FakeNode) -> None:
    node = kubecore_node
    node.apply(PODS)
    node.run_until(lambda: node.status("job").phase == "Succeeded")
    node.runtime.script(command=CRASHING, behaviour=Behaviour())
    node.run_until(lambda: app(node).ready, timeout=300)
    running = [c.id for c in node.containers("flaky", running=True)]

    node.restart_agent()  # a new Kubelet on the same runtime and root dir
    node.advance(10)
    assert [c.id for c in node.containers("flaky", running=True)] == running
    assert node.events(reason="Started") == []  # the new agent started nothing
    assert node.status("job").phase == "Succeeded"
