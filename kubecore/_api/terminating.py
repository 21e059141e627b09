"""The API's pods on their way out (``kubecore._api.deletion`` says how a delete decides): each
is kept in the store with its deletion fields and shown ``Terminating`` (as the agent last showed
it) while the agent stops its containers within the grace period handed over to it, and leaves
the store and the API once the agent says its containers are gone. A restart of the agent during
a termination reads it back from the store and finishes it (``resume``), with the time left."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any, Protocol

import attrs

from kubecore._api.deletion import Deletion, first_deletion, next_deletion
from kubecore._api.errors import ApiError
from kubecore._api.storage import Storage
from kubecore._config.base import PodKey, pod_key
from kubecore._config.static import StaticSource
from kubecore._model.v1 import Pod, PodStatus

logger = logging.getLogger(__name__)


class TerminationViews(Protocol):
    """What a deletion reads of the node (``kubecore.Kubelet.views`` has it)."""

    def pod_terminating(self, uid: str) -> bool: ...

    def pod_containers_stopped(self, uid: str) -> bool: ...


class Terminator(Protocol):
    """What a deletion asks of the agent (``kubecore.Kubelet`` has it)."""

    def pods(self) -> list[Pod]: ...

    def terminate_pod(self, pod: Pod, grace_period: float) -> None: ...

    @property
    def views(self) -> TerminationViews: ...


@attrs.frozen
class Terminating:
    """A pod being deleted, and the pod as the agent last showed it (with its status)."""

    deletion: Deletion
    shown: Pod


class PodDeletions:
    """The API's pods being deleted, by ``(namespace, name)``. Changed only under the store's
    lock; readers see a map replaced whole."""

    def __init__(self, kubelet: Terminator, source: StaticSource, storage: Storage) -> None:
        self._kubelet = kubelet
        self._source = source
        self._storage = storage
        self._pods: dict[PodKey, Terminating] = {}

    def get(self, namespace: str, name: str) -> Terminating | None:
        return self._pods.get((namespace, name))

    def marks(self) -> dict[str, dict[str, Any]]:
        """The deletion fields each terminating pod shows, by uid."""
        return {t.deletion.pod.uid: t.deletion.fields() for t in self._pods.values()}

    def with_terminating(self, pods: list[Pod]) -> list[Pod]:
        """The agent's ``pods`` and the pods still terminating (those whose containers are
        gone are first taken out of the store: they leave the API now)."""
        if not self._pods:
            return pods
        self.reap()
        listed = {pod.uid for pod in pods}
        return [*pods, *(self._as_now(t) for t in self._pods.values() if t.shown.uid not in listed)]

    def _as_now(self, terminating: Terminating) -> Pod:
        """The pod as last shown, its containers not ready once none of them runs."""
        shown = terminating.shown
        if shown.status is None or not self._kubelet.views.pod_containers_stopped(shown.uid):
            return shown
        return attrs.evolve(shown, status=containers_stopped(shown.status))

    def reap(self) -> None:
        """Take out of the store and the API the pods whose containers the agent has stopped
        (a store that cannot be written keeps them until the next look)."""
        done = [
            key
            for key, t in self._pods.items()
            if not self._kubelet.views.pod_terminating(t.shown.uid)
        ]
        if not done:
            return
        with self._storage.lock:
            pods = dict(self._pods)
            for key in done:
                terminating = pods.get(key)
                if terminating is None:
                    continue
                try:
                    self._storage.forget(terminating.deletion.pod)
                except ApiError as error:
                    logger.warning("pod %s/%s stays terminating: %s", *key, error)
                    continue
                del pods[key]
            self._pods = pods

    def start(
        self, owned: Pod, shown: Pod, asked: int | None, now: float, dry_run: bool
    ) -> Deletion:
        """A first delete of the API's pod ``owned`` (``shown``: as the agent shows it)."""
        phase = shown.status.phase if shown.status is not None else ""
        deletion = first_deletion(owned, asked, phase, now)
        if dry_run:
            return deletion
        if deletion.grace == 0:
            self.remove_now(owned)
            return deletion
        self._storage.save(deletion)
        self._hand_over(owned, deletion.grace)
        self._put(pod_key(owned), Terminating(deletion, shown))
        return deletion

    def again(
        self, terminating: Terminating, asked: int | None, now: float, dry_run: bool
    ) -> Deletion:
        """A further delete of a pod already terminating: a shorter grace period applies (0:
        out of the API at once, its containers killed right away); a longer one changes
        nothing."""
        current = terminating.deletion
        new = next_deletion(current, asked, now)
        if new is None or dry_run:
            return new or current
        pod = current.pod
        if new.grace == 0:
            self._storage.forget(pod)
            self._drop(pod_key(pod))
        else:
            self._storage.save(new)
            self._put(pod_key(pod), attrs.evolve(terminating, deletion=new))
        self._kubelet.terminate_pod(pod, new.grace)
        return new

    def remove_now(self, owned: Pod) -> None:
        """Out of the store and the API at once; the agent kills its containers right away."""
        self._storage.forget(owned)
        self._kubelet.terminate_pod(owned, 0)
        self._source.remove(owned)

    def resume(self, deletions: Iterable[Deletion], now: float) -> None:
        """The deletions the store held at a restart: their pods are not desired (the store
        hands them over as such), and the agent stops whatever still runs of them within the
        time their grace period had left."""
        pods = dict(self._pods)
        for deletion in deletions:
            self._kubelet.terminate_pod(deletion.pod, deletion.seconds_left(now))
            pods[pod_key(deletion.pod)] = Terminating(deletion, deletion.pod)
        self._pods = pods

    def _hand_over(self, owned: Pod, grace: int) -> None:
        if grace > owned.spec.termination_grace_period_seconds:
            # The agent stops a pod within at most its spec's grace period: a longer one asked
            # for by the delete reaches it through the spec, before the pod leaves.
            spec = attrs.evolve(owned.spec, termination_grace_period_seconds=grace)
            self._source.update(attrs.evolve(owned, spec=spec))
            self._kubelet.pods()
        self._kubelet.terminate_pod(owned, grace)
        self._source.remove(owned)

    def _put(self, key: PodKey, terminating: Terminating) -> None:
        self._pods = {**self._pods, key: terminating}

    def _drop(self, key: PodKey) -> None:
        self._pods = {k: t for k, t in self._pods.items() if k != key}


def containers_stopped(status: PodStatus) -> PodStatus:
    """``status`` once the pod's containers stopped: none ready or started, the pod's
    ``Ready`` and ``ContainersReady`` conditions False (``ContainersNotReady``)."""
    statuses = tuple(attrs.evolve(s, ready=False, started=False) for s in status.container_statuses)
    unready = ", ".join(s.name for s in statuses)
    conditions = tuple(
        attrs.evolve(
            c,
            status="False",
            reason="ContainersNotReady",
            message=f"containers with unready status: [{unready}]",
        )
        if c.type in ("Ready", "ContainersReady") and c.status == "True"
        else c
        for c in status.conditions
    )
    return attrs.evolve(status, container_statuses=statuses, conditions=conditions)


def being_deleted(name: str) -> ApiError:
    """The 409 for a write to a pod being deleted."""
    return ApiError(
        HTTPStatus.CONFLICT,
        "Conflict",
        f'pods "{name}" is being deleted (Terminating): it cannot be changed; create it again'
        " once it is gone",
        details={"name": name, "kind": "pods"},
    )
