"""Init containers and sidecars in the pod's sandbox: how far init went (the frontier), the next
init container to start, and the sidecars kept running (restarted when they must be)."""

from __future__ import annotations

from kubecore._contract.observed import Record, View
from kubecore._contract.values import RuntimeState
from kubecore._model.spec_hash import container_hash
from kubecore._model.v1 import Container, Pod
from kubecore._planner.actions import ContainerToStart, KillReason
from kubecore._planner.draft import Draft, probe_grace, probe_kill_reason, set_aside, to_start
from kubecore._planner.terminal import should_restart

_UNKNOWN = RuntimeState.UNKNOWN


def check_running_sidecars(plan: Draft, running_init: dict[str, Record]) -> None:
    """Kill the running sidecars that must restart: spec changed, liveness or startup probe
    failed, postStart hook failed. (``init_progress`` starts them again.)"""
    history = plan.history
    inits = plan.pod.spec.init_containers
    for name, r in running_init.items():
        index = plan.info.init_index[name]
        container = inits[index]
        if not container.is_sidecar:
            continue
        if r.hash and r.hash != container_hash(container):
            plan.kill(r, KillReason.SPEC_CHANGED, "will be restarted")
        elif (state := history.probes.get(r.c.id)) is not None and state.liveness_failed:
            plan.kill(r, probe_kill_reason(state), state.message, probe_grace(container, state))
        elif r.c.id in history.post_start_failed:
            plan.kill(r, KillReason.POST_START_FAILED)
        else:
            plan.resize(container, r)


def init_progress(
    pod: Pod, view: View, sandbox_id: str, plan: Draft
) -> tuple[bool | None, ContainerToStart | None]:
    """(done, the init container to start now), judged from what ran in the current sandbox;
    done is None when an init container failed and is not to be restarted (restartPolicy Never,
    the pod's or its own, and no rule restarts it).

    As the kubelet, the init container furthest along that ran here is the frontier: the ones
    before it are done (their records may be gone), except that sidecars before it are kept
    running (started again when they are not). A sidecar at the frontier lets the next one start
    once it runs and, if it has a startup probe, has passed it. Once app containers ran here,
    init is done and only the sidecars are kept running.
    """
    inits = pod.spec.init_containers
    if not inits:
        return True, None

    def in_sandbox(name: str) -> list[Record]:
        return [r for r in view.init.get(name, ()) if r.c.sandbox_id == sandbox_id]

    initialized = any(
        r.c.sandbox_id == sandbox_id for records in view.app.values() for r in records
    )
    frontier = len(inits)
    if not initialized:
        frontier = next((i for i in range(len(inits) - 1, -1, -1) if in_sandbox(inits[i].name)), -1)
    for index in range(min(frontier, len(inits))):
        if inits[index].is_sidecar:
            _keep_sidecar_running(plan, view, index, in_sandbox(inits[index].name))
    if initialized:
        return True, None
    if frontier < 0:
        return _start_init(plan, view, 0, crash=False)

    container = inits[frontier]
    newest = in_sandbox(container.name)[0]
    if newest.c.state is _UNKNOWN:  # killed above
        return _start_init(plan, view, frontier, crash=True)
    if newest.never_started:
        return _start_init(plan, view, frontier, crash=False)
    if container.is_sidecar:
        if not newest.live or newest.c.id in plan.kills:
            return _start_init(plan, view, frontier, crash=True)
        if not _sidecar_started(plan, container, newest):
            return False, None
    elif newest.live:
        return False, None
    elif newest.failed:
        if not should_restart(newest, container, pod.spec.restart_policy):
            return None, None
        return _start_init(plan, view, frontier, crash=True)
    if frontier == len(inits) - 1:
        return True, None
    return _start_init(plan, view, frontier + 1, crash=False)


def _sidecar_started(plan: Draft, container: Container, running: Record) -> bool:
    """A running sidecar counts as started once its startup probe (if any) passed."""
    if container.startup_probe is None:
        return True
    state = plan.history.probes.get(running.c.id)
    return state is not None and state.started


def _keep_sidecar_running(plan: Draft, view: View, index: int, here: list[Record]) -> None:
    """Start a sidecar before the init frontier again unless it runs here (and is not being
    killed): whatever the pod's restart policy, with the crash back-off."""
    container = plan.pod.spec.init_containers[index]
    newest = here[0] if here else None
    if newest is not None and newest.live and newest.c.id not in plan.kills:
        return
    crash = newest is not None and not newest.never_started
    plan.restart_sidecar(index, view.init.get(container.name), crash=crash)


def _start_init(
    plan: Draft, view: View, index: int, *, crash: bool
) -> tuple[bool, ContainerToStart | None]:
    container = plan.pod.spec.init_containers[index]
    waiting = plan.blocked(container, crash=crash)
    if waiting is not None:
        plan.waiting.append(waiting)
        return False, None
    records, others = view.init.get(container.name), set_aside(view, container.name)
    return False, to_start(index, records, others, plan.history.interrupted_starts)
