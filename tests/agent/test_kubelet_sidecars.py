"""Native sidecars (``initContainers[].restartPolicy: Always``) on the fake runtime, in virtual
time: start order, startup probes, restarts, pod completion and termination order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubecore._contract.values import ProbeOutcome, RuntimeState
from kubecore._model.v1 import Container, ExecAction, Probe
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


def sidecar(name: str = "log", **kw: Any) -> Container:
    return ctr(name, restart_policy="Always", **kw)


def job(name: str = "setup", *command: str) -> Container:
    return ctr(name, command=command or ("sh", "-c", "sleep 5"))


def probe(*command: str) -> Probe:
    return Probe(exec=ExecAction(command or ("check",)), period_seconds=1, failure_threshold=1)


def names_by_id(node: Node) -> dict[str, str]:
    return {c.id: c.name for c in node.all()}


def called(node: Node, op: str, names: dict[str, str] | None = None) -> list[str]:
    """Container names in the order ``op`` was called on them."""
    names = names or names_by_id(node)
    return [names[str(args[0])] for call, args in node.runtime.calls if call == op]


def started_names(node: Node) -> list[str]:
    return called(node, "start_container")


def init_status(node: Node, name: str, pod: str = "web") -> Any:
    return next(s for s in node.status(pod).init_container_statuses if s.name == name)


def condition(node: Node, kind: str, pod: str = "web") -> str:
    return next(c.status for c in node.status(pod).conditions if c.type == kind)


def test_a_sidecar_starts_in_order_and_runs_beside_the_app(node: Node) -> None:
    pod = make_pod(
        "web", ctr("app"), init_containers=(sidecar("log"), job("setup"), sidecar("proxy"))
    )
    node.kubelet.set_pods([pod])
    node.run_until(lambda: node.status().phase == "Running", step=1)
    assert started_names(node) == ["log", "setup", "proxy", "app"]
    assert {c.name for c in node.running("web")} == {"log", "proxy", "app"}
    for name in ("log", "proxy"):
        status = init_status(node, name)
        assert status.state.running is not None
        assert status.started and status.ready
    assert init_status(node, "setup").state.terminated.reason == "Completed"
    assert node.status().phase == "Running"
    assert condition(node, "Initialized") == "True"
    assert condition(node, "Ready") == "True"


def test_the_next_init_container_waits_for_the_sidecar_startup_probe(node: Node) -> None:
    node.checker.set_probe("log", "exec", ProbeOutcome.FAILURE)
    startup = Probe(exec=ExecAction(("check",)), period_seconds=1, failure_threshold=30)
    pod = make_pod("web", ctr("app"), init_containers=(sidecar("log", startup_probe=startup),))
    node.kubelet.set_pods([pod])
    for _ in range(5):
        node.kubelet.sync()
        node.clock.advance(1)
    assert [c.name for c in node.running("web")] == ["log"]
    status = init_status(node, "log")
    assert status.state.running is not None and not status.started and not status.ready
    assert node.status().phase == "Pending"
    assert condition(node, "Initialized") == "False"
    node.checker.set_probe("log", "exec", ProbeOutcome.SUCCESS)
    node.run_until(lambda: bool(node.running("web", "app")), step=1)
    assert init_status(node, "log").started


def test_readiness_is_not_required_to_go_on(node: Node) -> None:
    node.checker.set_probe("log", "exec", ProbeOutcome.FAILURE)
    pod = make_pod("web", ctr("app"), init_containers=(sidecar("log", readiness_probe=probe()),))
    node.kubelet.set_pods([pod])
    node.run_until(lambda: bool(node.running("web", "app")), step=1)
    node.run_until(lambda: init_status(node, "log").started, step=1)
    status = init_status(node, "log")
    assert status.started and not status.ready
    assert condition(node, "Initialized") == "True"
    assert condition(node, "Ready") == "False"


def test_a_sidecar_restarts_under_never_with_crash_back_off(node: Node) -> None:
    pod = make_pod("web", ctr("app"), init_containers=(sidecar("log"),), restart_policy="Never")
    node.kubelet.set_pods([pod])
    node.run_until(lambda: bool(node.running("web", "app")), step=1)
    (first,) = node.running("web", "log")
    node.runtime.crash(first.id, 2)
    node.kubelet.sync()
    assert len(node.all("web", "log")) == 2  # the first restart is immediate
    (second,) = node.running("web", "log")
    node.runtime.crash(second.id, 2)
    node.kubelet.sync()
    assert init_status(node, "log").state.waiting.reason == "CrashLoopBackOff"
    (backoff,) = node.kubelet.views.recent_events(name="web", reason="BackOff")
    assert backoff.involved_object.field_path == "spec.initContainers{log}"
    assert node.status().phase == "Running"
    assert condition(node, "Initialized") == "True"
    node.run_until(lambda: init_status(node, "log").state.running is not None, step=2)
    assert init_status(node, "log").restart_count == 2
    assert node.running("web", "app")


def test_a_sidecar_that_exits_during_init_is_restarted_before_the_next_starts(node: Node) -> None:
    pod = make_pod("web", ctr("app"), init_containers=(sidecar("log"), job("setup")))
    node.kubelet.set_pods([pod])
    node.kubelet.sync()
    (first,) = node.running("web", "log")
    node.runtime.crash(first.id, 1)
    node.kubelet.sync()
    assert started_names(node) == ["log", "log"]
    node.run_until(lambda: bool(node.running("web", "app")), step=1)
    assert started_names(node) == ["log", "log", "setup", "app"]


def test_a_failed_sidecar_liveness_probe_restarts_it(node: Node) -> None:
    pod = make_pod("web", ctr("app"), init_containers=(sidecar("log", liveness_probe=probe()),))
    node.kubelet.set_pods([pod])
    node.run_until(lambda: bool(node.running("web", "app")), step=1)
    node.checker.set_probe("log", "exec", ProbeOutcome.FAILURE)
    node.run_until(lambda: init_status(node, "log").restart_count == 1, step=1)
    assert "Unhealthy" in node.reasons("web")
    (app,) = node.all("web", "app")
    assert app.state is RuntimeState.RUNNING  # the app container is left alone


@pytest.mark.parametrize(("code", "phase"), [(0, "Succeeded"), (3, "Failed")])
def test_sidecars_do_not_keep_a_finished_pod_alive(node: Node, code: int, phase: str) -> None:
    pod = make_pod(
        "web",
        ctr("app"),
        init_containers=(sidecar("log"), sidecar("proxy")),
        restart_policy="Never",
    )
    node.kubelet.set_pods([pod])
    node.run_until(lambda: bool(node.running("web", "app")), step=1)
    (app,) = node.running("web", "app")
    node.runtime.exit(app.id, code)
    node.run_until(lambda: node.status().phase == phase, step=1)
    assert not node.running("web")
    assert called(node, "stop_container") == ["proxy", "log"]  # the last started stops first
    assert len(node.all("web", "log")) == 1  # not restarted once the pod is done


def test_on_termination_sidecars_stop_after_the_app_in_reverse_order(node: Node) -> None:
    pod = make_pod(
        "web",
        ctr("app"),
        ctr("worker"),
        init_containers=(sidecar("first"), job("setup"), sidecar("second")),
        termination_grace_period_seconds=10,
    )
    node.kubelet.set_pods([pod])
    node.run_until(lambda: len(node.running("web")) == 4, step=1)
    names = names_by_id(node)
    node.kubelet.set_pods([])
    node.run_until(lambda: not node.running("web"), step=1)
    stopped = called(node, "stop_container", names)
    assert stopped[-2:] == ["second", "first"]
    assert set(stopped[:2]) == {"app", "worker"}


def test_a_sidecar_spec_change_restarts_only_the_sidecar(node: Node) -> None:
    pod = make_pod("web", ctr("app"), init_containers=(sidecar("log"),))
    node.kubelet.set_pods([pod])
    node.run_until(lambda: bool(node.running("web", "app")), step=1)
    changed = make_pod("web", ctr("app"), init_containers=(sidecar("log", args=("--verbose",)),))
    node.kubelet.set_pods([changed])
    node.run_until(lambda: len(node.all("web", "log")) == 2 and bool(node.running("web", "log")))
    assert len(node.all("web", "app")) == 1


def test_stdin_stdin_once_and_tty_reach_the_runtime(node: Node) -> None:
    pod = make_pod("web", ctr("shell", stdin=True, stdin_once=True, tty=True), ctr("plain"))
    node.kubelet.set_pods([pod])
    node.converge()
    (shell,) = node.running("web", "shell")
    (plain,) = node.running("web", "plain")
    config = node.runtime.container_config(shell.id)
    assert (config.stdin, config.stdin_once, config.tty) == (True, True, True)
    config = node.runtime.container_config(plain.id)
    assert (config.stdin, config.stdin_once, config.tty) == (False, False, False)


def test_kubectl_status_shows_running_not_init_for_a_running_sidecar(node: Node) -> None:
    from kubecore._status.compute import pod_status_text, pod_verdict

    pod = make_pod("web", ctr("app"), init_containers=(sidecar("log"), job("setup")))
    node.kubelet.set_pods([pod])
    node.run_until(lambda: init_status(node, "setup").state.running is not None, step=0.1)
    assert pod_status_text(node.kubelet.get_pod("default", "web")) == "Init:1/2"  # type: ignore[arg-type]
    node.run_until(lambda: node.status().phase == "Running", step=1)
    found = node.kubelet.get_pod("default", "web")
    assert found is not None
    assert pod_status_text(found) == "Running"
    assert pod_verdict(found) == ("ok", "")
