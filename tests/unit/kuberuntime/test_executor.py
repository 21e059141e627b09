"""The executor carries the plan out: what it says on a kill, and the crash back-off it grows."""

from __future__ import annotations

import inspect
from pathlib import Path

from kubecore._contract.labels import CONTAINER_NAME_LABEL
from kubecore._contract.observed import ObservedPod
from kubecore._kuberuntime.containers import Containers
from kubecore._kuberuntime.kill import kill_message
from kubecore._kuberuntime.pod_record import PodRecord
from kubecore._model.v1 import ExecAction, Probe
from kubecore._planner.actions import ContainerToKill, ContainerToStart, KillReason, PodActions
from tests.agent.support import make_node
from tests.builders import ctr, make_pod


def test_the_kill_message_follows_the_reason_not_the_probe_text() -> None:
    startup = ContainerToKill("c1", "app", KillReason.STARTUP_FAILED, "probe failed: timeout")
    assert kill_message(startup) == "Container app failed startup probe, will be restarted"
    liveness = ContainerToKill("c1", "app", KillReason.LIVENESS_FAILED, "Startup-ish text")
    assert kill_message(liveness) == "Container app failed liveness probe, will be restarted"


def test_start_container_takes_the_plan_and_keywords() -> None:
    parameters = inspect.signature(Containers.start).parameters
    assert list(parameters) == ["self", "pod", "start", "is_init", "target", "record"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(parameters.values())[3:])


def test_a_failed_startup_probe_is_reported_as_such(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    startup = Probe(exec=ExecAction(("check-started",)), period_seconds=5, failure_threshold=2)
    node.kubelet.set_pods([make_pod("web", ctr("app", startup_probe=startup))])
    node.runtime.on_exec("check-started", 1)
    node.converge()
    (first,) = node.running("web", "app")
    node.run_until(lambda: node.running("web", "app")[0].id != first.id, step=5)
    killing = node.kubelet.views.recent_events(name="web", reason="Killing")
    assert killing and killing[0].message == (
        "Container app failed startup probe, will be restarted"
    )


def test_the_crash_back_off_grows_only_when_the_plan_says_after_a_crash(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    executor = node.kubelet._rooms.executor
    pod = make_pod("web", ctr("app"))
    record = PodRecord()
    first = PodActions(create_sandbox=True, containers_to_start=(ContainerToStart(0),))
    result = executor.execute(pod, first, ObservedPod(), record, None)
    assert result.ok and result.started == ("app",)
    assert result.record.crash_backoff == {}
    record = result.record
    (sandbox,) = node.runtime.list_sandboxes()
    again = PodActions(
        sandbox_id=sandbox.id,
        containers_to_start=(ContainerToStart(0, restart_count=1, after_crash=True),),
    )
    result = executor.execute(pod, again, ObservedPod(sandboxes=(sandbox,)), record, None)
    assert result.ok
    assert result.record.crash_backoff["app"].delay == node.kubelet.config.backoff_initial
    assert (
        record.crash_backoff == {}
    )  # the executor returns the record, never changes the given one
    restarted = [c for c in node.runtime.list_containers() if c.attempt == 1]
    assert [c.labels[CONTAINER_NAME_LABEL] for c in restarted] == ["app"]


def test_an_unexpected_error_keeps_what_the_pass_did_before_it(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    executor = node.kubelet._rooms.executor
    pod = make_pod("web", ctr("app"))
    after_crash = ContainerToStart(0, restart_count=1, after_crash=True)
    actions = PodActions(create_sandbox=True, containers_to_start=(after_crash,))
    node.runtime.start_container = None  # type: ignore[assignment,method-assign]
    result = executor.execute(pod, actions, ObservedPod(), PodRecord(), None)
    assert result.error.startswith("unexpected error: TypeError(")
    assert "app" in result.record.crash_backoff  # the back-off the start began is kept
