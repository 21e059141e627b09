"""``KubeletConfig``: the agent's settings, one frozen value checked when it is made."""

from __future__ import annotations

import attrs

from kubecore._agent.admission.node_fit import node_labels, parse_node_labels
from kubecore._agent.admission.pod_security import (
    DEFAULT_ALLOWED_HOST_PORTS,
    PodSecurityPolicy,
    make_policy,
)
from kubecore._agent.config_bounds import config_problems
from kubecore._contract.errors import InvalidKubeletConfig


@attrs.frozen
class KubeletConfig:
    """The agent's settings, checked when made (``InvalidKubeletConfig`` names every problem:
    the ranges are ``kubecore._agent.config_bounds``'s)."""

    node_name: str = "kubecore-node"
    root_dir: str = "/var/lib/kubecore"
    resync_interval: float = 60.0
    relist_interval: float = 1.0
    housekeeping_interval: float = 2.0
    allow_privileged: bool = False
    """Privileged containers and host namespaces (hostNetwork, hostPID, hostIPC) are let in,
    by the node's own rule and by the pod-security policy."""
    allowed_unsafe_sysctls: tuple[str, ...] = ()
    """Sysctls outside the safe set that pods may set (``name`` or ``prefix*``), if namespaced;
    the pod-security policy lets them in too."""
    pod_security: str = "baseline"
    """The Pod Security Standards level new pods must meet: ``privileged`` (no check),
    ``baseline`` or ``restricted`` (``kubecore._agent.admission.pod_security``)."""
    allowed_host_paths: tuple[str, ...] = ()
    """Host paths pods may mount under ``baseline`` and ``restricted`` (``PREFIX`` or
    ``PREFIX:ro``: the path and what is under it; a socket only when named exactly)."""
    allowed_host_ports: tuple[str, ...] = DEFAULT_ALLOWED_HOST_PORTS
    """The known list of host ports pods may use (``PORT`` or ``LOW-HIGH``; ``none``)."""
    cluster_dns: tuple[str, ...] = ()
    cluster_domain: str = "cluster.local"
    resolv_conf: str = "/etc/resolv.conf"
    sandbox_image: str = ""
    pull_qps: float = 5.0
    pull_burst: int = 10
    max_pods: int = 110
    workers: int = 8
    container_gc_interval: float = 60.0
    gc_max_dead_per_container: int = 1
    gc_min_age: float = 0.0
    image_gc_interval: float = 300.0
    image_gc_high: int = 85
    image_gc_low: int = 80
    image_min_age: float = 120.0
    max_events: int = 1000
    backoff_initial: float = 10.0
    """First CrashLoopBackOff / ImagePullBackOff delay in seconds; it doubles at each failure."""
    backoff_max: float = 300.0
    """The cap of those delays."""
    host_ip: str = ""
    pvc_dir: str = ""
    """A persistentVolumeClaim volume mounts ``<pvc_dir>/<namespace>/<claimName>`` (which must
    exist); empty: such pods are refused at admission, there being no API server to bind
    claims."""
    node_labels: tuple[str, ...] = ()
    """``key=value`` labels of the node (each entry may hold several, comma separated), beside
    the well-known ``kubernetes.io/hostname``, ``/os`` and ``/arch`` it always has."""
    container_log_max_size: str = "10Mi"
    """The size (a quantity: ``10Mi``) at which a container's log file is rotated, for
    runtimes that write log files (``kubecore.runtime.ContainerLogReopener``)."""
    container_log_max_files: int = 5
    """A container's log files kept at most, the live one included."""
    eviction_hard: tuple[str, ...] = ()
    """Hard eviction thresholds (``memory.available<100Mi``, ``nodefs.available<10%``; each
    entry may hold several, comma separated), each replacing the default for its signal
    (``kubecore._housekeeping.eviction.DEFAULT_EVICTION_HARD``): the Node's pressure conditions."""

    def __attrs_post_init__(self) -> None:
        problems = config_problems(attrs.fields(type(self)), self)
        if problems:
            raise InvalidKubeletConfig(problems)

    def labels(self) -> dict[str, str]:
        """The node's labels: the well-known ones, then ``node_labels`` (which may override)."""
        return node_labels(self.node_name, parse_node_labels(self.node_labels))

    def pod_security_policy(self) -> PodSecurityPolicy:
        """The pod-security policy these settings make."""
        return make_policy(
            self.pod_security,
            self.allowed_host_paths,
            self.allowed_host_ports,
            self.allowed_unsafe_sysctls,
            self.allow_privileged,
        )
