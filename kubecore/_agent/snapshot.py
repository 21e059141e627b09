"""What was observed: one runtime snapshot turned into per-pod entries (the agent's PLEG room).

A pass lists the runtime once; ``NodeView`` keeps this node's objects (``owned_by``: another
agent may share the engine, and an object with no node label is nobody's), groups them by pod
UID into ``PodEntry`` values, and reuses the grouping while the runtime lists the very same
(immutable) tuples. An entry's ``key`` changes exactly when something
that matters to the pod's sync does: an object appears or goes, changes state, or a sandbox gets
an IP.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import attrs

from kubecore._contract.labels import (
    MANAGED_LABEL,
    NODE_LABEL,
    POD_UID_LABEL,
    node_of,
    owned_by,
    pod_identity,
)
from kubecore._contract.observed import ObservedPod, PodEntry
from kubecore._contract.values import (
    RuntimeContainer,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    SandboxState,
)
from kubecore._observability.metrics import Metrics

logger = logging.getLogger(__name__)

NOTHING_OBSERVED = ObservedPod()


def observed_of(entry: PodEntry | None) -> ObservedPod:
    return NOTHING_OBSERVED if entry is None else entry.observed()


def group(snapshot: RuntimeSnapshot) -> tuple[dict[str, PodEntry], int, int]:
    """The snapshot by pod UID, with the number of ready sandboxes and running containers."""
    grouped: dict[str, PodEntry] = {}
    get = grouped.get
    ready = running = 0
    READY = SandboxState.READY
    RUNNING = RuntimeState.RUNNING
    for s in snapshot.sandboxes:
        entry = get(s.uid)
        if entry is None:
            grouped[s.uid] = entry = PodEntry()
        entry.sandboxes.append(s)
        state = s.state
        entry.key.append((s.id, state, s.ip))
        if state is READY:
            ready += 1
    for c in snapshot.containers:
        uid = c.labels.get(POD_UID_LABEL, "")
        entry = get(uid)
        if entry is None:
            grouped[uid] = entry = PodEntry()
        entry.containers.append(c)
        cstate = c.state
        entry.key.append((c.id, cstate, c.exit_code))
        if cstate is RUNNING:
            running += 1
    return grouped, ready, running


@attrs.frozen
class Grouped:
    """``group`` of one snapshot, kept for the next pass: a runtime that lists the very same
    tuples again changed nothing, and the grouping is reused as it is."""

    sandboxes: tuple[RuntimeSandbox, ...]
    containers: tuple[RuntimeContainer, ...]
    entries: dict[str, PodEntry]
    ready: int
    running: int


def group_again(snapshot: RuntimeSnapshot, last: Grouped | None) -> Grouped:
    if (
        last is not None
        and snapshot.sandboxes is last.sandboxes
        and snapshot.containers is last.containers
    ):
        return last
    grouped, ready, running = group(snapshot)
    return Grouped(snapshot.sandboxes, snapshot.containers, grouped, ready, running)


class NodeView:
    """This node's objects of each snapshot, grouped by pod; one instance per agent (not
    thread-safe: used by the pass only). What is not this node's (``owned_by``) is left out,
    and reported once: a warning per object that carries no node label at all, a line per
    other node whose objects share the engine."""

    def __init__(self, node_name: str) -> None:
        self.node_name = node_name
        self._own_cache: (
            tuple[tuple[RuntimeSandbox, ...], tuple[RuntimeContainer, ...], RuntimeSnapshot] | None
        ) = None
        self._last: Grouped | None = None
        self._reported: set[str] = set()
        """Ids of the foreign objects already reported (those still listed)."""
        self._other_nodes: set[str] = set()
        """The other nodes already reported (those whose objects are still listed)."""

    def own_objects(self, snapshot: RuntimeSnapshot) -> RuntimeSnapshot:
        """The snapshot without the objects this node does not own (``owned_by``): another
        node's on a shared engine, or unlabelled ones nobody owns. The filtered tuples are
        reused while the runtime lists the very same ones."""
        node = self.node_name
        last = self._own_cache
        if last is not None and last[0] is snapshot.sandboxes and last[1] is snapshot.containers:
            return attrs.evolve(last[2], taken_at=snapshot.taken_at)
        sandboxes = snapshot.sandboxes
        containers = snapshot.containers
        foreign_sandboxes = [s for s in sandboxes if not owned_by(s.labels, node)]
        foreign_containers = [c for c in containers if not owned_by(c.labels, node)]
        if foreign_sandboxes or foreign_containers:
            own = RuntimeSnapshot(
                tuple(s for s in sandboxes if owned_by(s.labels, node)),
                tuple(c for c in containers if owned_by(c.labels, node)),
                snapshot.taken_at,
            )
        else:
            own = snapshot
        if foreign_sandboxes or foreign_containers or self._reported:
            self._report(foreign_sandboxes, foreign_containers)
        self._own_cache = (sandboxes, containers, own)
        return own

    def _report(self, sandboxes: list[RuntimeSandbox], containers: list[RuntimeContainer]) -> None:
        """Say once what is left alone; forget what is no longer listed (a new object with
        an id seen before is reported again only after a listing without it)."""
        listed: set[str] = set()
        nodes: set[str] = set()
        described = [
            *((s.id, "sandbox", s.name, s.labels) for s in sandboxes),
            *((c.id, "container", c.name, c.labels) for c in containers),
        ]
        for object_id, kind, name, labels in described:
            listed.add(object_id)
            other = node_of(labels)
            if other:
                nodes.add(other)
                if other not in self._other_nodes:
                    self._other_nodes.add(other)
                    logger.info(
                        "the engine holds objects of node %r too: this node (%r) leaves them alone",
                        other,
                        self.node_name,
                        extra={"node": other},
                    )
            if object_id in self._reported:
                continue
            if other:
                logger.debug(
                    "%s %s (%s, %s) is node %r's: left alone",
                    kind,
                    name,
                    object_id,
                    _pod_of(labels),
                    other,
                )
            else:
                logger.warning(
                    "%s %s (%s, %s) carries %s but no %s label: no kubecore agent's object,"
                    " so node %r leaves it alone (remove it yourself if nothing needs it)",
                    kind,
                    name,
                    object_id,
                    _pod_of(labels),
                    MANAGED_LABEL,
                    NODE_LABEL,
                    self.node_name,
                    extra={"object_id": object_id},
                )
        self._reported = listed
        self._other_nodes &= nodes

    def group(self, own: RuntimeSnapshot) -> Grouped:
        """``own`` (from ``own_objects``) by pod UID, reusing the last grouping when unchanged."""
        self._last = group_again(own, self._last)
        return self._last


def _pod_of(labels: Mapping[str, str]) -> str:
    namespace, name, _ = pod_identity(labels)
    return f"pod {namespace}/{name}" if name else "no pod"


class NodeGauges:
    """The running-pods and containers-by-state gauges, set from each pass's snapshot."""

    def __init__(self, metrics: Metrics) -> None:
        self._pods = metrics.running_pods
        self._containers = {
            state: metrics.running_containers.labels(state.value) for state in RuntimeState
        }

    def update(self, snapshot: RuntimeSnapshot, ready: int, running: int) -> None:
        self._pods.set(ready)
        gauges = self._containers
        gauges[RuntimeState.RUNNING].set(running)
        if running == len(snapshot.containers):
            for state, gauge in gauges.items():
                if state is not RuntimeState.RUNNING:
                    gauge.set(0)
            return
        counts: dict[RuntimeState, int] = dict.fromkeys(RuntimeState, 0)
        for c in snapshot.containers:
            counts[c.state] += 1
        for state, count in counts.items():
            gauges[state].set(count)
