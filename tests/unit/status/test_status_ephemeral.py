"""The status of ephemeral containers: under ``ephemeralContainerStatuses`` (waiting, running,
terminated), never ready, restart count 0, and no part of the pod's phase or conditions."""

from __future__ import annotations

import attrs

from kubecore._contract.labels import EPHEMERAL_CONTAINER_ANNOTATION
from kubecore._contract.observed import ObservedPod
from kubecore._planner.actions import PodHistory
from kubecore._status.compute import compute_pod_status
from kubecore.runtime import RuntimeContainer, RuntimeState
from kubecore.v1 import ContainerStatus, EphemeralContainer, Pod, PodStatus
from tests.builders import BASE_POD, NOW, dead, healthy, sandbox, swap, with_spec
from tests.builders import observed_ctr as ctr

POD = with_spec(
    BASE_POD,
    ephemeral_containers=(
        EphemeralContainer("debugger", "busybox:1.36", target_container_name="app"),
    ),
)


def ephemeral(state: RuntimeState = RuntimeState.RUNNING, **kw: object) -> RuntimeContainer:
    c = ctr("debugger", POD, id="dbg-0", state=state, **kw)  # type: ignore[arg-type]
    return attrs.evolve(c, annotations={**c.annotations, EPHEMERAL_CONTAINER_ANNOTATION: "true"})


def status(observed: ObservedPod, pod: Pod = POD) -> PodStatus:
    return compute_pod_status(pod, observed, PodHistory(), None, NOW)


def debugger(st: PodStatus) -> ContainerStatus:
    (found,) = st.ephemeral_container_statuses
    assert found.name == "debugger" and found.image == "busybox:1.36"
    return found


def test_not_yet_started_it_waits() -> None:
    st = status(healthy(POD))
    waiting = debugger(st).state.waiting
    assert waiting is not None and waiting.reason == "ContainerCreating"
    assert st.phase == "Running" and [c.name for c in st.container_statuses] == ["app", "sidecar"]


def test_running_it_is_started_but_never_ready() -> None:
    st = status(swap(healthy(POD), ephemeral()))
    found = debugger(st)
    assert found.state.running is not None and found.started and not found.ready
    assert found.restart_count == 0 and found.container_id == "kubecore://dbg-0"
    assert all(c.status == "True" for c in st.conditions if c.type == "Ready")


def test_ended_it_stays_terminated_and_the_pod_runs_on() -> None:
    st = status(swap(healthy(POD), ephemeral(RuntimeState.EXITED, exit_code=3)))
    terminated = debugger(st).state.terminated
    assert terminated is not None and terminated.exit_code == 3
    assert debugger(st).restart_count == 0 and st.phase == "Running"


def test_the_phase_ignores_it() -> None:
    pod = with_spec(POD, restart_policy="Never")
    observed = ObservedPod(
        sandboxes=(sandbox(pod),),
        containers=(dead("app", 0, pod=pod), dead("sidecar", 0, pod=pod), ephemeral()),
    )
    assert status(observed, pod).phase == "Succeeded"


def test_a_pod_without_any_reports_none() -> None:
    assert status(healthy(BASE_POD), BASE_POD).ephemeral_container_statuses == ()
