"""Merges the pod lists of several sources into one desired state.

Each source owns its own pods (by UID). ``SET`` replaces everything the source said before; ``ADD``
/ ``UPDATE`` put pods in; ``REMOVE`` takes them out. The merged view lists each pod once: when two
sources name the same ``namespace/name`` the source registered first wins. "Sources ready" means
that every registered source has reported and none has since said it cannot be read (``NOT_READY``),
so the agent may trust that a pod missing from the merged view is really not wanted. An update
with a ``reason`` (a ``SET`` of the pods a source remembers, sent while it cannot be read) sets
the source's pods without counting as a report: they are run and kept, nothing else is deleted.
A pod a source gives without a UID gets ``pod_uid`` of (node, source, namespace, name): two
nodes on one engine never share a pod UID, and a restarted agent finds its own pods again.
A pod a source gives without a creation time gets the time it was first received
(``kubecore._config.created``), the same across restarts of the agent.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

import attrs

from kubecore._config.created import CreationTimes
from kubecore._config.updates import Operation, PodUpdate
from kubecore._manifest.identity import SOURCE_ANNOTATION, pod_uid
from kubecore._model.v1 import Pod

logger = logging.getLogger(__name__)


def _stamp(pod: Pod, source: str, node_name: str) -> Pod:
    """The pod with a UID and the source annotation (unchanged object when it has both)."""
    meta = pod.metadata
    uid = meta.uid or pod_uid(source, meta.namespace, meta.name, node_name=node_name)
    if uid == meta.uid and meta.annotations.get(SOURCE_ANNOTATION) == source:
        return pod
    annotations = {**meta.annotations, SOURCE_ANNOTATION: source}
    return attrs.evolve(pod, metadata=attrs.evolve(meta, uid=uid, annotations=annotations))


class PodConfig:
    """Per-source pod state, merged. Thread-safe."""

    def __init__(
        self,
        sources: Iterable[str] = (),
        *,
        node_name: str,
        created: CreationTimes | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._node_name = node_name
        self._created = created
        """When each pod received without a creation time was first received."""
        self._sources: dict[str, dict[str, Pod]] = {}
        self._reported: set[str] = set()
        self._heard: set[str] = set()
        """Sources whose pods are known: each has reported, or sent its last known state."""
        self._not_ready_reasons: dict[str, str] = {}
        self._generation = 0
        self._merged: tuple[Pod, ...] = ()
        self._merged_generation = 0
        for source in sources:
            self.register_source(source)

    def register_source(self, source: str) -> None:
        """Declare a source the agent must hear from before it deletes anything."""
        if not source:
            raise ValueError("a source needs a name")
        with self._lock:
            self._sources.setdefault(source, {})

    @property
    def sources(self) -> tuple[str, ...]:
        """The names of the sources registered so far, in order."""
        with self._lock:
            return tuple(self._sources)

    @property
    def generation(self) -> int:
        """Grows by one at each update that changed the merged state."""
        with self._lock:
            return self._generation

    def sources_ready(self) -> bool:
        """True once at least one source exists and every registered source has reported (and
        has not said ``NOT_READY`` since)."""
        with self._lock:
            return bool(self._sources) and self._reported.issuperset(self._sources)

    def ready_sources(self) -> frozenset[str]:
        """The registered sources that have reported and not said ``NOT_READY`` since: a pod
        such a source no longer lists is really not wanted by it. Empty until every registered
        source's pods are known (each reported, or sent its last known state), for until then a
        pod one source dropped may be another's."""
        with self._lock:
            if not self._heard.issuperset(self._sources):
                return frozenset()
            return frozenset(s for s in self._sources if s in self._reported)

    def not_ready(self) -> tuple[str, ...]:
        """The registered sources that have not reported, or said ``NOT_READY`` since."""
        with self._lock:
            return tuple(s for s in self._sources if s not in self._reported)

    def not_ready_reasons(self) -> dict[str, str]:
        """Why each source of ``not_ready()`` is not ready."""
        with self._lock:
            return {
                s: self._not_ready_reasons.get(s) or "it has not reported yet"
                for s in self._sources
                if s not in self._reported
            }

    def apply(self, update: PodUpdate) -> bool:
        """Apply one update (registering its source); True if the desired state changed."""
        source = update.source
        if not source:
            raise ValueError("a PodUpdate needs a source name")
        pods = [_stamp(p, source, self._node_name) for p in update.pods]
        with self._lock:
            if update.op is Operation.NOT_READY:
                was_ready = source in self._reported
                self._sources.setdefault(source, {})
                self._reported.discard(source)
                self._not_ready_reasons[source] = update.reason
                if was_ready:
                    logger.warning("source %s cannot be read: its pods are kept", source)
                return was_ready
            state = self._sources.setdefault(source, {})
            self._heard.add(source)
            if update.reason:
                # the source's last known state, sent while it cannot be read: not a report
                first_report = False
                self._reported.discard(source)
                self._not_ready_reasons[source] = update.reason
            else:
                first_report = source not in self._reported  # or ready again
                self._reported.add(source)
                self._not_ready_reasons.pop(source, None)
            before = dict(state)
            if self._created is not None and update.op is not Operation.REMOVE:
                pods = self._created.stamp(pods)
            if update.op is Operation.SET:
                state.clear()
                for pod in pods:
                    state[pod.uid] = pod
            elif update.op in (Operation.ADD, Operation.UPDATE):
                for pod in pods:
                    state[pod.uid] = pod
            elif update.op is Operation.REMOVE:
                for pod in pods:
                    state.pop(pod.uid, None)
            else:  # pragma: no cover - the enum is closed
                raise ValueError(f"unknown operation {update.op!r}")
            changed = before.keys() != state.keys() or any(
                before[uid] != pod for uid, pod in state.items()
            )
            if self._created is not None and not update.reason:
                self._created.forget(uid for uid in before if uid not in state)
            if changed:
                self._generation += 1
            logger.debug(
                "source %s: %s of %d pod(s)%s",
                source,
                update.op.value,
                len(pods),
                "" if changed else " (no change)",
            )
            return changed or first_report

    def pods(self) -> tuple[Pod, ...]:
        """The merged desired pods: each ``namespace/name`` once, the earliest source first."""
        with self._lock:
            if self._merged_generation == self._generation and self._generation:
                return self._merged
            seen: set[tuple[str, str]] = set()
            seen_uids: set[str] = set()
            merged: list[Pod] = []
            for source, state in self._sources.items():
                for pod in state.values():
                    key = (pod.metadata.namespace, pod.metadata.name)
                    if key in seen or pod.uid in seen_uids:
                        logger.warning(
                            "pod %s/%s from source %s is already defined by another source;"
                            " ignoring it",
                            key[0],
                            key[1],
                            source,
                        )
                        continue
                    seen.add(key)
                    seen_uids.add(pod.uid)
                    merged.append(pod)
            self._merged = tuple(merged)
            self._merged_generation = self._generation
            return self._merged
