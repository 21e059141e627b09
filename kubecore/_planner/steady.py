"""The steady state, recognised without building a ``View``: every container of the pod runs in
its one ready sandbox as its spec says, so the plan is the shared no-op."""

from __future__ import annotations

from operator import is_

from kubecore._contract.labels import INIT_CONTAINER_ANNOTATION, is_ephemeral, recorded_hash
from kubecore._contract.observed import ObservedPod, container_name
from kubecore._contract.values import RuntimeState, SandboxState
from kubecore._planner.actions import PodActions, PodHistory
from kubecore._planner.pod_info import PodInfo, sandbox_changed
from kubecore._planner.resize import applied_resources

_RUNNING = RuntimeState.RUNNING
_UNKNOWN = RuntimeState.UNKNOWN
_READY = SandboxState.READY


def steady_plan(info: PodInfo, observed: ObservedPod, history: PodHistory) -> PodActions | None:
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
    if sandbox.state is not _READY or sandbox_changed(sandbox, info):
        return None
    sandbox_id = sandbox.id
    app_index, hashes = info.app_index, info.app_hashes
    sidecar_hashes = info.sidecar_hashes
    app_resources = info.app_resources
    ephemeral_names = info.ephemeral_names
    if ephemeral_names and not _ephemeral_started(ephemeral_names, observed):
        return None
    seen = sidecars_seen = 0
    for c in observed.containers:
        if ephemeral_names and is_ephemeral(c.annotations):
            # Started once and left alone, whatever its state: no hash, no restart.
            if container_name(c) not in ephemeral_names or c.state is _UNKNOWN:
                return None
            continue
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
            if wanted is not None and applied_resources(c, history) not in (None, wanted):
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


def _ephemeral_started(names: frozenset[str], observed: ObservedPod) -> bool:
    """Every ephemeral container of the spec has an instance (they start once, never again)."""
    have = {container_name(c) for c in observed.containers if is_ephemeral(c.annotations)}
    return names <= have


def _same(last: ObservedPod, observed: ObservedPod) -> bool:
    """The same objects (identity, not equality), in the same order."""
    if last is observed:
        return True
    c1, c2 = last.containers, observed.containers
    if len(c1) != len(c2) or not all(map(is_, c1, c2)):
        return False
    s1, s2 = last.sandboxes, observed.sandboxes
    return len(s1) == len(s2) and all(map(is_, s1, s2))
