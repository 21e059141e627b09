"""Pod status: phase by today's kubelet rules, conditions, per-container state."""

from __future__ import annotations

import attrs
import pytest

from kubecore import Pod
from kubecore._contract.observed import ObservedPod
from kubecore._planner.actions import PodHistory, ProbeState
from kubecore._status.compute import compute_pod_status
from kubecore._util.timefmt import rfc3339
from kubecore.runtime import RuntimeState
from kubecore.v1 import (
    ContainerState,
    ContainerStateTerminated,
    ContainerStateWaiting,
    PodCondition,
    PodStatus,
    Probe,
)
from tests.builders import (
    BASE_POD,
    INIT_POD,
    NOW,
    SB,
    T0,
    crash,
    dead,
    healthy,
    sandbox,
    swap,
    with_spec,
)
from tests.builders import observed_ctr as ctr

H = PodHistory()


def status(
    pod: Pod,
    observed: ObservedPod,
    history: PodHistory = H,
    now: float = NOW,
    **kw: object,
) -> PodStatus:
    return compute_pod_status(pod, observed, history, None, now, **kw)  # type: ignore[arg-type]


def cond(st: PodStatus, kind: str) -> PodCondition:
    (found,) = [c for c in st.conditions if c.type == kind]
    return found


def test_rfc3339() -> None:
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    assert rfc3339(1714564800.7) == "2024-05-01T12:00:00Z"


def test_all_running() -> None:
    st = status(BASE_POD, healthy())
    assert st.phase == "Running"
    assert [(c.type, c.status) for c in st.conditions] == [
        ("Initialized", "True"),
        ("Ready", "True"),
        ("ContainersReady", "True"),
        ("PodScheduled", "True"),
    ]
    assert all(c.last_transition_time == rfc3339(NOW) for c in st.conditions)
    app = st.container_statuses[0]
    assert app.name == "app" and app.image == "nginx:1.25" and app.image_id == "sha256:img"
    assert app.state.running is not None
    assert app.state.running.started_at == rfc3339(T0 + 1.5)
    assert app.ready and app.started and app.restart_count == 0
    assert app.container_id == "kubecore://app-0"
    assert st.pod_ip == "10.0.0.2"
    assert st.start_time == rfc3339(T0)


def test_runtime_name_prefixes_container_ids() -> None:
    st = status(BASE_POD, healthy(), runtime_name="docker")
    assert st.container_statuses[0].container_id == "docker://app-0"


def test_nothing_yet_is_pending_container_creating() -> None:
    st = status(BASE_POD, ObservedPod())
    assert st.phase == "Pending"
    assert st.container_statuses[0].state.waiting == ContainerStateWaiting("ContainerCreating")
    assert cond(st, "Ready").status == "False"
    assert cond(st, "Ready").message == "containers with unready status: [app sidecar]"
    assert st.pod_ip == "" and st.start_time == ""


READINESS = Probe(period_seconds=5)


def probed(**probes: Probe) -> Pod:
    app = attrs.evolve(BASE_POD.spec.containers[0], **probes)
    return with_spec(BASE_POD, containers=(app, BASE_POD.spec.containers[1]))


def test_readiness_drives_ready() -> None:
    pod = probed(readiness_probe=READINESS)
    not_ready = status(pod, healthy(), PodHistory(probes={"app-0": ProbeState(started=True)}))
    assert not not_ready.container_statuses[0].ready
    assert cond(not_ready, "ContainersReady").reason == "ContainersNotReady"
    assert cond(not_ready, "Ready").message == "containers with unready status: [app]"
    assert not_ready.phase == "Running"
    ready = status(pod, healthy(), PodHistory(probes={"app-0": ProbeState(ready=True)}))
    assert ready.container_statuses[0].ready
    assert cond(ready, "Ready").status == "True"


def test_startup_probe_holds_started_and_ready() -> None:
    pod = probed(startup_probe=READINESS)
    st = status(pod, healthy())
    assert not st.container_statuses[0].started and not st.container_statuses[0].ready
    st = status(pod, healthy(), PodHistory(probes={"app-0": ProbeState(started=True)}))
    assert st.container_statuses[0].started and st.container_statuses[0].ready


def test_crash_loop_back_off_keeps_last_state() -> None:
    st = status(
        BASE_POD,
        swap(healthy(), dead("app", 2, restart=3, reason="Error")),
        PodHistory(crash_backoff={"app": crash()}),
    )
    app = st.container_statuses[0]
    assert app.state.waiting is not None and app.state.waiting.reason == "CrashLoopBackOff"
    assert "back-off 20s" in app.state.waiting.message
    assert app.last_state.terminated is not None and app.last_state.terminated.exit_code == 2
    assert app.restart_count == 3
    assert st.phase == "Running"  # the sidecar runs; a restarting container counts as stopped


def test_image_pull_back_off_is_pending() -> None:
    st = status(
        BASE_POD,
        ObservedPod(sandboxes=(sandbox(),), containers=(ctr("sidecar"),)),
        PodHistory(image_backoff={"app": crash()}),
    )
    assert st.phase == "Pending"
    assert st.container_statuses[0].state.waiting == ContainerStateWaiting(
        "ImagePullBackOff", 'Back-off pulling image "nginx:1.25"'
    )


def test_terminated_state_and_last_state() -> None:
    oom = dead("app", 137, restart=1, created=T0 + 30, reason="OOMKilled", id="second")
    first = dead("app", 1, restart=0, created=T0 + 1, id="first")
    st = status(
        with_spec(BASE_POD, restart_policy="Never"),
        swap(healthy(), oom, first),
        termination_messages={"second": "out of memory\n"},
    )
    app = st.container_statuses[0]
    assert app.state.terminated == ContainerStateTerminated(
        exit_code=137,
        reason="OOMKilled",
        message="out of memory\n",
        started_at=rfc3339(T0 + 30.5),
        finished_at=rfc3339(T0 + 35),
        container_id="kubecore://second",
    )
    assert app.last_state.terminated is not None
    assert app.last_state.terminated.reason == "Error"  # derived from the exit code
    assert app.last_state.terminated.container_id == "kubecore://first"
    assert not app.ready and not app.started


@pytest.mark.parametrize(
    ("policy", "exits", "phase"),
    [
        ("Always", (0, 0), "Running"),  # all stopped, they will restart
        ("Always", (1, 0), "Running"),
        ("OnFailure", (0, 0), "Succeeded"),
        ("OnFailure", (1, 0), "Running"),  # restarting the failed one
        ("Never", (0, 0), "Succeeded"),
        ("Never", (1, 0), "Failed"),
    ],
)
def test_phase_when_all_stopped(policy: str, exits: tuple[int, int], phase: str) -> None:
    pod = with_spec(BASE_POD, restart_policy=policy)
    observed = swap(healthy(), dead("app", exits[0]), dead("sidecar", exits[1]))
    assert status(pod, observed).phase == phase


def test_one_stopped_one_running_is_running() -> None:
    pod = with_spec(BASE_POD, restart_policy="Never")
    assert status(pod, swap(healthy(), dead("app", 1))).phase == "Running"


def test_succeeded_conditions_say_pod_completed() -> None:
    pod = with_spec(BASE_POD, restart_policy="OnFailure")
    st = status(pod, swap(healthy(), dead("app", 0), dead("sidecar", 0)))
    assert st.phase == "Succeeded"
    assert (cond(st, "Ready").status, cond(st, "Ready").reason) == ("False", "PodCompleted")
    assert (cond(st, "Initialized").status, cond(st, "Initialized").reason) == (
        "True",
        "PodCompleted",
    )


def test_init_running_is_pending_and_not_initialized() -> None:
    observed = ObservedPod(sandboxes=(sandbox(INIT_POD),), containers=(ctr("setup", INIT_POD),))
    st = status(INIT_POD, observed)
    assert st.phase == "Pending"
    init = cond(st, "Initialized")
    assert (init.status, init.reason) == ("False", "ContainersNotInitialized")
    assert init.message == "containers with incomplete status: [setup migrate]"
    assert st.init_container_statuses[0].state.running is not None
    assert st.init_container_statuses[1].state.waiting == ContainerStateWaiting("PodInitializing")
    assert st.container_statuses[0].state.waiting == ContainerStateWaiting("PodInitializing")


def test_init_done_is_initialized_and_init_ready() -> None:
    st = status(INIT_POD, healthy(INIT_POD))
    assert cond(st, "Initialized").status == "True"
    assert all(s.ready for s in st.init_container_statuses)
    assert st.phase == "Running"


def test_init_failure_under_never_fails_the_pod() -> None:
    pod = with_spec(INIT_POD, restart_policy="Never")
    observed = ObservedPod(
        sandboxes=(sandbox(pod),), containers=(dead("setup", 1, pod=pod, reason="Error"),)
    )
    assert status(pod, observed).phase == "Failed"


def test_init_failure_under_always_is_pending() -> None:
    observed = ObservedPod(
        sandboxes=(sandbox(INIT_POD),), containers=(dead("setup", 1, pod=INIT_POD),)
    )
    st = status(INIT_POD, observed, PodHistory(crash_backoff={"setup": crash()}))
    assert st.phase == "Pending"
    setup = st.init_container_statuses[0]
    assert setup.state.waiting is not None and setup.state.waiting.reason == "CrashLoopBackOff"


def test_a_terminal_phase_is_never_left() -> None:
    previous = PodStatus(phase="Succeeded")
    assert status(BASE_POD, healthy(), previous=previous).phase == "Succeeded"
    failed = PodStatus(phase="Failed")
    assert status(BASE_POD, ObservedPod(), previous=failed).phase == "Failed"


def test_transition_times_kept_while_unchanged() -> None:
    first = status(BASE_POD, healthy(), now=NOW)
    same = status(BASE_POD, healthy(), now=NOW + 60, previous=first)
    assert same.conditions == first.conditions
    changed = status(BASE_POD, swap(healthy(), dead("app", 1)), now=NOW + 120, previous=same)
    assert cond(changed, "Ready").last_transition_time == rfc3339(NOW + 120)
    assert cond(changed, "Initialized").last_transition_time == rfc3339(NOW)


def test_start_time_and_pod_ip_outlive_the_sandbox() -> None:
    first = status(BASE_POD, healthy())
    later = status(
        BASE_POD,
        ObservedPod(sandboxes=(sandbox(id="sb-2", created=T0 + 500, ip="10.0.0.9", attempt=1),)),
        previous=first,
    )
    assert later.start_time == rfc3339(T0)
    assert later.pod_ip == "10.0.0.9"
    gone = status(BASE_POD, ObservedPod(), previous=first)
    assert gone.pod_ip == "10.0.0.2"


def test_host_network_pod_ip_is_the_host_ip() -> None:
    pod = with_spec(BASE_POD, host_network=True)
    st = status(pod, healthy(pod), host_ip="192.168.1.10")
    assert (st.pod_ip, st.host_ip) == ("192.168.1.10", "192.168.1.10")


def test_running_instance_in_the_sandbox_wins_over_a_newer_dead_one() -> None:
    observed = swap(
        healthy(),
        ctr("app", id="live", created=T0 + 1),
        dead("app", 1, id="newer-dead", restart=1, created=T0 + 9),
    )
    app = status(BASE_POD, observed).container_statuses[0]
    assert app.state.running is not None and app.container_id == "kubecore://live"
    assert app.last_state.terminated is not None


def test_unknown_state_is_reported_as_no_state() -> None:
    observed = swap(healthy(), ctr("app", state=RuntimeState.UNKNOWN))
    pod = with_spec(BASE_POD, restart_policy="Never")
    actions_free = compute_pod_status(pod, observed, H, None, NOW)
    assert actions_free.container_statuses[0].state == ContainerState()


def test_actions_given_are_used_for_waiting_reasons() -> None:
    from kubecore._planner.actions import PodActions, Waiting

    actions = PodActions(sandbox_id=SB, waiting=(Waiting("app", "ErrImagePull", "nope"),))
    observed = ObservedPod(sandboxes=(sandbox(),), containers=(ctr("sidecar"),))
    st = compute_pod_status(BASE_POD, observed, H, actions, NOW)
    assert st.container_statuses[0].state.waiting == ContainerStateWaiting("ErrImagePull", "nope")


def test_created_never_started_shows_container_creating() -> None:
    observed = swap(healthy(), ctr("app", state=RuntimeState.CREATED))
    st = compute_pod_status(BASE_POD, observed, H, None, NOW)
    assert st.container_statuses[0].state.waiting == ContainerStateWaiting("ContainerCreating")
    assert st.phase == "Pending"


def test_init_containers_gone_do_not_hold_a_pod_whose_app_containers_ran() -> None:
    # The init containers were garbage collected; the app containers all completed.
    pod = with_spec(INIT_POD, restart_policy="OnFailure")
    app = [dead(c.name, 0, pod=pod) for c in pod.spec.containers]
    st = status(pod, ObservedPod(sandboxes=(sandbox(pod),), containers=tuple(app)))
    assert st.phase == "Succeeded"
