"""The desired pods: the merged sources' view admitted, in first-seen order, and the pods refused.

The config side of the agent. A refresh (at each pass, and before a read) turns a new ``PodConfig``
generation into a new ``PodState`` map, replaced whole: the pass and the workers read it without a
lock. It is the only writer of a state's ``pod`` (the newest desired version, the message slot the
pass compares with what the worker last synced); a pod that leaves is handed to ``on_leave`` (its
termination keeps the spec), and ``on_desired`` learns which pods are desired now.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import attrs

from kubecore._agent.admission.security import Admission
from kubecore._agent.pod_workers.room import PodState
from kubecore._model.qos import qos_class
from kubecore._model.v1 import Pod, PodStatus
from kubecore._prober.manager import has_probes
from kubecore._status.manager import StatusManager
from kubecore._status.rejection import Rejection
from kubecore._util.timefmt import parse_time, rfc3339


class DesiredPods:
    def __init__(
        self,
        admission: Admission,
        status: StatusManager,
        *,
        on_leave: Callable[[Pod], None],
        on_desired: Callable[[Mapping[str, PodState]], None],
        on_changed: Callable[[], None] = lambda: None,
        node_name: str = "",
    ) -> None:
        self._admission = admission
        self._node_name = node_name
        self._status = status
        self._on_leave = on_leave
        self._on_desired = on_desired
        self._on_changed = on_changed
        self._lock = threading.Lock()
        self.states: dict[str, PodState] = {}
        """Admitted pods by UID; replaced whole, never changed in place."""
        self._rejected: dict[str, tuple[Pod, PodStatus]] = {}
        self._first_seen: dict[str, int] = {}
        self._seq = 0
        self._generation = -1

    def refresh(self, generation: int, pods: Callable[[], Sequence[Pod]], now: float) -> None:
        """Take ``pods()`` as the desired pods unless ``generation`` was already taken."""
        if generation == self._generation:
            return
        with self._lock:
            if generation == self._generation:
                return
            self._generation = generation
            self._take(list(pods()), now)
        self._on_changed()

    def _take(self, pods: list[Pod], now: float) -> None:
        first_seen = self._first_seen
        for pod in pods:
            if pod.uid not in first_seen:
                first_seen[pod.uid] = self._seq
                self._seq += 1
        present = {p.uid for p in pods}
        for uid in [u for u in first_seen if u not in present]:
            del first_seen[uid]
        pods.sort(key=lambda p: first_seen[p.uid])
        admitted, rejected = self._admission.admit(pods)
        for pod, rejection in rejected:
            self._rejected[pod.uid] = (pod, self._status.report_rejection(pod, rejection, now))
        self._rejected = {
            uid: (next(p for p in pods if p.uid == uid), status)
            for uid, (_, status) in self._rejected.items()
            if uid in present
        }
        states: dict[str, PodState] = {}
        for pod in admitted:
            st = self.states.get(pod.uid)
            if st is None:
                st = PodState(pod, first_seen[pod.uid], now, has_probes(pod))
            elif st.pod is not pod:
                st.has_probes = has_probes(pod)
                st.pod = pod
            states[pod.uid] = st
        for uid, old in self.states.items():
            if uid not in states:
                self._on_leave(old.pod)
        self._on_desired(states)
        self.states = states

    def evict(self, pod: Pod, rejection: Rejection, now: float) -> None:
        """Evict an admitted pod: it leaves the desired pods (its containers are stopped as for
        a deleted pod) and is listed with phase Failed and the rejection's reason and message,
        with an event, until its source drops it."""
        with self._lock:
            old = self.states.get(pod.uid)
            if old is None:
                return
            self._admission.evict(pod.uid, rejection)
            self._rejected[pod.uid] = (
                old.pod,
                self._status.report_rejection(old.pod, rejection, now),
            )
            states = {uid: st for uid, st in self.states.items() if uid != pod.uid}
            self._on_leave(old.pod)
            self._on_desired(states)
            self.states = states
        self._on_changed()

    def report(self, uid: str) -> PodReport | None:
        """The report of one pod (``reports``), or None for a pod the node does not show."""
        with self._lock:
            st = self.states.get(uid)
            if st is not None:
                return PodReport(st.pod, st.published.status, st.first_seen, self._node_name)
            refused = self._rejected.get(uid)
        if refused is None:
            return None
        pod, status = refused
        return PodReport(pod, status, parse_time(status.start_time) or 0.0, self._node_name)

    def reports(self) -> list[PodReport]:
        """Desired pods (in first-seen order) and refused ones, each with its status as
        published: the same objects until they change, nothing rebuilt (``listing`` renders
        them)."""
        with self._lock:
            out: list[tuple[int, PodReport]] = [
                (st.seq, PodReport(st.pod, st.published.status, st.first_seen, self._node_name))
                for st in self.states.values()
            ]
            for uid, (pod, status) in self._rejected.items():
                seen = parse_time(status.start_time) or 0.0
                out.append(
                    (self._first_seen.get(uid, 0), PodReport(pod, status, seen, self._node_name))
                )
        out.sort(key=lambda item: item[0])
        return [report for _, report in out]

    def listing(self) -> list[Pod]:
        """Desired pods (in first-seen order) with their status filled in, refused ones too,
        as the API server would show them (``as_reported``)."""
        return [report.as_pod() for report in self.reports()]


class PodReport(NamedTuple):
    """A pod as the agent reports it, not yet rendered: its desired version and the status
    object its worker last published (None before its first sync)."""

    pod: Pod
    status: PodStatus | None
    first_seen: float
    node_name: str

    def as_pod(self) -> Pod:
        """The pod as the API server would show it (``as_reported``)."""
        return as_reported(self.pod, self.status or PodStatus(), self.first_seen, self.node_name)

    def reported_status(self) -> PodStatus:
        """The status of ``as_pod()``, without rendering the rest of the pod."""
        return reported_status(self.pod, self.status or PodStatus())


def as_reported(pod: Pod, status: PodStatus, first_seen: float, node_name: str) -> Pod:
    """The pod as the API server would show it: bound to this node, created when the agent
    first saw it (a time the source gave is kept), with its QoS class."""
    meta = pod.metadata
    if not meta.creation_timestamp:
        meta = attrs.evolve(meta, creation_timestamp=rfc3339(first_seen))
    spec = pod.spec
    if node_name and not spec.node_name:
        spec = attrs.evolve(spec, node_name=node_name)
    return attrs.evolve(pod, metadata=meta, spec=spec, status=reported_status(pod, status))


def reported_status(pod: Pod, status: PodStatus) -> PodStatus:
    """``status`` as the API server would show it: with the pod's QoS class."""
    return status if status.qos_class else attrs.evolve(status, qos_class=qos_class(pod))
