"""Why a pod is where it is (``Kubelet.explain``, ``/why/{namespace}/{pod}``, ``kubecore why``).

Everything is read from what the agent already holds, nothing is decided again: the status its
worker last published (conditions, container states), the admission verdict, the planner's last
decision (``PodState.actions``: what it did, what waits and why), the back-off timers of the
pod's record, the prober's results and the events recorded for the pod. For each container that
is not ready the one reason that holds it back now comes first, then the evidence, in the order
a person reads it: the state, how the last instance ended, the timer, the probe, the events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubecore._contract.values import Event, EventType
from kubecore._model.v1 import ContainerStatus, Pod, PodStatus
from kubecore._planner.actions import BackoffEntry, ProbeState, Waiting
from kubecore._util.timefmt import rfc3339

if TYPE_CHECKING:
    from kubecore._agent.pod_workers.room import PodState
    from kubecore._agent.wiring import Rooms

EVENTS_KEPT = 5
"""The newest events of the pod (and of each container) an explanation shows."""


def explain_pod(rooms: Rooms, uid: str) -> dict[str, Any] | None:
    """The explanation of the pod ``uid`` as a JSON document; None for a pod not on the node."""
    report = rooms.desired.report(uid)
    if report is None:
        return None
    pod = report.pod
    status = report.reported_status()
    meta = pod.metadata
    events = rooms.events.events(namespace=meta.namespace, name=meta.name)
    events = [e for e in events if not e.involved_object.uid or e.involved_object.uid == uid]
    rejection = rooms.admission.rejection(uid)
    st = rooms.desired.states.get(uid)
    now = rooms.clock.now()
    document: dict[str, Any] = {
        "pod": f"{meta.namespace}/{meta.name}",
        "uid": uid,
        "phase": status.phase or "Pending",
        "admission": (
            {"admitted": True}
            if rejection is None
            else {"admitted": False, "reason": rejection.reason, "message": rejection.message}
        ),
        "conditions": [
            _drop_empty(
                {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
            )
            for c in status.conditions
        ],
    }
    if rejection is not None:
        document["reason"] = f"refused by admission ({rejection.reason}): {rejection.message}"
    if st is not None:
        actions = st.actions
        document["lastDecision"] = "not planned yet" if actions is None else actions.summary()
        probes = rooms.probes.states(uid) if st.has_probes else {}
        document["containers"] = _containers(pod, status, st, probes, events, now)
    document["events"] = [_event(e) for e in events[-EVENTS_KEPT:]]
    return document


def _containers(
    pod: Pod,
    status: PodStatus,
    st: PodState,
    probes: Mapping[str, ProbeState],
    events: Sequence[Event],
    now: float,
) -> list[dict[str, Any]]:
    """Each container that is not ready, with the one reason and its evidence."""
    by_name = {cs.name: cs for cs in (*status.init_container_statuses, *status.container_statuses)}
    waiting = {w.name: w for w in st.actions.waiting} if st.actions is not None else {}
    out: list[dict[str, Any]] = []
    spec = pod.spec
    for container in (*spec.init_containers, *spec.containers):
        name = container.name
        cs = by_name.get(name)
        if cs is not None and cs.ready:
            continue
        if container in spec.init_containers and _completed(cs):
            continue  # an init container that completed is done, not held back
        evidence: list[str] = []
        reason = _held_by(cs, waiting.get(name), evidence)
        _last_end(cs, evidence)
        for table, kind in ((st.record.crash_backoff, "crash"), (st.record.image_backoff, "image")):
            entry = table.get(name)
            if entry is not None:
                evidence.append(_backoff(kind, entry, now))
        probe = probes.get(cs.container_id.partition("://")[2]) if cs and cs.container_id else None
        if probe is not None:
            if not probe.started:
                evidence.append("startup probe: not passed yet")
            if probe.message:
                evidence.append(f"last probe result: {probe.message}")
            if reason == "Running" and not probe.ready:
                reason = probe.message or "the readiness probe has not passed yet"
        if reason == "Running":
            reason = "running, not ready yet (no probe result)"
        mine = [e for e in events if e.involved_object.field_path.endswith(f"{{{name}}}")]
        evidence.extend(
            f"event {e.reason}: {e.message}"
            for e in mine[-EVENTS_KEPT:]
            if e.type is EventType.WARNING
        )
        # an event repeated (a back-off at each retry) is told once
        out.append({"name": name, "reason": reason, "evidence": list(dict.fromkeys(evidence))})
    return out


def _completed(cs: ContainerStatus | None) -> bool:
    terminated = cs.state.terminated if cs is not None else None
    return terminated is not None and terminated.exit_code == 0


def _held_by(cs: ContainerStatus | None, waiting: Waiting | None, evidence: list[str]) -> str:
    """The one reason: the planner's waiting entry, else the container's published state."""
    if waiting is not None:
        return waiting.reason + (f": {waiting.message}" if waiting.message else "")
    if cs is None:
        return "no status yet: the pod has not been synced"
    state = cs.state
    if state.waiting is not None:
        text = state.waiting.reason or "Waiting"
        return text + (f": {state.waiting.message}" if state.waiting.message else "")
    if state.terminated is not None:
        term = state.terminated
        evidence.append(f"state: terminated with exit code {term.exit_code} ({term.reason})")
        return f"exited with code {term.exit_code}" + (f" ({term.reason})" if term.reason else "")
    return "Running"


def _last_end(cs: ContainerStatus | None, evidence: list[str]) -> None:
    if cs is None:
        return
    last = cs.last_state.terminated
    if last is not None:
        line = f"last instance exited with code {last.exit_code}"
        if last.reason:
            line += f" ({last.reason})"
        if last.finished_at:
            line += f" at {last.finished_at}"
        evidence.append(line + f"; restarts: {cs.restart_count}")


def _backoff(kind: str, entry: BackoffEntry, now: float) -> str:
    left = entry.until - now
    if left > 0:
        return (
            f"{kind} back-off {entry.delay:g}s: next try at {rfc3339(entry.until)} (in {left:.0f}s)"
        )
    return f"{kind} back-off {entry.delay:g}s ended at {rfc3339(entry.until)}: tried at next sync"


def _event(event: Event) -> dict[str, Any]:
    ref = event.involved_object
    return _drop_empty(
        {
            "time": rfc3339(event.timestamp),
            "type": event.type.value,
            "reason": event.reason,
            "object": ref.field_path,
            "message": event.message,
        }
    )


def _drop_empty(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v not in ("", None)}


def explanation_text(document: Mapping[str, Any]) -> str:
    """The explanation for a person: the pod, why it is held back, its containers, the events."""
    lines = [f"Pod {document['pod']} ({document['phase']})"]
    admission = document.get("admission", {})
    if not admission.get("admitted", True):
        lines.append(f"  Refused by admission: {admission['reason']}: {admission['message']}")
    for condition in document.get("conditions", []):
        why = f" ({condition['reason']})" if condition.get("reason") else ""
        lines.append(f"  {condition['type']}: {condition['status']}{why}")
    containers = document.get("containers", [])
    if containers:
        lines.append("Not ready:")
    for container in containers:
        lines.append(f"  {container['name']}: {container['reason']}")
        lines.extend(f"    - {line}" for line in container["evidence"])
    if "lastDecision" in document:
        lines.append(f"Last decision: {document['lastDecision']}")
    events = document.get("events", [])
    if events:
        lines.append("Events:")
    for event in events:
        lines.append(f"  {event['time']}  {event['type']}  {event['reason']}: {event['message']}")
    return "\n".join(lines) + "\n"
