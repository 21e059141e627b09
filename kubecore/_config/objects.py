"""The ConfigMaps and Secrets the agent reads: one namespace-scoped store fed by every source.

Sources send objects beside their pods in ``PodUpdate.objects``. Each source owns its objects;
when two sources name the same ``namespace/name`` of a kind, the source registered first wins (as
for pods). Readers ask ``get_config_map`` / ``get_secret``; ``revision`` grows by one at every
change of what they would read, and ``subscribe`` calls back after each such change, so a pod
waiting on a missing object can be synced again as soon as it appears.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kubecore._config.updates import Operation, PodUpdate
from kubecore._model.v1 import ConfigMap, KubeObject, Secret

logger = logging.getLogger(__name__)

ObjectKey = tuple[str, str, str]
"""(kind, namespace, name)."""


def object_key(obj: KubeObject) -> ObjectKey:
    return (obj.kind, obj.metadata.namespace, obj.metadata.name)


class ObjectStore:
    """ConfigMaps and Secrets by namespace and name, merged from every source. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sources: dict[str, dict[ObjectKey, KubeObject]] = {}
        self._merged: dict[ObjectKey, KubeObject] = {}
        self._revision = 0
        self._listeners: list[Callable[[], None]] = []

    # --- reading ------------------------------------------------------------------------------

    def get_config_map(self, namespace: str, name: str) -> ConfigMap | None:
        found = self._merged.get(("ConfigMap", namespace, name))
        return found if isinstance(found, ConfigMap) else None

    def get_secret(self, namespace: str, name: str) -> Secret | None:
        found = self._merged.get(("Secret", namespace, name))
        return found if isinstance(found, Secret) else None

    @property
    def revision(self) -> int:
        """Grows by one at each change of what ``get_config_map`` / ``get_secret`` return."""
        return self._revision

    def objects(self) -> tuple[KubeObject, ...]:
        """Every object, the earliest source first."""
        return tuple(self._merged.values())

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` (with no lock held) after every change."""
        with self._lock:
            self._listeners.append(listener)

    # --- writing ------------------------------------------------------------------------------

    def apply(self, update: PodUpdate) -> bool:
        """Apply the objects of one source's update; True if what readers see changed.

        ``NOT_READY`` keeps the source's objects, as it keeps its pods; so does an update whose
        ``objects`` is None. A ``SET`` replaces them all (``objects=()`` empties the set).
        """
        if update.op is Operation.NOT_READY or update.objects is None:
            return False
        with self._lock:
            state = self._sources.setdefault(update.source, {})
            if update.op is Operation.SET:
                state.clear()
            for obj in update.objects:
                if update.op is Operation.REMOVE:
                    state.pop(object_key(obj), None)
                else:
                    state[object_key(obj)] = obj
            merged = self._merge()
            changed = merged != self._merged
            if changed:
                self._merged = merged
                self._revision += 1
            listeners = list(self._listeners) if changed else []
        for listener in listeners:
            try:
                listener()
            except Exception:
                logger.exception("object store listener failed")
        return changed

    def put(self, obj: KubeObject, source: str = "api") -> bool:
        """Add or replace one object for ``source``."""
        return self.apply(PodUpdate(Operation.UPDATE, (), source, (obj,)))

    def remove(self, obj: KubeObject, source: str = "api") -> bool:
        return self.apply(PodUpdate(Operation.REMOVE, (), source, (obj,)))

    def _merge(self) -> dict[ObjectKey, KubeObject]:
        merged: dict[ObjectKey, KubeObject] = {}
        for source, state in self._sources.items():
            for key, obj in state.items():
                if key in merged:
                    if merged[key] != obj:
                        logger.warning(
                            "%s %s/%s from source %s is already defined by another source;"
                            " ignoring it",
                            key[0],
                            key[1],
                            key[2],
                            source,
                        )
                    continue
                merged[key] = obj
        return merged
