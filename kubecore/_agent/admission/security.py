"""Pod admission: privileged containers and host namespaces, the node's pod-security policy
(``pod_security``: the Pod Security Standards' levels), the security context the node can
honour (sysctls, AppArmor, SELinux, user namespaces), gRPC probes without the gRPC client,
persistentVolumeClaims without ``--pvc-dir``, the node's pod limit, the resources the node does not
have (hugepages, extended resources), the node's labels (``nodeSelector``, required node affinity)
and host-port conflicts (the earlier pod wins); a cordoned node refuses new API pods
(``cordon``).

A rejected pod is not dropped: it stays listed with phase Failed, a reason and a message, and an
event says why (as the kubelet's ``rejectPod``); the reason names the rule that refused it.
Rejection is final for that pod UID.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from kubecore._agent.admission.cordon import (
    NODE_UNSCHEDULABLE,
    SCHEDULABLE,
    CordonView,
    cordon_refusal,
)
from kubecore._agent.admission.node_fit import (
    NODE_AFFINITY,
    NODE_AFFINITY_MESSAGE,
    insufficient_resource,
    node_labels,
    pod_matches_node,
    scheduler_only_fields,
)
from kubecore._agent.admission.pod_security import (
    POD_SECURITY,
    PodSecurityPolicy,
    forbidden_message,
    violations,
)
from kubecore._kuberuntime.security import HostSecurity, security_refusal
from kubecore._model.v1 import Pod
from kubecore._prober.health import grpc_unavailable
from kubecore._status.rejection import Rejection

logger = logging.getLogger(__name__)

HOST_PORT_CONFLICT = "HostPortConflict"
OUT_OF_PODS = "OutOfpods"
PRIVILEGED_NOT_ALLOWED = "PrivilegedNotAllowed"
UNBOUND_CLAIM = "UnboundPersistentVolumeClaim"
HOST_NAMESPACES_NOT_ALLOWED = "HostNamespacesNotAllowed"
GRPC_PROBES_UNAVAILABLE = "GRPCProbesUnavailable"


def privileged_rejection(pod: Pod) -> Rejection | None:
    """A node that does not allow privileged containers refuses a pod that asks for one."""
    spec = pod.spec
    for container in (*spec.init_containers, *spec.containers, *spec.ephemeral_containers):
        if container.privileged:
            return Rejection(
                PRIVILEGED_NOT_ALLOWED,
                f"Pod was rejected: container {container.name} asks to run privileged, and this"
                " node does not allow privileged containers (KubeletConfig.allow_privileged is"
                " False)",
            )
    return None


def pod_security_rejection(pod: Pod, policy: PodSecurityPolicy) -> Rejection | None:
    """A pod that breaks the node's pod-security policy, with every violation."""
    found = violations(pod, policy)
    if not found:
        return None
    return Rejection(POD_SECURITY, f"Pod was rejected: {forbidden_message(found, policy.level)}")


def claim_rejection(pod: Pod) -> Rejection | None:
    """Without an API server nothing binds a persistentVolumeClaim: a pod using one is refused
    unless the node maps claims to directories (``--pvc-dir``)."""
    for i, volume in enumerate(pod.spec.volumes):
        if volume.persistent_volume_claim is not None:
            claim = volume.persistent_volume_claim.claim_name
            return Rejection(
                UNBOUND_CLAIM,
                f"Pod was rejected: spec.volumes[{i}].persistentVolumeClaim: claim {claim!r}"
                " cannot be bound, there is no API server; give the agent --pvc-dir DIR to"
                " mount DIR/<namespace>/<claimName> for it",
            )
    return None


def host_namespaces_rejection(pod: Pod) -> Rejection | None:
    """hostPID and hostIPC give a pod the node's processes and IPC: gated like privileged."""
    asked = [
        name for name, on in (("hostPID", pod.spec.host_pid), ("hostIPC", pod.spec.host_ipc)) if on
    ]
    if not asked:
        return None
    return Rejection(
        HOST_NAMESPACES_NOT_ALLOWED,
        f"Pod was rejected: the pod asks for {' and '.join(asked)}, and this node does not allow"
        " host namespaces (KubeletConfig.allow_privileged is False)",
    )


def node_fit_rejection(pod: Pod, labels: Mapping[str, str], node_name: str) -> Rejection | None:
    """The pod's node selector and required node affinity against this node's labels."""
    if pod_matches_node(pod, labels, node_name):
        return None
    return Rejection(NODE_AFFINITY, f"Pod was rejected: {NODE_AFFINITY_MESSAGE}")


def grpc_probe_paths(pod: Pod) -> list[str]:
    """The field paths of the pod's gRPC probes."""
    paths = []
    groups = (("initContainers", pod.spec.init_containers), ("containers", pod.spec.containers))
    for group, containers in groups:
        for i, c in enumerate(containers):
            for kind, probe in (
                ("livenessProbe", c.liveness_probe),
                ("readinessProbe", c.readiness_probe),
                ("startupProbe", c.startup_probe),
            ):
                if probe is not None and probe.grpc is not None:
                    paths.append(f"spec.{group}[{i}].{kind}.grpc")
    return paths


def grpc_rejection(pod: Pod) -> Rejection | None:
    """A pod with gRPC probes is refused where the gRPC client is not installed."""
    paths = grpc_probe_paths(pod)
    if not paths:
        return None
    missing = grpc_unavailable()
    if not missing:
        return None
    return Rejection(GRPC_PROBES_UNAVAILABLE, f"Pod was rejected: {paths[0]}: {missing}")


HostPortKey = tuple[str, int, str]


def host_ports(pod: Pod) -> list[HostPortKey]:
    """(host IP, host port, protocol) of every port the pod binds on the host.

    hostNetwork pods bind their container ports on the host too. hostPort 0 binds nothing.
    """
    keys: list[HostPortKey] = []
    for container in (*pod.spec.init_containers, *pod.spec.containers):
        for port in container.ports:
            host_port = port.host_port
            if pod.spec.host_network and not host_port:
                host_port = port.container_port
            if host_port:
                keys.append((port.host_ip, host_port, (port.protocol or "TCP").upper()))
    return keys


def _conflicts(key: HostPortKey, used: dict[tuple[int, str], set[str]]) -> bool:
    ips = used.get((key[1], key[2]))
    if not ips:
        return False
    ip = key[0]
    wildcard = ("", "0.0.0.0", "::")
    return ip in wildcard or ip in ips or any(u in wildcard for u in ips)


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

        used: dict[tuple[int, str], set[str]] = {}
        admitted: list[Pod] = []
        new: list[Pod] = []
        for pod in pods:
            if pod.uid in self._rejected:
                continue
            if pod.uid in self._admitted:
                self._admitted[pod.uid] = pod
                admitted.append(pod)
                for ip, port, proto in host_ports(pod):
                    used.setdefault((port, proto), set()).add(ip)
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
            for ip, port, proto in host_ports(pod):
                used.setdefault((port, proto), set()).add(ip)
        order = {p.uid: i for i, p in enumerate(pods)}
        admitted.sort(key=lambda p: order[p.uid])
        return admitted, rejected

    def _check(
        self, pod: Pod, used: dict[tuple[int, str], set[str]], count: int
    ) -> Rejection | None:
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
        mine: dict[tuple[int, str], set[str]] = {}
        for key in host_ports(pod):
            if _conflicts(key, used) or _conflicts(key, mine):
                ip, port, proto = key
                where = f"{ip}:{port}" if ip else str(port)
                owner = "this pod" if _conflicts(key, mine) else "another pod"
                return Rejection(
                    HOST_PORT_CONFLICT,
                    f"Pod was rejected: host port {where}/{proto} is already used by {owner}",
                )
            mine.setdefault((key[1], key[2]), set()).add(key[0])
        return None
