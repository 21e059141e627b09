"""What a sync would do to the node now, pod by pod, without doing any of it (``kubecore plan``).

One snapshot of the runtime (one list call), the desired pods through admission (``preview``:
nothing it remembers changes), and for each admitted pod the planner the sync runs
(``compute_pod_actions``, with the history its worker would hand it); each pod on the node that
is no longer desired is removed as the pass removes it (``removal_due``). The ``PodActions``
are then told as steps with their reasons, read from the planner's own decision data (kill
reasons and messages, waiting entries, back-off timers): nothing here decides anything again.

Nothing is executed: no runtime call that changes state, no file written, no event recorded.
The only other engine calls are image look-ups (``image_status``) for the containers a sync
would start, to say whether it pulls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from kubecore._agent.admission.admit import Admission
from kubecore._agent.config import KubeletConfig
from kubecore._agent.pod_workers.room import NO_HISTORY, PodState, has_resize_policy, history_of
from kubecore._agent.snapshot import group, observed_of
from kubecore._agent.sync_pass import removal_due
from kubecore._agent.termination import Termination
from kubecore._agent.wiring import admission_of
from kubecore._contract.labels import HASH_ANNOTATION, owned_by, pod_identity
from kubecore._contract.observed import ObservedPod, PodEntry
from kubecore._contract.protocols import ContainerRuntime, Puller
from kubecore._contract.values import RuntimeContainer, RuntimeSnapshot, RuntimeState
from kubecore._housekeeping.eviction import EVICTED
from kubecore._kuberuntime.containers import resource_updater
from kubecore._kuberuntime.pod_record import PodRecord
from kubecore._kuberuntime.start_journal import interrupted_starts
from kubecore._manifest.identity import SOURCE_ANNOTATION
from kubecore._model.rejection import Rejection
from kubecore._model.v1 import Container, Pod
from kubecore._planner.actions import (
    ContainerToKill,
    ContainerToStart,
    KillReason,
    PodActions,
    PodHistory,
)
from kubecore._planner.plan import compute_pod_actions
from kubecore._planner.restart_rules import policy_of
from kubecore._util.timefmt import rfc3339

if TYPE_CHECKING:
    from kubecore._agent.wiring import Rooms

NOTHING = "nothing"
WAIT = "wait"
KILL = "kill"
"""The step names a plan uses (``Step.action``); every other one changes the node."""
STEP_ACTIONS = (
    "kill-pod",
    "remove-pod",
    "create-sandbox",
    "pull",
    "start",
    "restart",
    KILL,
    "resize",
    "remove-sandbox",
    WAIT,
    NOTHING,
)


REMOVAL_SUMMARY = "kill and remove (no longer desired)"
"""What the sync's report says of a pod it removes (``PodSyncer.terminate``)."""


@attrs.frozen
class Step:
    """One thing a sync would do to a pod (or ``wait`` / ``nothing``), and why."""

    action: str = attrs.field(validator=attrs.validators.in_(STEP_ACTIONS))
    """One of ``STEP_ACTIONS``."""
    container: str = ""
    reason: str = ""
    until: float | None = None
    """For ``wait``: when the back-off ends (seconds since the epoch), if one holds it."""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        if self.container:
            out["container"] = self.container
        if self.reason:
            out["reason"] = self.reason
        if self.until is not None:
            out["until"] = rfc3339(self.until)
        return out


@attrs.frozen
class PodPlan:
    """One pod's part of a plan."""

    namespace: str
    name: str
    uid: str
    steps: tuple[Step, ...]
    summary: str = ""
    """The line the sync's report would carry for it (``SyncReport.actions``); '' when it
    would change nothing."""
    removal: bool = False
    """The pod is no longer desired: the sync kills and removes it."""

    @property
    def changes(self) -> bool:
        return self.removal or bool(self.summary)

    def as_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "changes": self.changes,
            "steps": [step.as_dict() for step in self.steps],
        }


@attrs.frozen
class NodePlan:
    """What a sync would do to the node, pod by pod (``Kubelet.plan``, ``kubecore plan``)."""

    node_name: str
    taken_at: float
    """When the runtime was listed (seconds since the epoch)."""
    pods: tuple[PodPlan, ...] = ()

    @property
    def changes(self) -> bool:
        """Whether a sync would change anything (``kubecore plan`` exits 2 then)."""
        return any(pod.changes for pod in self.pods)

    def pod(self, namespace: str, name: str) -> PodPlan | None:
        return next((p for p in self.pods if (p.namespace, p.name) == (namespace, name)), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node_name,
            "takenAt": rfc3339(self.taken_at),
            "changes": self.changes,
            "pods": [pod.as_dict() for pod in self.pods],
        }


@attrs.frozen
class PlanInputs:
    """What a plan reads: the desired pods (as admission would split them), the history each
    admitted pod's worker holds, and what the sources have said."""

    pods: Sequence[Pod]
    admission: Admission
    history: Callable[[Pod], PodHistory]
    sources_ready: bool
    ready: frozenset[str] = frozenset()
    termination: Callable[[str], Termination | None] = lambda _uid: None
    """The way out of a pod that left the desired pods (its spec and source), by UID."""
    image_present: Callable[[str], bool] = lambda _image: True


def plan_node(
    inputs: PlanInputs, snapshot: RuntimeSnapshot, node_name: str, now: float
) -> NodePlan:
    """The plan on one snapshot of this node's objects (``snapshot`` already filtered to the
    node)."""
    grouped, _ready, _running = group(snapshot)
    admitted, refused = inputs.admission.preview(inputs.pods)
    refusals = {pod.uid: rejection for pod, rejection in refused}
    present = _ImageCache(inputs.image_present)
    plans: list[PodPlan] = []
    for pod in admitted:
        entry = grouped.get(pod.uid)
        observed = observed_of(entry)
        history = inputs.history(pod)
        actions = compute_pod_actions(pod, observed, history, now)
        steps = tell_actions(pod, actions, observed, history, present)
        meta = pod.metadata
        summary = "" if actions.is_noop else actions.summary()
        plans.append(PodPlan(meta.namespace, meta.name, pod.uid, steps, summary))
    desired = {pod.uid for pod in admitted}
    for pod, rejection in refused:
        if pod.uid not in grouped:
            meta = pod.metadata
            why = f"refused by admission: {rejection.reason}: {rejection.message}"
            plans.append(PodPlan(meta.namespace, meta.name, pod.uid, (Step(NOTHING, "", why),)))
    for uid, entry in grouped.items():
        if uid in desired or not uid:
            continue
        termination = inputs.termination(uid)
        if not removal_due(termination, inputs.sources_ready, inputs.ready):
            continue
        plans.append(_removal(uid, entry, termination, refusals.get(uid)))
    return NodePlan(node_name, now, tuple(plans))


def _removal(
    uid: str, entry: PodEntry, termination: Termination | None, refusal: Rejection | None
) -> PodPlan:
    labelled = entry.containers[0].labels if entry.containers else entry.sandboxes[0].labels
    namespace, name, _ = pod_identity(labelled)
    if refusal is not None and refusal.reason == EVICTED:
        why = f"evicted: {refusal.message}"
    elif refusal is not None:
        why = f"refused by admission: {refusal.reason}: {refusal.message}"
    elif termination is not None:
        source = termination.pod.metadata.annotations.get(SOURCE_ANNOTATION, "") or "its source"
        why = f"removed from its source {source}"
    else:
        why = "orphan: no source lists it"
    steps = [Step("remove-pod", "", why)]
    for c in entry.containers:
        if c.state is not RuntimeState.EXITED:
            steps.append(Step(KILL, c.name, why))
    return PodPlan(namespace, name, uid, tuple(steps), REMOVAL_SUMMARY, removal=True)


class _ImageCache:
    """Whether an image is present, asked once per image per plan."""

    def __init__(self, ask: Callable[[str], bool]) -> None:
        self._ask = ask
        self._known: dict[str, bool] = {}

    def __call__(self, image: str) -> bool:
        known = self._known.get(image)
        if known is None:
            known = self._known[image] = self._ask(image)
        return known


def tell_actions(
    pod: Pod,
    actions: PodActions,
    observed: ObservedPod,
    history: PodHistory,
    image_present: Callable[[str], bool],
) -> tuple[Step, ...]:
    """The planner's ``actions`` for ``pod`` as steps, each with the reason the planner gave."""
    steps: list[Step] = []
    spec = pod.spec
    if actions.kill_pod:
        reason = actions.kill_pod_reason.value if actions.kill_pod_reason else ""
        steps.append(Step("kill-pod", "", reason))
    if actions.create_sandbox:
        steps.append(Step("create-sandbox", "", f"attempt {actions.attempt}"))
    kills = {kill.name: kill for kill in actions.containers_to_kill}
    starts: list[tuple[ContainerToStart, Container]] = [
        *((s, spec.ephemeral_containers[s.index]) for s in actions.ephemeral_containers_to_start),
        *((s, spec.init_containers[s.index]) for s in actions.sidecars_to_start),
    ]
    if actions.next_init_container is not None:
        start = actions.next_init_container
        starts.append((start, spec.init_containers[start.index]))
    starts.extend((s, spec.containers[s.index]) for s in actions.containers_to_start)
    for start, container in starts:
        name = container.name
        if container.image_pull_policy == "Always":
            steps.append(Step("pull", name, f"{container.image} (imagePullPolicy Always)"))
        elif not image_present(container.image):
            steps.append(Step("pull", name, f"{container.image} is not present"))
        kill = kills.pop(name, None)
        if kill is not None:
            steps.append(Step("restart", name, _kill_reason(kill, container, observed)))
        elif start.after_crash:
            steps.append(Step("restart", name, _exit_reason(pod, container, start, observed)))
        elif start.replaces:
            steps.append(Step("start", name, "replaces an interrupted start"))
        else:
            steps.append(Step("start", name, ""))
    for kill in kills.values():
        steps.append(Step(KILL, kill.name, _kill_reason(kill, None, observed)))
    for resize in actions.containers_to_resize:
        steps.append(Step("resize", resize.name, "its resources changed (in place)"))
    for sandbox_id in actions.sandboxes_to_remove:
        steps.append(Step("remove-sandbox", "", f"old sandbox {sandbox_id[:12]}"))
    for waiting in actions.waiting:
        entry = history.crash_backoff.get(waiting.name) or history.image_backoff.get(waiting.name)
        why = waiting.reason + (f": {waiting.message}" if waiting.message else "")
        steps.append(Step(WAIT, waiting.name, why, entry.until if entry is not None else None))
    if not steps:
        steps.append(Step(NOTHING))
    return tuple(steps)


def _newest(observed: ObservedPod, name: str) -> RuntimeContainer | None:
    named = [c for c in observed.containers if c.name == name]
    return max(named, key=lambda c: (c.attempt, c.created_at)) if named else None


def _kill_reason(kill: ContainerToKill, container: Container | None, observed: ObservedPod) -> str:
    why = kill.reason.value
    if kill.reason is KillReason.SPEC_CHANGED and container is not None:
        why += f": {_changed_field(container, observed, kill.container_id)}"
    elif kill.message and kill.message != "will be restarted":
        why += f": {kill.message}"
    return why


def _changed_field(container: Container, observed: ObservedPod, container_id: str) -> str:
    """Which field of the spec changed, as far as the runtime tells (it keeps the image and
    the spec's hash, not the spec)."""
    running = next((c for c in observed.containers if c.id == container_id), None)
    if running is not None and running.image and running.image != container.image:
        return f"image {running.image} -> {container.image}"
    old = running.annotations.get(HASH_ANNOTATION, "") if running is not None else ""
    return f"spec hash {old or '?'} differs (a field other than the image)"


def _exit_reason(
    pod: Pod, container: Container, start: ContainerToStart, observed: ObservedPod
) -> str:
    newest = _newest(observed, container.name)
    policy = policy_of(container, pod.spec.restart_policy)
    if newest is None or newest.exit_code is None:
        ended = "it never came up"
    else:
        ended = f"exited with code {newest.exit_code}"
        if newest.reason:
            ended += f" ({newest.reason})"
    return f"{ended}; restart policy {policy} (restart #{start.restart_count})"


def plan_live(rooms: Rooms) -> NodePlan:
    """``Kubelet.plan``: the agent's sources, admission and pod histories, one snapshot."""
    snapshot = rooms.node_view.own_objects(rooms.runtime.snapshot())
    pod_config = rooms.pod_config
    ready = pod_config.ready_sources()
    states = rooms.desired.states
    syncer = rooms.syncer

    def history(pod: Pod) -> PodHistory:
        st = states.get(pod.uid)
        return NO_HISTORY if st is None else syncer.history(pod.uid, st)

    inputs = PlanInputs(
        pods=pod_config.pods(),
        admission=rooms.admission,
        history=history,
        sources_ready=bool(ready) and ready.issuperset(pod_config.sources),
        ready=ready,
        termination=lambda uid: _leaving(rooms, states, uid),
        image_present=_asker(rooms.puller),
    )
    return plan_node(inputs, snapshot, rooms.config.node_name, rooms.clock.now())


def plan_fresh(
    runtime: ContainerRuntime,
    puller: Puller,
    config: KubeletConfig,
    pods: Sequence[Pod],
    *,
    sources_ready: bool,
    now: float,
) -> NodePlan:
    """What a new agent's first sync would do (``kubecore plan``, ``run --once``): no
    back-off or probe result yet, the starts an earlier agent left interrupted (read from the
    root directory), one snapshot of the node's objects."""
    node = config.node_name
    listed = runtime.snapshot()
    snapshot = RuntimeSnapshot(
        tuple(s for s in listed.sandboxes if owned_by(s.labels, node)),
        tuple(c for c in listed.containers if owned_by(c.labels, node)),
        listed.taken_at,
    )
    interrupted = interrupted_starts(config.root_dir)
    in_place = resource_updater(runtime) is not None

    def history(pod: Pod) -> PodHistory:
        since = now if pod.spec.active_deadline_seconds is not None else None
        resizes = in_place and has_resize_policy(pod)
        return history_of(PodRecord(), {}, since, resize_in_place=resizes, interrupted=interrupted)

    inputs = PlanInputs(
        pods=pods,
        admission=admission_of(config),
        history=history,
        sources_ready=sources_ready,
        image_present=_asker(puller),
    )
    return plan_node(inputs, snapshot, node, now)


def _leaving(rooms: Rooms, states: Mapping[str, PodState], uid: str) -> Termination | None:
    """The way out of a pod no longer desired: its termination, or for a pod still desired
    at the last pass, the one the next pass's refresh gives it (``Terminations.leave``)."""
    termination = rooms.terminations.get(uid)
    if termination is None and uid in states:
        return Termination(states[uid].pod)
    return termination


def _asker(puller: Puller) -> Callable[[str], bool]:
    return lambda image: puller.image_status(image) is not None
