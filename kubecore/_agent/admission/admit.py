"""Pod admission: whether the agent takes a desired pod onto this node, rule by rule in this
order: a cordoned node refuses new API pods (``cordon``), privileged containers and host
namespaces and the pod-security policy (``security``), the security context the node can honour
(``kubecore._kuberuntime.security``), claims and gRPC probes the node cannot serve
(``features``), the node's pod limit, the resources and labels the node does not have
(``node_fit``), host-port conflicts (``host_ports``: the earlier pod wins).

A rejected pod is not dropped: it stays listed with phase Failed, a reason and a message, and an
event says why (as the kubelet's ``rejectPod``); the reason names the rule that refused it.
Rejection is final for that pod UID.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Mapping

from kubecore._agent.admission.cordon import cordon_refusal
from kubecore._agent.admission.features import claim_rejection, grpc_rejection
from kubecore._agent.admission.host_ports import HostPortsInUse, host_port_rejection, mark_used
from kubecore._agent.admission.node_fit import (
    insufficient_resource,
    node_fit_rejection,
    node_labels,
    scheduler_only_fields,
)
from kubecore._agent.admission.pod_security import PodSecurityPolicy
from kubecore._agent.admission.security import (
    host_namespaces_rejection,
    pod_security_rejection,
    privileged_rejection,
)
from kubecore._kuberuntime.security import HostSecurity, security_refusal
from kubecore._model.node_record import NODE_UNSCHEDULABLE, SCHEDULABLE, CordonView
from kubecore._model.rejection import Rejection
from kubecore._model.v1 import Pod

logger = logging.getLogger(__name__)

OUT_OF_PODS = "OutOfpods"


def _log_scheduler_only_fields(pod: Pod) -> None:
    if logger.isEnabledFor(logging.DEBUG) and (fields := scheduler_only_fields(pod)):
        logger.debug(
            "pod %s/%s: accepted, not acted on by a node (scheduler / API server fields): %s",
            pod.metadata.namespace,
            pod.metadata.name,
            ", ".join(fields),
            extra={"pod": pod.full_name},
        )


class Admission:
    """Remembers which pods were admitted or rejected, so that the earlier pod keeps winning."""

    def __init__(
        self,
        *,
        max_pods: int = 110,
        allow_privileged: bool = False,
        claims_served: bool = False,
        node_name: str = "",
        labels: Mapping[str, str] | None = None,
        host_security: HostSecurity | None = None,
        allowed_unsafe_sysctls: tuple[str, ...] = (),
        cordon: Callable[[], CordonView] = lambda: SCHEDULABLE,
        pod_security: PodSecurityPolicy | None = None,
    ) -> None:
        self.max_pods = max_pods
        self.allow_privileged = allow_privileged
        self.claims_served = claims_served
        self.node_name = node_name
        self.labels: Mapping[str, str] = node_labels(node_name) if labels is None else labels
        """The node's labels ``nodeSelector`` and node affinity are checked against."""
        self.host_security = host_security or HostSecurity()
        self.allowed_unsafe_sysctls = allowed_unsafe_sysctls
        self.cordon = cordon
        self.pod_security = pod_security or PodSecurityPolicy(
            unsafe_sysctls=allowed_unsafe_sysctls, host_namespaces=allow_privileged
        )
        """The Pod Security Standards level new pods must meet (``pod_security``)."""
        """Whether the node is cordoned, the API pods it keeps and refused (read once a pass
        that has new pods: ``kubecore._agent.admission.cordon``)."""
        self._admitted: dict[str, Pod] = {}
        self._rejected: dict[str, Rejection] = {}

    def rejection(self, uid: str) -> Rejection | None:
        return self._rejected.get(uid)

    def evict(self, uid: str, rejection: Rejection) -> None:
        """Turn an admitted pod into a refused one (the kubelet's eviction): it stays refused
        for its UID, as a rejection does."""
        self._admitted.pop(uid, None)
        self._rejected[uid] = rejection

    def preview(self, pods: Iterable[Pod]) -> tuple[list[Pod], list[tuple[Pod, Rejection]]]:
        """What ``admit`` would answer now, every pod refused with its rejection (those refused
        before too), leaving what it remembers as it is (a plan admits without deciding)."""
        trial = copy.copy(self)
        trial._admitted = dict(self._admitted)
        trial._rejected = dict(self._rejected)
        pods = list(pods)
        admitted, _new = trial.admit(pods)
        refused = [(pod, trial._rejected[pod.uid]) for pod in pods if pod.uid in trial._rejected]
        return admitted, refused

    def admit(self, pods: Iterable[Pod]) -> tuple[list[Pod], list[tuple[Pod, Rejection]]]:
        """Split ``pods`` (in first-seen order) into admitted pods and new rejections.

        Pods already admitted stay admitted (their spec is refreshed); pods already rejected stay
        rejected; forgotten pods (not in ``pods``) are dropped from both sets.
        """
        pods = list(pods)
        present = {p.uid for p in pods}
        for uid in [u for u in self._admitted if u not in present]:
            del self._admitted[uid]
        for uid in [u for u in self._rejected if u not in present]:
            del self._rejected[uid]

        used: HostPortsInUse = {}
        admitted: list[Pod] = []
        new: list[Pod] = []
        for pod in pods:
            if pod.uid in self._rejected:
                continue
            if pod.uid in self._admitted:
                self._admitted[pod.uid] = pod
                admitted.append(pod)
                mark_used(pod, used)
            else:
                new.append(pod)

        rejected: list[tuple[Pod, Rejection]] = []
        view = self.cordon() if new else SCHEDULABLE
        for pod in new:
            cordoned = cordon_refusal(pod, view, self.node_name)
            rejection = (
                Rejection(NODE_UNSCHEDULABLE, cordoned)
                if cordoned
                else self._check(pod, used, len(admitted))
            )
            if rejection is not None:
                self._rejected[pod.uid] = rejection
                rejected.append((pod, rejection))
                continue
            self._admitted[pod.uid] = pod
            admitted.append(pod)
            _log_scheduler_only_fields(pod)
            mark_used(pod, used)
        order = {p.uid: i for i, p in enumerate(pods)}
        admitted.sort(key=lambda p: order[p.uid])
        return admitted, rejected

    def _check(self, pod: Pod, used: HostPortsInUse, count: int) -> Rejection | None:
        if not self.allow_privileged:
            refused = privileged_rejection(pod) or host_namespaces_rejection(pod)
            if refused is not None:
                return refused
        if not self.claims_served and (refused := claim_rejection(pod)) is not None:
            return refused
        security = security_refusal(pod, self.host_security, self.allowed_unsafe_sysctls)
        if security is not None:
            return Rejection(*security)
        if (refused := pod_security_rejection(pod, self.pod_security)) is not None:
            return refused
        if (refused := grpc_rejection(pod)) is not None:
            return refused
        if count >= self.max_pods:
            return Rejection(
                OUT_OF_PODS,
                f"Pod was rejected: the node already runs its maximum of {self.max_pods} pods",
            )
        # The node has no hugepages or extended resources, so nothing is in use either.
        if (short := insufficient_resource(pod, {})) is not None:
            return Rejection(short[0], f"Pod was rejected: {short[1]}")
        if (unfit := node_fit_rejection(pod, self.labels, self.node_name)) is not None:
            return unfit
        return host_port_rejection(pod, used)
