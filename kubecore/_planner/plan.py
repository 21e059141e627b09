"""The pure planner: one pod's spec + what the runtime shows + its history -> ``PodActions``.

The kubelet's ``computePodActions`` without its hidden inputs: probe results, backoff state and
``now`` are arguments. No I/O, no clock, no threads.

Observed objects are read as ``_observed`` defines (name, restart count, "newest"); the pod's
sandbox is the newest READY one and a container belongs to it by ``sandbox_id``; a container's spec
hash is ``HASH_ANNOTATION`` (absent: do not compare).

Decisions about a container name are taken from its newest instance in any sandbox (restart
policy), except init progress, which only counts what ran in the current sandbox: a new sandbox
runs the init containers again, as the kubelet does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from operator import is_

from kubecore._contract.labels import INIT_CONTAINER_ANNOTATION, RESOURCES_ANNOTATION, recorded_hash
from kubecore._contract.observed import Record, SpecIndex, View, container_name
from kubecore._contract.values import RuntimeContainer, RuntimeSandbox, RuntimeState, SandboxState
from kubecore._kuberuntime.translate import (
    SANDBOX_HASH_ANNOTATION,
    container_hash,
    resources_record,
    sandbox_hash,
)
from kubecore._model.v1 import Container, Pod
from kubecore._observability.events import EventReason
from kubecore._planner.actions import (
    ContainerToKill,
    ContainerToResize,
    ContainerToStart,
    KillReason,
    ObservedPod,
    PodActions,
    PodHistory,
    ProbeState,
    Waiting,
)
from kubecore._planner.backoff import format_delay, in_backoff
from kubecore._planner.restart_rules import (
    container_should_restart,
    is_container_restartable,
    pod_finished,
    policy_of,
)

_RUNNING = RuntimeState.RUNNING
_UNKNOWN = RuntimeState.UNKNOWN
_READY = SandboxState.READY
_NOOP = PodActions()

DEADLINE_EXCEEDED = EventReason.DEADLINE_EXCEEDED.value  # a pod status reason too
DEADLINE_EXCEEDED_MESSAGE = "Pod was active on the node longer than the specified deadline"
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
IMAGE_PULL_BACK_OFF = "ImagePullBackOff"
POD_INITIALIZING = "PodInitializing"


# --- the spec side, computed once per Pod object ------------------------------------------------


class PodInfo(SpecIndex):
    """Per-pod facts the planner needs on every sync, computed once per ``Pod`` object.

    Memoised on the pod itself (``Pod.derived``), so the steady state hashes nothing: pod sources
    hand the agent the same ``Pod`` object until the pod changes.
    """

    __slots__ = (
        "all_apps",
        "all_sidecars",
        "app_hashes",
        "app_resources",
        "desc",
        "noop",
        "own_policies",
        "sandbox_hash",
        "sidecar_hashes",
        "steady",
    )

    def __init__(self, pod: Pod) -> None:
        spec = pod.spec
        runs_once = [c for c in spec.init_containers if not c.is_sidecar]
        runs_once += spec.containers
        super().__init__(
            {c.name: i for i, c in enumerate(spec.containers)},
            {c.name: i for i, c in enumerate(spec.init_containers)},
            frozenset(
                c.name for c in runs_once if not is_container_restartable(c, spec.restart_policy)
            ),
        )
        self.own_policies = any(c.restart_policy is not None for c in runs_once)
        """Some app or init container (not a sidecar) has a restart policy of its own."""
        self.app_hashes = tuple(container_hash(c) for c in spec.containers)
        self.app_resources = tuple(
            resources_record(c) if c.resize_policy else None for c in spec.containers
        )
        """The resources record of each app container with a resizePolicy (None without)."""
        self.sandbox_hash = sandbox_hash(pod)
        meta = pod.metadata
        self.desc = f"{meta.name}_{meta.namespace}({meta.uid})"
        self.all_apps = (1 << len(spec.containers)) - 1
        self.sidecar_hashes = {
            c.name: (1 << i, container_hash(c))
            for i, c in enumerate(spec.init_containers)
            if c.is_sidecar and not c.resize_policy  # a resizable one is planned in full
        }
        self.all_sidecars = sum(1 << i for i, c in enumerate(spec.init_containers) if c.is_sidecar)
        self.noop = _NOOP
        self.steady: ObservedPod | None = None
        """The last observation ``_steady`` found steady (its objects are immutable)."""

    def noop_in(self, sandbox_id: str) -> PodActions:
        """The (shared) "nothing to do" value for this pod in that sandbox."""
        noop = self.noop
        if noop.sandbox_id != sandbox_id:
            noop = self.noop = PodActions(sandbox_id=sandbox_id)
        return noop


def pod_info(pod: Pod) -> PodInfo:
    derived = pod.derived
    info: PodInfo | None = derived.get("planner")
    if info is None:
        info = derived["planner"] = PodInfo(pod)
    return info


def should_restart(record: Record, container: Container, pod_policy: str) -> bool:
    """Whether a dead container is started again: an interrupted start always is; one that ran
    as its restart rules and policy (else the pod's policy) say for its exit code."""
    if record.never_started:
        return True
    return container_should_restart(container, pod_policy, record.c.exit_code)


def terminal_state(pod: Pod, view: View) -> tuple[bool, bool]:
    """(terminal, failed): the pod will never start anything again (Succeeded or Failed).

    Never under ``Always`` (unless a container has a restart policy of its own). A failed init
    container that is not to be restarted (``Never``, the pod's or its own) fails the pod
    (unless app containers ran: init was done then). Otherwise the pod is terminal when every
    app container has run, none runs, and none is to be restarted.
    """
    spec = pod.spec
    policy = spec.restart_policy
    if policy == "Always" and not pod_info(pod).own_policies:
        return False, False
    app_started = any(not r.never_started for records in view.app.values() for r in records)
    if not app_started:  # app containers only ever start after init
        for c in spec.init_containers:
            if c.is_sidecar:  # restarted whatever the pod's policy: never fails the pod
                continue
            records = view.init.get(c.name)
            if records:
                newest = records[0]
                if (
                    not newest.live
                    and not newest.never_started
                    and newest.failed
                    and not should_restart(newest, c, policy)
                ):
                    return True, True
    return pod_finished(policy, _last_runs(spec.containers, view))


def _last_runs(
    containers: Iterable[Container], view: View
) -> Iterator[tuple[Container, bool, int | None]]:
    """Each app container's last run for ``pod_finished``: ended when none of its instances is
    live and the newest ran (an interrupted start is started again)."""
    for c in containers:
        records = view.app.get(c.name)
        if not records:
            yield c, False, None
            continue
        newest = records[0]
        ended = not newest.never_started and not any(r.live for r in records)
        yield c, ended, newest.c.exit_code


IN_PLACE = "in place"
RESTART = "restart"


def _applied_resources(c: RuntimeContainer, history: PodHistory) -> str | None:
    """The resources record a running container has now (None: not known)."""
    resized = history.resized.get(c.id) if history.resized else None
    return resized or c.annotations.get(RESOURCES_ANNOTATION)


def changed_resources(applied: str, wanted: str) -> set[str]:
    """The resource names whose request or limit differs between two resources records."""
    try:
        before, after = json.loads(applied), json.loads(wanted)
    except ValueError:
        return {"unreadable"}
    names: set[str] = set()
    for kind in ("requests", "limits"):
        old, new = before.get(kind) or {}, after.get(kind) or {}
        names.update(n for n in old.keys() | new.keys() if old.get(n) != new.get(n))
    return names


def resize_of(container: Container, c: RuntimeContainer, history: PodHistory) -> str | None:
    """How a running container takes a change of its resources: ``IN_PLACE`` where every
    changed resource's policy is NotRequired and the runtime can, else ``RESTART``; None when
    nothing changed (or the container has no resizePolicy)."""
    if not container.resize_policy:
        return None
    applied = _applied_resources(c, history)
    wanted = resources_record(container)
    if applied is None or applied == wanted:
        return None
    policies = {p.resource_name: p.restart_policy for p in container.resize_policy}
    changed = changed_resources(applied, wanted)
    in_place = history.resize_in_place and all(
        name in ("cpu", "memory") and policies.get(name, "NotRequired") == "NotRequired"
        for name in changed
    )
    return IN_PLACE if in_place else RESTART


def _probe_kill_reason(state: ProbeState) -> KillReason:
    return KillReason.STARTUP_FAILED if state.startup_failed else KillReason.LIVENESS_FAILED


def _probe_grace(container: Container, state: ProbeState) -> float | None:
    """The failed probe's own grace period, if it sets one (else the pod's applies)."""
    probe = container.startup_probe if state.startup_failed else container.liveness_probe
    if probe is None or probe.termination_grace_period_seconds is None:
        return None
    return float(probe.termination_grace_period_seconds)


def _to_start(
    index: int, records: list[Record] | None, others: list[Record] | None = None
) -> ContainerToStart:
    """Start the container at ``index`` after its previous instances (newest first), with a
    restart count above theirs and above ``others`` of its name (instances ``View`` set aside)."""
    floor = max((r.restart_count for r in others), default=-1) if others else -1
    if not records:
        return ContainerToStart(index, floor + 1)
    newest = records[0]
    if newest.never_started:  # takes its place: the count it had, above every other instance
        below = max((r.restart_count for r in records[1:]), default=-1)
        count = max(newest.restart_count, max(below, floor) + 1)
        return ContainerToStart(index, count, after_crash=True, replaces=newest.c.id)
    return ContainerToStart(
        index,
        restart_count=max(max(r.restart_count for r in records), floor) + 1,
        after_crash=records[0].c.state is not _RUNNING,
    )


def _set_aside(view: View, name: str) -> list[Record] | None:
    """The instances of ``name`` that ``View`` put among the strays (None: there are none)."""
    if not view.stray:
        return None
    return [r for r in view.stray if r.name == name] or None


class _Plan:
    """The mutable scratchpad of one planning run."""

    __slots__ = (
        "history",
        "info",
        "kills",
        "now",
        "pod",
        "resizes",
        "sidecar_starts",
        "starts",
        "view",
        "waiting",
    )

    def __init__(
        self, pod: Pod, info: PodInfo, history: PodHistory, now: float, view: View
    ) -> None:
        self.pod = pod
        self.view = view
        self.info = info
        self.history = history
        self.now = now
        self.kills: dict[str, ContainerToKill] = {}
        self.starts: list[ContainerToStart] = []
        self.sidecar_starts: list[ContainerToStart] = []
        self.resizes: list[ContainerToResize] = []
        self.waiting: list[Waiting] = []

    def kill(
        self, record: Record, reason: KillReason, message: str = "", grace: float | None = None
    ) -> None:
        c = record.c
        if c.id not in self.kills:
            self.kills[c.id] = ContainerToKill(c.id, record.name, reason, message, grace)

    def blocked(self, container: Container, *, crash: bool) -> Waiting | None:
        """The backoff that forbids starting ``container`` now, as a Waiting reason."""
        history, name = self.history, container.name
        if crash and history.crash_backoff:
            entry = history.crash_backoff.get(name)
            if entry is not None and in_backoff(entry, self.now):
                return Waiting(
                    name,
                    CRASH_LOOP_BACK_OFF,
                    f"back-off {format_delay(entry.delay)} restarting failed "
                    f"container={name} pod={self.info.desc}",
                )
        if history.image_backoff:
            entry = history.image_backoff.get(name)
            if entry is not None and in_backoff(entry, self.now):
                return Waiting(
                    name, IMAGE_PULL_BACK_OFF, f'Back-off pulling image "{container.image}"'
                )
        return None

    def start(self, index: int, records: list[Record] | None, *, crash: bool) -> None:
        container = self.pod.spec.containers[index]
        waiting = self.blocked(container, crash=crash)
        if waiting is not None:
            self.waiting.append(waiting)
            return
        self.starts.append(_to_start(index, records, _set_aside(self.view, container.name)))

    def resize(self, container: Container, record: Record) -> bool:
        """Resize a running container whose resources changed; True if it is killed for it
        (its restart is the caller's)."""
        how = resize_of(container, record.c, self.history)
        if how == IN_PLACE:
            self.resizes.append(ContainerToResize(record.c.id, container.name))
        elif how == RESTART:
            self.kill(record, KillReason.RESOURCES_CHANGED, "will be restarted")
            return True
        return False

    def restart_sidecar(self, index: int, records: list[Record] | None, *, crash: bool) -> None:
        container = self.pod.spec.init_containers[index]
        waiting = self.blocked(container, crash=crash)
        if waiting is not None:
            self.waiting.append(waiting)
            return
        self.sidecar_starts.append(_to_start(index, records, _set_aside(self.view, container.name)))

    def sorted_kills(self) -> tuple[ContainerToKill, ...]:
        return tuple(sorted(self.kills.values(), key=lambda k: (k.name, k.container_id)))


def _removable_sandboxes(observed: ObservedPod, view: View) -> tuple[str, ...]:
    """Sandboxes other than the pod's that nothing runs in and that hold no container's newest
    instance (removing a sandbox removes its containers: the restart policy needs those)."""
    current = view.sandbox
    sandboxes = observed.sandboxes
    if not sandboxes or (len(sandboxes) == 1 and sandboxes[0] is current):
        return ()
    keep: set[str] = set()
    for group in (view.app, view.init):
        for records in group.values():
            keep.add(records[0].c.sandbox_id)
    for r in view.records():
        if r.live:
            keep.add(r.c.sandbox_id)
    return tuple(sorted(s.id for s in sandboxes if s is not current and s.id not in keep))


def _anything_runs(observed: ObservedPod, view: View) -> bool:
    return view.any_live or any(s.state is _READY for s in observed.sandboxes)


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
    steady = _steady(info, observed, history)
    if steady is not None:
        return steady
    view = View(info, observed)
    sandbox = view.sandbox
    if sandbox is not None and not _sandbox_changed(sandbox, info):
        return _plan_in_sandbox(pod, observed, history, now, info, view, sandbox)
    return _plan_new_sandbox(pod, observed, history, now, info, view)


def _steady(info: PodInfo, observed: ObservedPod, history: PodHistory) -> PodActions | None:
    """The common case, checked without building a ``View``: one ready sandbox, every app
    container running in it once with its spec hash, no probe or postStart failure, nothing
    unknown, and every sidecar running in it likewise. Returns the no-op plan, or None to plan in
    full. Other dead containers do not matter here: with every app container running, the full
    planner ignores them too."""
    sandboxes = observed.sandboxes
    if len(sandboxes) != 1:
        return None
    probes, post_start_failed = history.probes, history.post_start_failed
    last = info.steady
    if last is not None and not probes and not post_start_failed and _same(last, observed):
        # The very objects found steady before: the answer depends on nothing else.
        return info.noop_in(sandboxes[0].id)
    sandbox = sandboxes[0]
    if sandbox.state is not _READY or _sandbox_changed(sandbox, info):
        return None
    sandbox_id = sandbox.id
    app_index, hashes = info.app_index, info.app_hashes
    sidecar_hashes = info.sidecar_hashes
    app_resources = info.app_resources
    seen = sidecars_seen = 0
    for c in observed.containers:
        state = c.state
        if state is not _RUNNING:
            if state is _UNKNOWN:
                return None
            continue
        if c.sandbox_id != sandbox_id:
            return None
        recorded = recorded_hash(c)
        if c.annotations.get(INIT_CONTAINER_ANNOTATION) == "true":
            sidecar = sidecar_hashes.get(container_name(c)) if sidecar_hashes else None
            if sidecar is None:
                return None
            bit, expected = sidecar
            if (recorded and recorded != expected) or sidecars_seen & bit:
                return None
            sidecars_seen |= bit
        else:
            index = app_index.get(container_name(c))
            if index is None:
                return None
            if recorded and recorded != hashes[index]:
                return None
            wanted = app_resources[index]
            if wanted is not None and _applied_resources(c, history) not in (None, wanted):
                return None
            bit = 1 << index
            if seen & bit:
                return None
            seen |= bit
        if probes and (probe := probes.get(c.id)) is not None and probe.liveness_failed:
            return None
        if post_start_failed and c.id in post_start_failed:
            return None
    if seen != info.all_apps or sidecars_seen != info.all_sidecars:
        return None
    info.steady = observed
    return info.noop_in(sandbox_id)


def _same(last: ObservedPod, observed: ObservedPod) -> bool:
    """The same objects (identity, not equality), in the same order."""
    if last is observed:
        return True
    c1, c2 = last.containers, observed.containers
    if len(c1) != len(c2) or not all(map(is_, c1, c2)):
        return False
    s1, s2 = last.sandboxes, observed.sandboxes
    return len(s1) == len(s2) and all(map(is_, s1, s2))


def _sandbox_changed(sandbox: RuntimeSandbox, info: PodInfo) -> bool:
    recorded = sandbox.annotations.get(SANDBOX_HASH_ANNOTATION)
    return bool(recorded) and recorded != info.sandbox_hash


def _plan_terminal(observed: ObservedPod, view: View, failed: bool) -> PodActions:
    kill = _anything_runs(observed, view)
    return PodActions(
        kill_pod=kill,
        kill_pod_reason=KillReason.POD_TERMINAL if kill else None,
        sandboxes_to_remove=_removable_sandboxes(observed, view),
        pod_failed=failed,
        terminal=True,
    )


def deadline_at(pod: Pod, history: PodHistory) -> float | None:
    """When the pod's ``activeDeadlineSeconds`` runs out (None: no deadline, or not active)."""
    seconds = pod.spec.active_deadline_seconds
    if seconds is None or history.active_since is None:
        return None
    return history.active_since + seconds


def deadline_passed(pod: Pod, history: PodHistory, now: float) -> bool:
    at = deadline_at(pod, history)
    return at is not None and now >= at


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
    plan = _Plan(pod, info, history, now, view)
    next_init: ContainerToStart | None = None
    if spec.init_containers:
        first = spec.init_containers[0]
        records = view.init.get(first.name)
        waiting = plan.blocked(first, crash=bool(records))
        if waiting is None:
            next_init = _to_start(0, records, _set_aside(view, first.name))
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
    spec = pod.spec
    policy = spec.restart_policy
    sandbox_id = sandbox.id
    plan = _Plan(pod, info, history, now, view)

    # Live containers that are not (or no longer) wanted where they are.
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

    terminal, failed = terminal_state(pod, view)
    if terminal:
        return _plan_terminal(observed, view, failed)

    _check_running_sidecars(plan, running_init)
    init_done, next_init = _init_progress(pod, view, sandbox_id, plan)
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
        for container in spec.containers:
            plan.waiting.append(Waiting(container.name, POD_INITIALIZING))
    else:
        probes = history.probes
        post_start_failed = history.post_start_failed
        hashes = info.app_hashes
        for index, container in enumerate(spec.containers):
            name = container.name
            records = view.app.get(name)
            r = running.get(name)
            if r is not None:
                if r.hash and r.hash != hashes[index]:
                    plan.kill(r, KillReason.SPEC_CHANGED, "will be restarted")
                    plan.start(index, records, crash=False)
                elif r.c.state is _UNKNOWN:
                    plan.kill(r, KillReason.UNKNOWN_STATE, "will be restarted")
                    plan.start(index, records, crash=True)
                elif probes and (state := probes.get(r.c.id)) is not None and state.liveness_failed:
                    grace = _probe_grace(container, state)
                    plan.kill(r, _probe_kill_reason(state), state.message, grace)
                    # Still running: no exit code for its rules, its policy decides.
                    if policy_of(container, policy) != "Never":
                        plan.start(index, records, crash=True)
                elif post_start_failed and r.c.id in post_start_failed:
                    plan.kill(r, KillReason.POST_START_FAILED)
                elif plan.resize(container, r):
                    plan.start(index, records, crash=False)
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

    if (
        not plan.kills
        and not plan.starts
        and not plan.resizes
        and not plan.sidecar_starts
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
        containers_to_kill=plan.sorted_kills(),
        containers_to_resize=tuple(plan.resizes),
        sandboxes_to_remove=removable,
        waiting=tuple(plan.waiting),
    )


def _check_running_sidecars(plan: _Plan, running_init: dict[str, Record]) -> None:
    """Kill the running sidecars that must restart: spec changed, liveness or startup probe
    failed, postStart hook failed. (``_init_progress`` starts them again.)"""
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
            plan.kill(r, _probe_kill_reason(state), state.message, _probe_grace(container, state))
        elif r.c.id in history.post_start_failed:
            plan.kill(r, KillReason.POST_START_FAILED)
        else:
            plan.resize(container, r)


def _init_progress(
    pod: Pod, view: View, sandbox_id: str, plan: _Plan
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


def _sidecar_started(plan: _Plan, container: Container, running: Record) -> bool:
    """A running sidecar counts as started once its startup probe (if any) passed."""
    if container.startup_probe is None:
        return True
    state = plan.history.probes.get(running.c.id)
    return state is not None and state.started


def _keep_sidecar_running(plan: _Plan, view: View, index: int, here: list[Record]) -> None:
    """Start a sidecar before the init frontier again unless it runs here (and is not being
    killed): whatever the pod's restart policy, with the crash back-off."""
    container = plan.pod.spec.init_containers[index]
    newest = here[0] if here else None
    if newest is not None and newest.live and newest.c.id not in plan.kills:
        return
    crash = newest is not None and not newest.never_started
    plan.restart_sidecar(index, view.init.get(container.name), crash=crash)


def _start_init(
    plan: _Plan, view: View, index: int, *, crash: bool
) -> tuple[bool, ContainerToStart | None]:
    container = plan.pod.spec.init_containers[index]
    waiting = plan.blocked(container, crash=crash)
    if waiting is not None:
        plan.waiting.append(waiting)
        return False, None
    return False, _to_start(index, view.init.get(container.name), _set_aside(view, container.name))
