"""``lifecycle.preStop/postStart.sleep`` and a probe's ``terminationGracePeriodSeconds``, in
virtual time on the fake runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubecore._contract.values import ProbeOutcome
from kubecore._manifest import load_pods_from_dict
from kubecore._model.v1 import ExecAction, Lifecycle, LifecycleHandler, Pod, Probe, SleepAction
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


def stop_timeouts(node: Node, container_id: str) -> list[float]:
    return [
        float(args[1])  # type: ignore[arg-type]
        for op, args in node.runtime.calls
        if op == "stop_container" and args[0] == container_id
    ]


def sleep(seconds: int) -> LifecycleHandler:
    return LifecycleHandler(sleep=SleepAction(seconds))


def test_a_pre_stop_sleep_delays_the_stop_within_the_grace_period(node: Node) -> None:
    pod = make_pod(
        "web",
        ctr("app", lifecycle=Lifecycle(pre_stop=sleep(5))),
        termination_grace_period_seconds=20,
    )
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    before = node.clock.monotonic()
    node.kubelet.set_pods([])
    node.converge()
    assert stop_timeouts(node, app.id)[0] == pytest.approx(15)
    assert node.clock.monotonic() - before >= 5
    assert "FailedPreStopHook" not in node.reasons("web")


def test_a_pre_stop_sleep_longer_than_the_grace_period_is_cut_short(node: Node) -> None:
    pod = make_pod(
        "web",
        ctr("app", lifecycle=Lifecycle(pre_stop=sleep(600))),
        termination_grace_period_seconds=10,
    )
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    before = node.clock.monotonic()
    node.kubelet.set_pods([])
    node.converge()
    assert node.clock.monotonic() - before < 30
    assert stop_timeouts(node, app.id)[0] == pytest.approx(2)  # the floor


def test_a_post_start_sleep_succeeds(node: Node) -> None:
    pod = make_pod("web", ctr("app", lifecycle=Lifecycle(post_start=sleep(3))))
    node.kubelet.set_pods([pod])
    node.converge()
    assert node.running("web", "app")
    assert "FailedPostStartHook" not in node.reasons("web")


def test_a_liveness_kill_uses_the_probe_grace_period(node: Node) -> None:
    probe = Probe(
        exec=ExecAction(("check",)),
        period_seconds=1,
        failure_threshold=1,
        termination_grace_period_seconds=7,
    )
    pod = make_pod("web", ctr("app", liveness_probe=probe), termination_grace_period_seconds=60)
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    node.checker.set_probe("app", "exec", ProbeOutcome.FAILURE)
    node.run_until(lambda: bool(stop_timeouts(node, app.id)))
    assert stop_timeouts(node, app.id)[0] == pytest.approx(7)


def test_without_a_probe_grace_period_the_pods_applies(node: Node) -> None:
    probe = Probe(exec=ExecAction(("check",)), period_seconds=1, failure_threshold=1)
    pod = make_pod("web", ctr("app", liveness_probe=probe), termination_grace_period_seconds=60)
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    node.checker.set_probe("app", "exec", ProbeOutcome.FAILURE)
    node.run_until(lambda: bool(stop_timeouts(node, app.id)))
    assert stop_timeouts(node, app.id)[0] == pytest.approx(60)


def test_the_fields_load_from_a_manifest() -> None:
    data = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {
            "containers": [
                {
                    "name": "nginx",
                    "image": "nginx:1.25",
                    "lifecycle": {"preStop": {"sleep": {"seconds": 5}}},
                    "livenessProbe": {
                        "httpGet": {"path": "/", "port": 80},
                        "terminationGracePeriodSeconds": 10,
                    },
                }
            ]
        },
    }
    (pod,) = load_pods_from_dict(data, source_name="web")
    container = pod.spec.containers[0]
    assert container.lifecycle is not None
    assert container.lifecycle.pre_stop == sleep(5)
    assert container.liveness_probe is not None
    assert container.liveness_probe.termination_grace_period_seconds == 10


def test_the_stop_signal_stops_the_container(node: Node) -> None:
    def pod(version: str) -> Pod:
        usr1 = Lifecycle(stop_signal="SIGUSR1")
        return make_pod(
            "web", ctr("app", args=(version,), lifecycle=usr1), ctr("plain", args=(version,))
        )

    node.kubelet.set_pods([pod("1")])
    node.converge()
    (app,) = node.running("web", "app")
    (plain,) = node.running("web", "plain")
    assert node.runtime.container_config(app.id).stop_signal == "SIGUSR1"
    node.kubelet.set_pods([pod("2")])  # both are killed to be restarted
    node.converge()
    assert node.runtime.signals(app.id)[0] == "USR1"
    assert node.runtime.signals(plain.id)[0] == "TERM"


def test_an_unknown_stop_signal_is_refused() -> None:
    from kubecore._contract.errors import ValidationError

    data = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {
            "containers": [
                {"name": "app", "image": "busybox:1.35", "lifecycle": {"stopSignal": "SIGFOO"}}
            ]
        },
    }
    with pytest.raises(ValidationError) as info:
        load_pods_from_dict(data, source_name="web")
    assert [p.path for p in info.value.problems] == ["spec.containers[0].lifecycle.stopSignal"]
    data["spec"]["containers"][0]["lifecycle"] = {"stopSignal": "SIGRTMIN+3"}  # type: ignore[index]
    (pod,) = load_pods_from_dict(data, source_name="web")
    assert pod.spec.containers[0].lifecycle == Lifecycle(stop_signal="SIGRTMIN+3")


def hook_timeouts(node: Node, container_id: str) -> list[float]:
    return [
        float(args[2])  # type: ignore[arg-type]
        for op, args in node.runtime.calls
        if op == "exec_sync" and args[0] == container_id
    ]


@pytest.mark.parametrize("how", ["deleted", "changed"])
def test_a_pre_stop_hook_under_a_zero_grace_period_is_bounded_however_the_kill_comes(
    node: Node, how: str
) -> None:
    """One rule for a kill: a pod deleted (the termination's kill) and a container whose spec
    changed (the plan's kill) both bound a preStop exec by the two-second floor; an exec
    timeout of 0 would mean none, and the hook would hold the kill for its whole 100 s."""
    hook = LifecycleHandler(exec=ExecAction(("sleep", "100")))

    def pod(image: str) -> Pod:
        app = ctr("app", image=image, lifecycle=Lifecycle(pre_stop=hook))
        return make_pod("web", app, termination_grace_period_seconds=0)

    node.kubelet.set_pods([pod("busybox:1.36")])
    node.converge()
    (app,) = node.running("web", "app")
    before = node.clock.monotonic()
    node.kubelet.set_pods([] if how == "deleted" else [pod("busybox:1.37")])
    node.run_until(lambda: bool(stop_timeouts(node, app.id)))
    assert hook_timeouts(node, app.id) == [pytest.approx(2)]
    assert stop_timeouts(node, app.id) == [pytest.approx(2)]
    assert node.clock.monotonic() - before < 10
