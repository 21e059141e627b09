"""The in-process pod source for embedding programs: pods set, added and removed by calls."""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable

from kubecore._config.base import API_SOURCE, PodKey, pod_key, prepare_pods
from kubecore._config.updates import Operation, PodUpdate
from kubecore._model.v1 import KubeObject, Pod


class StaticSource:
    """Pods set by the embedding program: ``set``, ``add``, ``update`` and ``remove``; ConfigMaps
    and Secrets with ``set(pods, objects)``, ``put_objects`` and ``remove_objects``.

    Each call is queued as one ``PodUpdate`` (SET / ADD / UPDATE / REMOVE) and handed out by
    ``poll``; pass ``sink`` (for example ``kubelet.update``) to deliver each one at once instead.
    Pods get the source stamp (and, in the agent, the node's deterministic uid if they have
    none). The source has reported once something
    was set (``StaticSource(pods)`` counts, even with an empty list).
    """

    def __init__(
        self,
        pods: Iterable[Pod] | None = None,
        *,
        name: str = API_SOURCE,
        sink: Callable[[PodUpdate], None] | None = None,
    ) -> None:
        self._name = name
        self._sink = sink
        self._pods: dict[PodKey, Pod] = {}
        self._queue: collections.deque[PodUpdate] = collections.deque()
        self._lock = threading.Lock()
        if pods is not None:
            self.set(pods)

    @property
    def name(self) -> str:
        """The source's name (``static`` unless given): what its pods' source annotation says."""
        return self._name

    @property
    def pods(self) -> tuple[Pod, ...]:
        """The pods it holds now."""
        with self._lock:
            return tuple(self._pods.values())

    def poll(self, now: float) -> PodUpdate | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def set(
        self,
        pods: Iterable[Pod],
        objects: Iterable[KubeObject] | None = None,
        *,
        unknown: str = "",
    ) -> None:
        """Replace the whole list: pods not in it are removed. ``objects`` (when given) replace
        the source's ConfigMaps and Secrets the same way. ``unknown``: why this is only the
        last known state (part of it could not be read): its pods run and are kept, and the
        source stays not ready, so nothing it no longer lists is deleted."""
        prepared = prepare_pods(pods, self._name)
        with self._lock:
            self._pods = {pod_key(pod): pod for pod in prepared}
            listed = tuple(objects) if objects is not None else None
            pods_now = tuple(self._pods.values())
            self._emit(PodUpdate(Operation.SET, pods_now, self._name, listed, reason=unknown))

    def put_objects(self, *objects: KubeObject) -> None:
        """Add or replace ConfigMaps and Secrets (pods are untouched)."""
        with self._lock:
            self._emit(PodUpdate(Operation.UPDATE, (), self._name, objects))

    def remove_objects(self, *objects: KubeObject) -> None:
        """Remove these ConfigMaps or Secrets (by namespace and name) from what it offers."""
        with self._lock:
            self._emit(PodUpdate(Operation.REMOVE, (), self._name, objects))

    def add(self, *pods: Pod) -> None:
        """Add these pods (validated and stamped with the source); a pod of the same namespace and
        name is replaced."""
        prepared = prepare_pods(pods, self._name)
        with self._lock:
            for pod in prepared:
                self._pods[pod_key(pod)] = pod
            self._emit(PodUpdate(Operation.ADD, prepared, self._name))

    def update(self, *pods: Pod) -> None:
        """Change these pods (validated and stamped with the source), as ``add`` does, sent as an
        UPDATE."""
        prepared = prepare_pods(pods, self._name)
        with self._lock:
            for pod in prepared:
                self._pods[pod_key(pod)] = pod
            self._emit(PodUpdate(Operation.UPDATE, prepared, self._name))

    def remove(self, *pods: Pod | PodKey | str) -> None:
        """Remove pods given as pods, ``(namespace, name)`` keys or ``"namespace/name"``."""
        removed: list[Pod] = []
        with self._lock:
            for item in pods:
                key = _as_key(item)
                pod = self._pods.pop(key, None)
                if pod is not None:
                    removed.append(pod)
            if removed:
                self._emit(PodUpdate(Operation.REMOVE, tuple(removed), self._name))

    def _emit(self, update: PodUpdate) -> None:
        if self._sink is not None:
            self._sink(update)
        else:
            self._queue.append(update)


def _as_key(item: Pod | PodKey | str) -> PodKey:
    if isinstance(item, Pod):
        return pod_key(item)
    if isinstance(item, str):
        namespace, sep, name = item.partition("/")
        return (namespace, name) if sep else ("default", namespace)
    return item
