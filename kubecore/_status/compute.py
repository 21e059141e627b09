"""The pod's v1 status from what the runtime shows (pure): today's kubelet rules.

Container states come from each container's newest instance (the running one in the pod's
sandbox first), its previous dead instance gives ``lastState``, the planner's ``waiting`` gives the
reason of a container that waits (CrashLoopBackOff, ImagePullBackOff, PodInitializing). The phase
follows the kubelet's ``getPhase``; a terminal phase in ``previous`` is never left.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import attrs

from kubecore._contract.observed import ObservedPod, Record, View
from kubecore._contract.values import RuntimeState
from kubecore._model.qos import qos_class
from kubecore._model.v1 import (
    TERMINAL_PHASES,
    Container,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    HostIP,
    Pod,
    PodCondition,
    PodIP,
    PodPhase,
    PodReadinessGate,
    PodSpec,
    PodStatus,
)
from kubecore._planner.actions import PodActions, PodHistory, ProbeState, Waiting
from kubecore._planner.plan import POD_INITIALIZING, compute_pod_actions
from kubecore._planner.pod_info import pod_info
from kubecore._planner.restart_rules import (
    container_finished,
    container_should_restart,
    pod_finished,
)
from kubecore._util.timefmt import rfc3339

DEFAULT_RUNTIME_NAME = "kubecore"
CONTAINER_CREATING = "ContainerCreating"
POD_COMPLETED = "PodCompleted"
UNKNOWN_EXIT_CODE = 1
"""Reported (and judged, by the planner, as a failure) when a dead container has no exit code."""


def _terminated(record: Record, prefix: str, messages: Mapping[str, str]) -> ContainerState:
    c = record.c
    code = c.exit_code if c.exit_code is not None else UNKNOWN_EXIT_CODE
    return ContainerState(
        terminated=ContainerStateTerminated(
            exit_code=code,
            reason=c.reason or ("Completed" if code == 0 else "Error"),
            message=messages.get(c.id) or c.message,
            started_at=rfc3339(c.started_at) if c.started_at is not None else "",
            finished_at=rfc3339(c.finished_at) if c.finished_at is not None else "",
            container_id=prefix + c.id,
        )
    )


def _container_status(
    container: Container,
    records: Sequence[Record],
    *,
    sandbox_id: str,
    waiting: Waiting | None,
    probes: Mapping[str, ProbeState],
    messages: Mapping[str, str],
    prefix: str,
    is_init: bool,
    default_reason: str,
) -> ContainerStatus:
    if not records:
        reason = waiting.reason if waiting else default_reason
        return ContainerStatus(
            name=container.name,
            image=container.image,
            state=ContainerState(
                waiting=ContainerStateWaiting(reason, waiting.message if waiting else "")
            ),
        )
    current = records[0]
    for r in records:
        if r.c.state is RuntimeState.RUNNING and r.c.sandbox_id == sandbox_id:
            current = r
            break
    c = current.c
    previous_dead = next(
        (r for r in records if r is not current and not r.live and not r.never_started), None
    )
    last_state = _terminated(previous_dead, prefix, messages) if previous_dead else ContainerState()
    running = False
    if c.state is RuntimeState.RUNNING:
        running = True
        started_at = c.started_at if c.started_at is not None else c.created_at
        state = ContainerState(running=ContainerStateRunning(rfc3339(started_at)))
    elif c.state is RuntimeState.UNKNOWN:
        state = ContainerState()
    elif waiting is not None:
        state = ContainerState(waiting=ContainerStateWaiting(waiting.reason, waiting.message))
        if not current.never_started:
            last_state = _terminated(current, prefix, messages)
    elif current.never_started:
        state = ContainerState(waiting=ContainerStateWaiting(CONTAINER_CREATING))
    else:
        state = _terminated(current, prefix, messages)

    if is_init and not container.is_sidecar:
        started = running
        ready = state.terminated is not None and state.terminated.exit_code == 0
    else:
        probe = probes.get(c.id) if probes else None
        started = running and (
            container.startup_probe is None or (probe is not None and probe.started)
        )
        ready = started and (
            container.readiness_probe is None or (probe is not None and probe.ready)
        )
    return ContainerStatus(
        name=container.name,
        image=container.image,
        state=state,
        last_state=last_state,
        ready=ready,
        started=started,
        restart_count=current.restart_count,
        image_id=c.image_id,
        container_id=prefix + c.id,
    )


def _exit_code(status: ContainerStatus) -> int | None:
    """The exit code of the container's last run (None: it has not ended)."""
    terminated = status.state.terminated or status.last_state.terminated
    return None if terminated is None else terminated.exit_code


def _phase(
    spec: PodSpec,
    init_statuses: Sequence[ContainerStatus],
    statuses: Sequence[ContainerStatus],
    terminal: bool,
) -> PodPhase:
    """The kubelet's getPhase. A sidecar counts as running beside the app containers, and as
    pending init until it has started. An exited container counts as restarting when its
    restart rules and policy (else the pod's policy) restart it for its exit code."""
    policy = spec.restart_policy
    pending_init = failed_init = 0
    unknown = running = waiting = stopped = succeeded = 0
    for st, container in zip(init_statuses, spec.init_containers, strict=True):
        s = st.state
        if container.is_sidecar:
            # An exited sidecar is neither running nor stopped: it is restarted.
            if s.running is not None:
                running += 1
                if not st.started:
                    pending_init += 1
            elif s.waiting is not None and st.last_state.terminated is None:
                pending_init += 1
                waiting += 1
            elif s.terminated is None and s.waiting is None:
                pending_init += 1
                unknown += 1
        elif s.running is not None:
            pending_init += 1
        elif s.terminated is not None or (
            s.waiting is not None and st.last_state.terminated is not None
        ):
            code = _exit_code(st)
            if code != 0 and not container_should_restart(container, policy, code):
                failed_init += 1
        else:
            pending_init += 1
    for st in statuses:
        s = st.state
        if s.running is not None:
            running += 1
        elif s.terminated is not None or (
            s.waiting is not None and st.last_state.terminated is not None
        ):
            stopped += 1
            if s.terminated is not None and s.terminated.exit_code == 0:
                succeeded += 1
        elif s.waiting is not None:
            waiting += 1
        else:
            unknown += 1
    app_started = _any_started(statuses)
    # App containers only start once init is done: a failed init instance seen next to them
    # (a contradictory snapshot) does not fail the pod, as the planner does not either.
    if failed_init and not app_started:
        return "Failed"
    # Once an app container has started, init containers without a status (garbage collected,
    # or from an earlier sandbox) no longer hold the pod in Pending, as in the kubelet.
    if (pending_init and not app_started) or waiting:
        return "Pending"
    if running and not unknown:
        return "Running"
    if not running and stopped and not unknown:
        if terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        runs = ((c, True, _exit_code(st)) for st, c in zip(statuses, spec.containers, strict=True))
        finished, failed = pod_finished(policy, runs)
        if not finished:  # some are restarting
            return "Running"
        return "Failed" if failed else "Succeeded"
    return "Pending"


def _any_started(statuses: Sequence[ContainerStatus]) -> bool:
    """Whether an app container has run (so init was done), as the kubelet's
    HasAnyRegularContainerStarted."""
    return any(
        st.state.running or st.state.terminated or st.last_state.terminated for st in statuses
    )


def _condition(
    kind: str,
    ok: bool,
    reason: str,
    message: str,
    previous: Mapping[str, PodCondition],
    now: str,
) -> PodCondition:
    status: Literal["True", "False"] = "True" if ok else "False"
    before = previous.get(kind)
    when = before.last_transition_time if before and before.status == status else now
    return PodCondition(
        type=kind,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=when,
    )


def _names(statuses: Sequence[ContainerStatus]) -> str:
    return "[" + " ".join(st.name for st in statuses) + "]"


def _readiness_gates_unmet(gates: tuple[PodReadinessGate, ...]) -> tuple[str, str]:
    """Reason and message of readiness gates not met ('' when there are none). A gate's condition
    is set by an API client; with no API server nothing sets it, so, as the kubelet does for a
    condition that does not exist, the pod stays NotReady."""
    if not gates:
        return "", ""
    missing = [
        f'corresponding condition of pod readiness gate "{gate.condition_type}" does not exist.'
        for gate in gates
    ]
    return "ReadinessGatesNotReady", ", ".join(missing)


def compute_pod_status(
    pod: Pod,
    observed: ObservedPod,
    history: PodHistory,
    actions: PodActions | None,
    now: float,
    *,
    previous: PodStatus | None = None,
    termination_messages: Mapping[str, str] | None = None,
    runtime_name: str = DEFAULT_RUNTIME_NAME,
    host_ip: str = "",
) -> PodStatus:
    """The v1 ``PodStatus`` of a pod (pure).

    ``actions`` is this sync's plan (planned here when None); ``termination_messages`` maps a
    runtime container id to the text of its termination-message file; ``runtime_name`` prefixes
    container ids (``<runtime>://<id>``); ``host_ip`` is the node's address (and a host-network
    pod's IP).
    """
    if actions is None:
        actions = compute_pod_actions(pod, observed, history, now)
    spec = pod.spec
    view = View(pod_info(pod), observed)
    sandbox = view.sandbox
    init_statuses, statuses = _container_statuses(
        pod,
        view,
        actions,
        history.probes,
        termination_messages or {},
        f"{runtime_name}://",
    )
    phase, reason, message = _phase_and_reason(spec, init_statuses, statuses, actions, previous)
    conditions = _conditions(spec, init_statuses, statuses, phase, previous, rfc3339(now))

    if spec.host_network and host_ip:
        pod_ip = host_ip
    elif sandbox is not None and sandbox.ip:
        pod_ip = sandbox.ip
    else:
        pod_ip = previous.pod_ip if previous is not None else ""
    if previous is not None and previous.start_time:
        start_time = previous.start_time
    elif observed.sandboxes:
        start_time = rfc3339(min(s.created_at for s in observed.sandboxes))
    else:
        start_time = ""
    node_ip = host_ip or (previous.host_ip if previous is not None else "")
    return PodStatus(
        phase=phase,
        conditions=conditions,
        message=message,
        reason=reason,
        host_ip=node_ip,
        host_ips=(HostIP(node_ip),) if node_ip else (),
        pod_ip=pod_ip,
        pod_ips=(PodIP(pod_ip),) if pod_ip else (),
        start_time=start_time,
        qos_class=qos_class(pod),
        init_container_statuses=init_statuses,
        container_statuses=statuses,
        ephemeral_container_statuses=_ephemeral_statuses(
            pod, view, actions, termination_messages or {}, f"{runtime_name}://"
        ),
    )


def _ephemeral_statuses(
    pod: Pod,
    view: View,
    actions: PodActions,
    messages: Mapping[str, str],
    prefix: str,
) -> tuple[ContainerStatus, ...]:
    """The statuses of the pod's ephemeral containers: never ready, never restarted."""
    if not pod.spec.ephemeral_containers:
        return ()
    sandbox_id = view.sandbox.id if view.sandbox is not None else ""
    waiting = {w.name: w for w in actions.waiting}
    return tuple(
        attrs.evolve(
            _container_status(
                c,
                view.ephemeral.get(c.name, ()),
                sandbox_id=sandbox_id,
                waiting=waiting.get(c.name),
                probes={},
                messages=messages,
                prefix=prefix,
                is_init=False,
                default_reason=CONTAINER_CREATING,
            ),
            ready=False,
        )
        for c in pod.spec.ephemeral_containers
    )


def _container_statuses(
    pod: Pod,
    view: View,
    actions: PodActions,
    probes: Mapping[str, ProbeState],
    messages: Mapping[str, str],
    prefix: str,
) -> tuple[tuple[ContainerStatus, ...], tuple[ContainerStatus, ...]]:
    """The statuses of the pod's init containers and of its app containers."""
    spec = pod.spec
    sandbox_id = view.sandbox.id if view.sandbox is not None else ""
    waiting = {w.name: w for w in actions.waiting}
    init_statuses = tuple(
        _container_status(
            c,
            view.init.get(c.name, ()),
            sandbox_id=sandbox_id,
            waiting=waiting.get(c.name),
            probes=probes,
            messages=messages,
            prefix=prefix,
            is_init=True,
            default_reason=CONTAINER_CREATING if i == 0 else POD_INITIALIZING,
        )
        for i, c in enumerate(spec.init_containers)
    )
    statuses = tuple(
        _container_status(
            c,
            view.app.get(c.name, ()),
            sandbox_id=sandbox_id,
            waiting=waiting.get(c.name),
            probes=probes,
            messages=messages,
            prefix=prefix,
            is_init=False,
            default_reason=CONTAINER_CREATING,
        )
        for c in spec.containers
    )
    return init_statuses, statuses


def _phase_and_reason(
    spec: PodSpec,
    init_statuses: Sequence[ContainerStatus],
    statuses: Sequence[ContainerStatus],
    actions: PodActions,
    previous: PodStatus | None,
) -> tuple[PodPhase, str, str]:
    """The pod's phase, with its reason and message: a terminal phase seen before is kept (with
    its reason: it ended before this), else a failure the plan names gives them."""
    phase = _phase(spec, init_statuses, statuses, actions.terminal)
    if actions.pod_failed:
        phase = "Failed"
    reason = previous.reason if previous is not None else ""
    message = previous.message if previous is not None else ""
    if previous is not None and previous.phase in TERMINAL_PHASES:
        phase = previous.phase  # and its reason: it ended before this
    elif actions.failure_reason:
        reason, message = actions.failure_reason, actions.failure_message
    return phase, reason, message


def _conditions(
    spec: PodSpec,
    init_statuses: Sequence[ContainerStatus],
    statuses: Sequence[ContainerStatus],
    phase: PodPhase,
    previous: PodStatus | None,
    stamp: str,
) -> tuple[PodCondition, ...]:
    """Initialized, Ready, ContainersReady and PodScheduled, each keeping the transition time
    it had in ``previous`` while its status stays."""
    before = {c.type: c for c in previous.conditions} if previous is not None else {}
    sidecars = tuple(c.is_sidecar for c in spec.init_containers)
    incomplete = [
        st
        for st, sidecar in zip(init_statuses, sidecars, strict=True)
        if not (st.started if sidecar else st.ready)
    ]
    unready = [
        *(
            st
            for st, sidecar in zip(init_statuses, sidecars, strict=True)
            if sidecar and not st.ready
        ),
        *(st for st in statuses if not st.ready),
    ]
    if phase == "Succeeded":
        init_reason = ready_reason = POD_COMPLETED
        init_message = ready_message = ""
    else:
        init_reason = "ContainersNotInitialized" if incomplete else ""
        init_message = (
            f"containers with incomplete status: {_names(incomplete)}" if incomplete else ""
        )
        ready_reason = "ContainersNotReady" if unready else ""
        ready_message = f"containers with unready status: {_names(unready)}" if unready else ""
    initialized = not incomplete or phase == "Succeeded" or _any_started(statuses)
    if initialized and incomplete and phase != "Succeeded":
        init_reason, init_message = "", ""  # initialized before: sidecars restarting
    containers_ready = not unready and phase not in TERMINAL_PHASES
    gates_reason, gates_message = _readiness_gates_unmet(spec.readiness_gates)
    ready = containers_ready and not gates_reason
    if containers_ready and gates_reason:
        pod_ready_reason, pod_ready_message = gates_reason, gates_message
    else:
        pod_ready_reason, pod_ready_message = ready_reason, ready_message
    return (
        _condition("Initialized", initialized, init_reason, init_message, before, stamp),
        _condition("Ready", ready, pod_ready_reason, pod_ready_message, before, stamp),
        _condition("ContainersReady", containers_ready, ready_reason, ready_message, before, stamp),
        _condition("PodScheduled", True, "", "", before, stamp),
    )


# --- reading a status, as kubectl and `kubecore run --once` do ---------------------------

FAILED_WAITING_REASONS = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "PreStartHookError",
        "PostStartHookError",
    }
)
"""Waiting reasons that need a change from outside (or a long back-off) to clear. The others
(``ContainerCreating``, ``ErrImagePull``, ``CreateContainerError``, ...) clear at the next try."""


def _terminated_reason(status: ContainerStatus) -> str:
    terminated = status.state.terminated
    if terminated is None:
        return ""
    if terminated.reason:
        return terminated.reason
    if terminated.signal:
        return f"Signal:{terminated.signal}"
    return f"ExitCode:{terminated.exit_code}"


def _condition_true(status: PodStatus, kind: str) -> bool:
    return any(c.type == kind and c.status == "True" for c in status.conditions)


def _init_status_text(pod: Pod, status: PodStatus) -> str:
    """``Init:...`` while an init container has not completed ('' once all have)."""
    total = len(pod.spec.init_containers)
    sidecars = {c.name for c in pod.spec.init_containers if c.is_sidecar}
    for index, cs in enumerate(status.init_container_statuses):
        if cs.name in sidecars and (cs.started or _any_started(status.container_statuses)):
            continue
        terminated = cs.state.terminated
        if terminated is not None and terminated.exit_code == 0:
            continue
        if terminated is not None:
            return "Init:" + _terminated_reason(cs)
        waiting = cs.state.waiting
        if waiting is not None and waiting.reason and waiting.reason != POD_INITIALIZING:
            return "Init:" + waiting.reason
        return f"Init:{index}/{total}"
    return ""


def pod_status_text(pod: Pod) -> str:
    """The STATUS column as kubectl's pod printer writes it: the pod's reason or phase, then
    ``Init:<reason>`` / ``Init:i/n`` while init containers have not completed, else the last
    waiting or terminated reason of the app containers (``CrashLoopBackOff``, ``Completed``,
    ``Error``, ``ExitCode:N``, ``Signal:N``); ``Completed`` beside a running container reads
    ``Running`` when the pod is Ready and ``NotReady`` when it is not."""
    status = pod.status
    if status is None:
        return "Pending"
    reason = status.reason or status.phase
    initializing = _init_status_text(pod, status)
    if initializing and not _condition_true(status, "Initialized"):
        return initializing
    reason = initializing or reason
    has_running = False
    for cs in reversed(status.container_statuses):
        if cs.state.waiting is not None and cs.state.waiting.reason:
            reason = cs.state.waiting.reason
        elif cs.state.terminated is not None:
            reason = _terminated_reason(cs)
        elif cs.state.running is not None and cs.ready:
            has_running = True
    if reason == "Completed" and has_running:
        reason = "Running" if _condition_true(status, "Ready") else "NotReady"
    return reason


Verdict = Literal["ok", "pending", "failed"]


def _stays_terminated(container: Container, policy: str, status: ContainerStatus) -> bool:
    """A terminated container the kubelet will not restart (``container_finished``)."""
    terminated = status.state.terminated
    code = None if terminated is None else terminated.exit_code
    return container_finished(container, policy, terminated is not None, code)


def pod_verdict(pod: Pod) -> tuple[Verdict, str]:
    """Has the pod settled (``ok``), failed (``failed``, with the reason) or neither yet?

    A pod has settled when nothing changes any more without a change from outside: it
    succeeded, or every app container runs and is ready or has finished for good under the
    restart policy (a ``restartPolicy: Never`` pod with a finished container beside running
    ones: ``NotReady`` in the table). One finished with an error, a failed phase or a waiting
    reason that needs outside help (``FAILED_WAITING_REASONS``) is a failure."""
    status = pod.status
    if status is None:
        return "pending", "no status yet"
    if status.phase == "Succeeded":
        return "ok", ""
    if status.phase == "Failed":
        detail = status.reason or status.message or _first_failure(status.container_statuses)
        return "failed", f"phase Failed{': ' + detail if detail else ''}"
    for cs in status.init_container_statuses + status.container_statuses:
        waiting = cs.state.waiting
        if waiting is not None and waiting.reason in FAILED_WAITING_REASONS:
            message = f" ({waiting.message})" if waiting.message else ""
            return "failed", f"container {cs.name}: {waiting.reason}{message}"
    policy = pod.spec.restart_policy
    containers = {c.name: c for c in pod.spec.containers}
    if (
        status.phase == "Running"
        and len(status.container_statuses) == len(pod.spec.containers)
        and all(
            (cs.state.running is not None and cs.ready)
            or (cs.name in containers and _stays_terminated(containers[cs.name], policy, cs))
            for cs in status.container_statuses
        )
    ):
        failure = _first_failure(status.container_statuses)
        return ("failed", failure) if failure else ("ok", "")
    return "pending", f"{pod_status_text(pod)}"


def pod_settled(pod: Pod) -> bool:
    """Whether nothing more happens to ``pod`` without a change from outside or a back-off.

    The rule ``kubecore run --once`` stops on: the pod's verdict (``pod_verdict``) is ``ok``
    (it succeeded, or every app container runs ready or has finished for good under the
    restart policy) or ``failed`` (a failed phase, an error exit of a finished container, or a
    waiting reason such as ``CrashLoopBackOff`` that needs outside help). A pod without a
    status, still starting or with an unready container has not settled. A ``restartPolicy:
    Never`` pod with one container exited 0 beside a running, ready one has settled.
    """
    return verdict_settled(pod_verdict(pod)[0])


def verdict_settled(verdict: Verdict) -> bool:
    """A pod with this verdict has settled: ``ok`` or ``failed``, not ``pending``."""
    return verdict != "pending"


def _first_failure(statuses: Iterable[ContainerStatus]) -> str:
    for cs in statuses:
        terminated = cs.state.terminated
        if terminated is not None and terminated.exit_code != 0:
            return f"container {cs.name} exited with {terminated.exit_code}"
    return ""
