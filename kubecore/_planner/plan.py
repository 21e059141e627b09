"""The pure planner: one pod's spec + what the runtime shows + its history -> ``PodActions``.

The kubelet's ``computePodActions`` without its hidden inputs: probe results, backoff state and
``now`` are arguments. No I/O, no clock, no threads.

Observed objects are read as ``_contract.observed`` defines (name, restart count, "newest"); the
pod's sandbox is the newest READY one and a container belongs to it by ``sandbox_id``; a
container's spec hash is ``HASH_ANNOTATION`` (absent: do not compare).

Decisions about a container name are taken from its newest instance in any sandbox (restart
policy), except init progress, which only counts what ran in the current sandbox: a new sandbox
runs the init containers again, as the kubelet does.

The parts: ``pod_info`` (the spec side, once per pod), ``steady`` (the common case, checked
first), ``terminal`` (when the pod ends), ``draft`` (one run's scratchpad), ``init_containers``
(init progress and sidecars), ``resize`` (resources changed in place or by a restart).
"""

from __future__ import annotations

from kubecore._contract.observed import ObservedPod, Record, View
from kubecore._contract.values import RuntimeSandbox, RuntimeState, SandboxState
from kubecore._model.v1 import Container, Pod
from kubecore._observability.events import EventReason
from kubecore._planner.actions import ContainerToStart, KillReason, PodActions, PodHistory, Waiting
from kubecore._planner.draft import Draft, probe_grace, probe_kill_reason, set_aside, to_start
from kubecore._planner.ephemeral import plan_ephemeral
from kubecore._planner.init_containers import check_running_sidecars, init_progress
from kubecore._planner.pod_info import PodInfo, pod_info, sandbox_changed
from kubecore._planner.restart_rules import policy_of
from kubecore._planner.steady import steady_plan
from kubecore._planner.terminal import deadline_passed, should_restart, terminal_state

_UNKNOWN = RuntimeState.UNKNOWN
_READY = SandboxState.READY

DEADLINE_EXCEEDED = EventReason.DEADLINE_EXCEEDED.value  # a pod status reason too
DEADLINE_EXCEEDED_MESSAGE = "Pod was active on the node longer than the specified deadline"
POD_INITIALIZING = "PodInitializing"


def compute_pod_actions(
    pod: Pod, observed: ObservedPod, history: PodHistory, now: float
) -> PodActions:
    """What to do now to bring one pod's containers to its spec (pure; deterministic)."""
    info = pod_info(pod)
    if deadline_passed(pod, history, now):
        view = View(info, observed)
        terminal, failed = terminal_state(pod, view)
        if terminal:  # it ended before its deadline: as it ended
            return _plan_terminal(observed, view, failed)
        return _plan_deadline_exceeded(observed, view)
    steady = steady_plan(info, observed, history)
    if steady is not None:
        return steady
    view = View(info, observed)
    sandbox = view.sandbox
    if sandbox is not None and not sandbox_changed(sandbox, info):
        return _plan_in_sandbox(pod, observed, history, now, info, view, sandbox)
    return _plan_new_sandbox(pod, observed, history, now, info, view)


def _removable_sandboxes(observed: ObservedPod, view: View) -> tuple[str, ...]:
    """Sandboxes other than the pod's that nothing runs in and that hold no container's newest
    instance (removing a sandbox removes its containers: the restart policy needs those)."""
    current = view.sandbox
    sandboxes = observed.sandboxes
    if not sandboxes or (len(sandboxes) == 1 and sandboxes[0] is current):
        return ()
    keep: set[str] = set()
    for group in (view.app, view.init, view.ephemeral):
        for records in group.values():
            keep.add(records[0].c.sandbox_id)
    for r in view.records():
        if r.live:
            keep.add(r.c.sandbox_id)
    return tuple(sorted(s.id for s in sandboxes if s is not current and s.id not in keep))


def _anything_runs(observed: ObservedPod, view: View) -> bool:
    return view.any_live or any(s.state is _READY for s in observed.sandboxes)


def _plan_terminal(observed: ObservedPod, view: View, failed: bool) -> PodActions:
    kill = _anything_runs(observed, view)
    return PodActions(
        kill_pod=kill,
        kill_pod_reason=KillReason.POD_TERMINAL if kill else None,
        sandboxes_to_remove=_removable_sandboxes(observed, view),
        pod_failed=failed,
        terminal=True,
    )


def _plan_deadline_exceeded(observed: ObservedPod, view: View) -> PodActions:
    """Past its active deadline the pod fails, whatever its containers did: kill it all."""
    kill = _anything_runs(observed, view)
    return PodActions(
        kill_pod=kill,
        kill_pod_reason=KillReason.DEADLINE_EXCEEDED if kill else None,
        sandboxes_to_remove=_removable_sandboxes(observed, view),
        pod_failed=True,
        terminal=True,
        failure_reason=DEADLINE_EXCEEDED,
        failure_message=DEADLINE_EXCEEDED_MESSAGE,
    )


def _plan_new_sandbox(
    pod: Pod,
    observed: ObservedPod,
    history: PodHistory,
    now: float,
    info: PodInfo,
    view: View,
) -> PodActions:
    """No usable sandbox: kill whatever of the pod runs, create a sandbox, start from scratch."""
    spec = pod.spec
    terminal, failed = terminal_state(pod, view)
    if terminal:
        return _plan_terminal(observed, view, failed)
    if view.sandbox is not None:
        reason = KillReason.SANDBOX_CHANGED
    elif observed.sandboxes:
        reason = KillReason.SANDBOX_DEAD
    else:
        reason = KillReason.SANDBOX_MISSING
    kill = _anything_runs(observed, view)
    removable = _removable_sandboxes(observed, view)
    if spec.restart_policy == "Never" and (view.app or view.init):
        # As the kubelet: a Never pod whose containers already ran is not started over.
        return PodActions(
            kill_pod=kill,
            kill_pod_reason=reason if kill else None,
            sandboxes_to_remove=removable,
        )
    plan = Draft(pod, info, history, now, view)
    next_init: ContainerToStart | None = None
    if spec.init_containers:
        first = spec.init_containers[0]
        records = view.init.get(first.name)
        waiting = plan.blocked(first, crash=bool(records))
        if waiting is None:
            next_init = to_start(
                0, records, set_aside(view, first.name), history.interrupted_starts
            )
        else:
            plan.waiting.append(waiting)
        plan.waiting.extend(Waiting(c.name, POD_INITIALIZING) for c in spec.containers)
    else:
        policy = spec.restart_policy
        for index, container in enumerate(spec.containers):
            records = view.app.get(container.name)
            if records:
                newest = records[0]
                if not newest.live and not should_restart(newest, container, policy):
                    continue
            plan.start(index, records, crash=bool(records))
    return PodActions(
        kill_pod=kill,
        kill_pod_reason=reason if kill else None,
        create_sandbox=True,
        attempt=max((s.attempt for s in observed.sandboxes), default=-1) + 1,
        next_init_container=next_init,
        containers_to_start=tuple(plan.starts),
        sandboxes_to_remove=removable,
        waiting=tuple(plan.waiting),
    )


def _plan_in_sandbox(
    pod: Pod,
    observed: ObservedPod,
    history: PodHistory,
    now: float,
    info: PodInfo,
    view: View,
    sandbox: RuntimeSandbox,
) -> PodActions:
    sandbox_id = sandbox.id
    plan = Draft(pod, info, history, now, view)
    running, running_init = _live_where_wanted(plan, view, sandbox_id)

    terminal, failed = terminal_state(pod, view)
    if terminal:
        return _plan_terminal(observed, view, failed)

    ephemeral = plan_ephemeral(plan, sandbox_id) if pod.spec.ephemeral_containers else []
    check_running_sidecars(plan, running_init)
    init_done, next_init = init_progress(pod, view, sandbox_id, plan)
    if init_done is None:
        # An init container failed and is not to be restarted: the pod fails.
        return PodActions(
            kill_pod=True,
            kill_pod_reason=KillReason.POD_TERMINAL,
            pod_failed=True,
            terminal=True,
            sandboxes_to_remove=_removable_sandboxes(observed, view),
        )
    if not init_done:
        for container in pod.spec.containers:
            plan.waiting.append(Waiting(container.name, POD_INITIALIZING))
    else:
        _plan_app_containers(plan, running)

    if (
        not plan.kills
        and not plan.starts
        and not plan.resizes
        and not plan.sidecar_starts
        and not ephemeral
        and next_init is None
        and not plan.waiting
    ):
        removable = _removable_sandboxes(observed, view)
        if not removable:
            return PodActions(sandbox_id=sandbox_id)
    else:
        removable = _removable_sandboxes(observed, view)
    return PodActions(
        sandbox_id=sandbox_id,
        next_init_container=next_init,
        sidecars_to_start=tuple(plan.sidecar_starts),
        containers_to_start=tuple(plan.starts),
        ephemeral_containers_to_start=tuple(ephemeral),
        containers_to_kill=plan.sorted_kills(),
        containers_to_resize=tuple(plan.resizes),
        sandboxes_to_remove=removable,
        waiting=tuple(plan.waiting),
    )


def _live_where_wanted(
    plan: Draft, view: View, sandbox_id: str
) -> tuple[dict[str, Record], dict[str, Record]]:
    """The live app and init containers, by name, that run where they should (the newest of
    each name in the pod's sandbox); the others are killed: those outside the sandbox, older
    duplicates, init containers in an unknown state, and strays."""
    running: dict[str, Record] = {}
    running_init: dict[str, Record] = {}
    for group, seen in ((view.app, running), (view.init, running_init)):
        for name, group_records in group.items():
            for rec in group_records:  # newest first
                if not rec.live:
                    continue
                if rec.c.sandbox_id != sandbox_id:
                    plan.kill(rec, KillReason.SANDBOX_CHANGED, "runs outside the pod's sandbox")
                elif name in seen:
                    plan.kill(rec, KillReason.DUPLICATE)
                elif group is view.app:
                    running[name] = rec
                elif rec.c.state is _UNKNOWN:
                    plan.kill(rec, KillReason.UNKNOWN_STATE)
                else:
                    running_init[name] = rec
    for stray in view.stray:
        if stray.live:
            plan.kill(stray, KillReason.NOT_IN_SPEC)
    return running, running_init


def _plan_app_containers(plan: Draft, running: dict[str, Record]) -> None:
    """Once init is done: restart the app containers that must (spec changed, state unknown,
    liveness or startup probe failed, resources changed), kill those whose postStart hook
    failed, and start those not running that their restart policy starts again."""
    policy = plan.pod.spec.restart_policy
    view = plan.view
    for index, container in enumerate(plan.pod.spec.containers):
        name = container.name
        records = view.app.get(name)
        r = running.get(name)
        if r is not None:
            _plan_running_app(plan, index, container, r, records)
            continue
        if not records:
            plan.start(index, records, crash=False)
            continue
        newest = records[0]
        if newest.live:
            # It runs elsewhere and is being killed: treat it as if it had just died.
            if policy_of(container, policy) != "Never":
                plan.start(index, records, crash=True)
        elif should_restart(newest, container, policy):
            plan.start(index, records, crash=True)


def _plan_running_app(
    plan: Draft, index: int, container: Container, r: Record, records: list[Record] | None
) -> None:
    """An app container running in the pod's sandbox: kept, resized, or killed (and started
    again unless its policy is Never)."""
    history = plan.history
    probes = history.probes
    post_start_failed = history.post_start_failed
    if r.hash and r.hash != plan.info.app_hashes[index]:
        plan.kill(r, KillReason.SPEC_CHANGED, "will be restarted")
        plan.start(index, records, crash=False)
    elif r.c.state is _UNKNOWN:
        plan.kill(r, KillReason.UNKNOWN_STATE, "will be restarted")
        plan.start(index, records, crash=True)
    elif probes and (state := probes.get(r.c.id)) is not None and state.liveness_failed:
        grace = probe_grace(container, state)
        plan.kill(r, probe_kill_reason(state), state.message, grace)
        # Still running: no exit code for its rules, its policy decides.
        if policy_of(container, plan.pod.spec.restart_policy) != "Never":
            plan.start(index, records, crash=True)
    elif post_start_failed and r.c.id in post_start_failed:
        plan.kill(r, KillReason.POST_START_FAILED)
    elif plan.resize(container, r):
        plan.start(index, records, crash=False)
