"""The planner's spec side: the facts about a pod it needs at every sync (indexes, spec hashes,
resources records, the sandbox hash), computed once per ``Pod`` object and kept on it."""

from __future__ import annotations

from kubecore._contract.labels import SANDBOX_HASH_ANNOTATION
from kubecore._contract.observed import ObservedPod, SpecIndex
from kubecore._contract.values import RuntimeSandbox
from kubecore._model.spec_hash import container_hash, resources_record, sandbox_hash
from kubecore._model.v1 import Pod
from kubecore._planner.actions import PodActions
from kubecore._planner.restart_rules import is_container_restartable

_NOOP = PodActions()


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
        "ephemeral_names",
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
            {c.name: i for i, c in enumerate(spec.ephemeral_containers)},
        )
        self.ephemeral_names = frozenset(c.name for c in spec.ephemeral_containers)
        """Steady only once each has been started (ephemeral containers are in no spec hash)."""
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
        """The last observation ``steady_plan`` found steady (its objects are immutable)."""

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


def sandbox_changed(sandbox: RuntimeSandbox, info: PodInfo) -> bool:
    recorded = sandbox.annotations.get(SANDBOX_HASH_ANNOTATION)
    return bool(recorded) and recorded != info.sandbox_hash
