"""One rule for a kill within a grace period, however the kill comes: a pod deleted with a grace
period (the termination's deadline), a failed probe with a grace period of its own, or a spec
change (the pod's grace period from now). Each gives the preStop hook what is left of the grace
period and the stop what the hook left over."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubecore._agent.termination import Termination
from kubecore._contract.values import ProbeOutcome
from kubecore._kuberuntime.kill import MIN_GRACE_PERIOD, FixedDeadline, time_left
from kubecore._model.v1 import ExecAction, Lifecycle, LifecycleHandler, Pod, Probe, SleepAction
from kubecore._util.clock import ManualClock
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod

GRACE = 30.0
HOOK = 10


def stop_timeouts(node: Node, container_id: str) -> list[float]:
    return [
        float(args[1])  # type: ignore[arg-type]
        for op, args in node.runtime.calls
        if op == "stop_container" and args[0] == container_id
    ]


def web(image: str = "busybox:1.36", *, spec_grace: float, probe: Probe | None = None) -> Pod:
    pre_stop = Lifecycle(pre_stop=LifecycleHandler(sleep=SleepAction(HOOK)))
    app = ctr("app", image=image, lifecycle=pre_stop, liveness_probe=probe)
    return make_pod("web", app, termination_grace_period_seconds=int(spec_grace))


@pytest.mark.parametrize("how", ["deleted with a grace period", "probe failed", "spec changed"])
def test_the_stop_gets_what_the_pre_stop_hook_left_of_the_grace_period(
    tmp_path: Path, how: str
) -> None:
    node = make_node(tmp_path)
    probe = Probe(
        exec=ExecAction(("check",)),
        period_seconds=1,
        failure_threshold=1,
        termination_grace_period_seconds=int(GRACE),
    )
    if how == "deleted with a grace period":
        pod = web(spec_grace=2 * GRACE)
    elif how == "probe failed":
        pod = web(spec_grace=2 * GRACE, probe=probe)
    else:
        pod = web(spec_grace=GRACE)
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    before = node.clock.monotonic()
    if how == "deleted with a grace period":
        node.kubelet.remove_pod(pod, grace_period=GRACE)
    elif how == "probe failed":
        node.checker.set_probe("app", "exec", ProbeOutcome.FAILURE)
    else:
        node.kubelet.set_pods([web("busybox:1.37", spec_grace=GRACE)])
    node.run_until(lambda: bool(stop_timeouts(node, app.id)))
    assert stop_timeouts(node, app.id)[0] == pytest.approx(GRACE - HOOK)
    assert node.clock.monotonic() - before >= HOOK


def test_a_termination_and_a_fixed_deadline_leave_the_same_time() -> None:
    clock = ManualClock()
    pod = web(spec_grace=2 * GRACE)
    termination = Termination(pod, GRACE)
    termination.begin(clock.monotonic())
    fixed = FixedDeadline(clock.monotonic() + GRACE)
    left_of_termination, left_of_fixed = time_left(clock, termination), time_left(clock, fixed)
    assert left_of_termination() == left_of_fixed() == GRACE
    clock.advance(HOOK)  # a preStop hook used part of it
    assert left_of_termination() == left_of_fixed() == GRACE - HOOK
    clock.advance(GRACE)
    assert left_of_termination() == left_of_fixed() < MIN_GRACE_PERIOD
