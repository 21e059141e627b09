"""The grace period a source's delete asks for, handed over to the agent (``Kubelet.terminate_pod``)
before the source drops the pod, or after a restart for a pod deleted before it (virtual time)."""

from __future__ import annotations

from pathlib import Path

from kubecore._model.v1 import ExecAction, Lifecycle, LifecycleHandler, Pod
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod


def pre_stop_pod(grace: int) -> Pod:
    hook = LifecycleHandler(exec=ExecAction(("pre-hook",)))
    return make_pod(
        "web",
        ctr("app", lifecycle=Lifecycle(pre_stop=hook)),
        termination_grace_period_seconds=grace,
    )


def stop_timeouts(node: Node, container_id: str) -> list[float]:
    return [
        float(args[1])  # type: ignore[arg-type]
        for op, args in node.runtime.calls
        if op == "stop_container" and args[0] == container_id
    ]


def hook_timeouts(node: Node) -> list[float]:
    return [float(args[2]) for op, args in node.runtime.calls if op == "exec_sync"]  # type: ignore[arg-type]


def test_the_grace_handed_over_before_the_pod_leaves_is_the_one_its_kill_uses(
    tmp_path: Path,
) -> None:
    node = make_node(tmp_path)
    node.runtime.on_exec("pre-hook", 0)
    node.kubelet.set_pods([pre_stop_pod(60)])
    node.converge()
    (app,) = node.running("web", "app")
    pod = node.kubelet.get_pod("default", "web")
    assert pod is not None
    assert not node.kubelet.views.pod_terminating(pod.uid)  # desired: not terminating

    node.kubelet.terminate_pod(pod, 5)
    node.kubelet.set_pods([])
    assert node.kubelet.views.pod_terminating(pod.uid)
    node.converge()
    assert stop_timeouts(node, app.id) == [5] and hook_timeouts(node) == [5]
    assert not node.all("web") and not node.kubelet.views.pod_terminating(pod.uid)


def test_a_pod_deleted_before_a_restart_is_stopped_with_its_spec_and_the_time_left(
    tmp_path: Path,
) -> None:
    node = make_node(tmp_path)
    node.runtime.on_exec("pre-hook", 0)
    node.kubelet.set_pods([pre_stop_pod(60)])
    node.converge()
    (app,) = node.running("web", "app")
    pod = node.kubelet.get_pod("default", "web")
    assert pod is not None

    kubelet = node.restart_kubelet()
    kubelet.terminate_pod(pod, 3)  # what the API's store says is left of its grace period
    kubelet.set_pods([])  # the source's state read back: the pod is not in it
    assert kubelet.views.pod_terminating(pod.uid)
    node.converge()
    assert stop_timeouts(node, app.id) == [3] and hook_timeouts(node) == [3]  # its preStop hook ran
    assert not node.all("web") and not kubelet.views.pod_terminating(pod.uid)
