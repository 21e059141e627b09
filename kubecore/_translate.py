"""Pod spec -> runtime-neutral configs (sandbox, container, DNS), and the container spec hash.

Everything here is pure: the agent reads resolv.conf, prepares volumes and termination-message
files, and passes their results in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import attrs

from kubecore._model import Container, Pod, ResourceRequirements
from kubecore._quantity import cpu_millis, memory_bytes
from kubecore._runtime import (
    CONTAINER_NAME_LABEL,
    GRACE_PERIOD_ANNOTATION,
    HASH_ANNOTATION,
    INIT_CONTAINER_ANNOTATION,
    MANAGED_LABEL,
    NODE_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    RESOURCES_ANNOTATION,
    RESTART_COUNT_ANNOTATION,
    SANDBOX_CONTAINER_NAME,
    TERMINATION_MESSAGE_PATH_ANNOTATION,
    ContainerConfig,
    ContainerResources,
    DNSConfig,
    Mount,
    PortMapping,
    SandboxConfig,
)

SANDBOX_HASH_ANNOTATION = "io.kubecore.sandbox.hash"
"""Hash of what a sandbox is built from (ports, host network, hostname, DNS policy)."""

MIN_SHARES = 2
SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000
CPU_PERIOD_US = 100_000
MIN_QUOTA_PERIOD_US = 1000
MAX_HOSTNAME = 63
# Today's kubelet limits (validation.MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars).
MAX_DNS_NAMESERVERS = 3
MAX_DNS_SEARCH_PATHS = 32
MAX_DNS_SEARCH_CHARS = 2048
CLUSTER_FIRST_OPTIONS = ("ndots:5",)


@attrs.frozen
class ResolvConf:
    """What a resolv.conf file says."""

    nameservers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[str, ...] = ()


def parse_resolv_conf(text: str) -> ResolvConf:
    """Read resolv.conf text as the kubelet does.

    ``nameserver`` lines accumulate, the last ``search`` line wins, ``options`` accumulate (a later
    option of the same name replaces an earlier one); comments (``#``, ``;``) and blank lines are
    ignored.
    """
    nameservers: list[str] = []
    searches: list[str] = []
    options: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith(("#", ";")):
            continue
        key, values = fields[0], fields[1:]
        if key == "nameserver":
            nameservers.extend(values)
        elif key == "search":
            searches = [s.rstrip(".") for s in values if s != "."]
        elif key == "options":
            for option in values:
                options.pop(option.split(":", 1)[0], None)
                options[option.split(":", 1)[0]] = option
    return ResolvConf(tuple(nameservers), tuple(searches), tuple(options.values()))


# --- the container hash -----------------------------------------------------------------------
#
# Containers are frozen but hold dicts, so they are unhashable and cannot key an lru_cache. Digests
# are memoised on the object itself (``derived``): the steady state hashes nothing, and no module
# keeps a cache.

_NO_DEFAULT = object()
_FieldPlan = tuple[tuple[str, Any], ...]
_field_plans: dict[type, _FieldPlan] = {}


def _field_plan(cls: type) -> _FieldPlan:
    """(name, default value or ``_NO_DEFAULT``) of each field of an attrs class, made once."""
    plan = _field_plans.get(cls)
    if plan is None:
        fields = []
        for field in attrs.fields(cls):
            default = field.default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                value = _NO_DEFAULT if default.takes_self else default.factory()
            elif default is attrs.NOTHING:
                value = _NO_DEFAULT
            else:
                value = default
            fields.append((field.name, value))
        plan = _field_plans[cls] = tuple(fields)
    return plan


def _canonical(value: Any) -> Any:
    """JSON-able form of a spec value. Fields still at their default are left out, so adding an
    optional field to the model does not change existing hashes (and restart every container)."""
    cls = type(value)
    if cls in (str, int, float, bool) or value is None:
        return value
    if attrs.has(cls):
        out: dict[str, Any] = {}
        for name, default in _field_plan(cls):
            item = getattr(value, name)
            if default is not _NO_DEFAULT and item == default:
                continue
            out[name] = _canonical(item)
        return out
    if isinstance(value, (tuple, list)):
        return [_canonical(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    return value


def _digest(value: Any) -> str:
    text = json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def container_hash(container: Container) -> str:
    """A stable digest of the container's spec (16 hex chars of sha256 over canonical JSON).

    Equal specs give equal hashes in every process; any spec change changes it. Memoised on the
    ``Container`` object, so repeated calls in the steady state cost a dict lookup.
    """
    derived = container.derived
    digest: str | None = derived.get("hash")
    if digest is None:
        if container.resize_policy:  # its resources are resized, not a change of spec
            digest = _digest(attrs.evolve(container, resources=ResourceRequirements()))
        else:
            digest = _digest(container)
        derived["hash"] = digest
    return digest


def resources_record(container: Container) -> str:
    """The canonical JSON of a container's resources, as ``RESOURCES_ANNOTATION`` keeps it."""
    derived = container.derived
    text: str | None = derived.get("resources")
    if text is None:
        value = _canonical(container.resources)
        text = derived["resources"] = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text


def container_resources(container: Container) -> ContainerResources:
    """The Linux resources of a container: CPU shares from the request (else the limit), a CFS
    quota from the limit, the memory limit."""
    requests, limits = container.resources.requests, container.resources.limits
    # Kubernetes defaults a missing cpu request to the limit.
    request_milli = _cpu_millis_of(requests) or _cpu_millis_of(limits)
    quota = milli_cpu_to_quota(_cpu_millis_of(limits))
    memory = limits.get("memory")
    return ContainerResources(
        cpu_shares=milli_cpu_to_shares(request_milli),
        cpu_quota=quota,
        cpu_period=CPU_PERIOD_US if quota is not None else None,
        memory_limit=memory_bytes(memory) if memory else None,
    )


def _sandbox_digest(pod: Pod) -> str:
    spec = pod.spec
    return _digest(
        {
            "hostname": pod.metadata.name,
            "host_network": spec.host_network,
            "dns_policy": spec.dns_policy,
            "ports": [_canonical(p) for c in spec.containers for p in c.ports],
        }
    )


def sandbox_hash(pod: Pod) -> str:
    """A stable digest of what the pod's sandbox is built from; a change means a new sandbox."""
    derived = pod.derived
    digest: str | None = derived.get("sandbox_hash")
    if digest is None:
        digest = derived["sandbox_hash"] = _sandbox_digest(pod)
    return digest


# --- resources ----------------------------------------------------------------------------------


def milli_cpu_to_shares(milli: int) -> int | None:
    """0 -> None (unset, the kernel default); else ``milli * 1024 // 1000``, at least 2."""
    if milli <= 0:
        return None
    return max(milli * SHARES_PER_CPU // MILLI_CPU_TO_CPU, MIN_SHARES)


def milli_cpu_to_quota(milli: int, period: int = CPU_PERIOD_US) -> int | None:
    """The CFS quota for a CPU limit over ``period`` microseconds (at least 1 ms); 0 -> None."""
    if milli <= 0:
        return None
    return max(milli * period // MILLI_CPU_TO_CPU, MIN_QUOTA_PERIOD_US)


# --- labels -------------------------------------------------------------------------------------


def pod_labels(pod: Pod, node_name: str = "") -> dict[str, str]:
    """The labels that mark an object as kubecore's, name its pod and (if given) its node."""
    meta = pod.metadata
    labels = {
        MANAGED_LABEL: "true",
        POD_NAME_LABEL: meta.name,
        POD_NAMESPACE_LABEL: meta.namespace,
        POD_UID_LABEL: meta.uid,
    }
    if node_name:
        labels[NODE_LABEL] = node_name
    return labels


def _hostname(name: str) -> str:
    # As the kubelet: truncate to 63 and never end in '-' or '.'.
    return name[:MAX_HOSTNAME].rstrip("-.") if len(name) > MAX_HOSTNAME else name


def _protocol(value: str) -> str:
    upper = str(value).upper()
    return upper if upper in ("TCP", "UDP", "SCTP") else "TCP"


def sandbox_config(
    pod: Pod,
    attempt: int,
    *,
    dns: DNSConfig | None,
    sandbox_image: str = "",
    node_name: str = "",
) -> SandboxConfig:
    """The sandbox of a pod: hostname, every app container's ports (a port whose hostPort is 0 is
    listed but not bound by adapters), host network, DNS, labels and annotations.

    The pod's own labels and annotations are carried too; kubecore's keys win over them.
    """
    meta, spec = pod.metadata, pod.spec
    ports = tuple(
        PortMapping(
            container_port=p.container_port,
            host_port=p.host_port,
            host_ip=p.host_ip,
            protocol=_protocol(p.protocol),
        )
        for c in spec.containers
        for p in c.ports
    )
    labels = {
        **meta.labels,
        **pod_labels(pod, node_name),
        CONTAINER_NAME_LABEL: SANDBOX_CONTAINER_NAME,
    }
    annotations = {
        **meta.annotations,
        GRACE_PERIOD_ANNOTATION: str(spec.termination_grace_period_seconds),
        SANDBOX_HASH_ANNOTATION: sandbox_hash(pod),
    }
    return SandboxConfig(
        name=meta.name,
        namespace=meta.namespace,
        uid=meta.uid,
        attempt=attempt,
        # A host-network pod keeps the node's hostname, as the kubelet does.
        hostname="" if spec.host_network else _hostname(meta.name),
        host_network=spec.host_network,
        ports=ports,
        dns=dns,
        labels=labels,
        annotations=annotations,
        image=sandbox_image,
    )


# --- DNS ----------------------------------------------------------------------------------------


def _unique(items: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _fit_searches(searches: tuple[str, ...]) -> tuple[str, ...]:
    kept: list[str] = []
    chars = 0
    for domain in searches[:MAX_DNS_SEARCH_PATHS]:
        # resolv.conf's search line: domains joined by single spaces.
        cost = len(domain) + (1 if kept else 0)
        if chars + cost > MAX_DNS_SEARCH_CHARS:
            break
        kept.append(domain)
        chars += cost
    return tuple(kept)


def _fit(
    servers: tuple[str, ...], searches: tuple[str, ...], options: tuple[str, ...]
) -> DNSConfig:
    return DNSConfig(
        servers=_unique(servers)[:MAX_DNS_NAMESERVERS],
        searches=_fit_searches(_unique(searches)),
        options=options,
    )


def dns_config(
    pod: Pod, *, cluster_dns: tuple[str, ...], cluster_domain: str, host: ResolvConf
) -> DNSConfig | None:
    """The pod's resolver settings for its DNS policy.

    * ``ClusterFirst``: the cluster DNS servers then the host's nameservers; search
      ``<ns>.svc.<domain>``, ``svc.<domain>``, ``<domain>``, then the host's; ``ndots:5``.
      A hostNetwork pod, or a node with no cluster DNS, gets ``Default`` instead.
    * ``ClusterFirstWithHostNet``: ``ClusterFirst``, even on the host network.
    * ``Default``: the host's resolv.conf (None when it says nothing: the runtime's default).
    * ``None``: an empty config (the pod names no resolver).

    Lists are capped as today's kubelet does: 3 nameservers, 32 search domains / 2048 chars.
    """
    policy = pod.spec.dns_policy
    if policy == "None":
        return DNSConfig()
    cluster_first = policy == "ClusterFirstWithHostNet" or (
        policy == "ClusterFirst" and not pod.spec.host_network
    )
    if cluster_first and cluster_dns:
        searches = host.searches
        if cluster_domain:
            ns = pod.metadata.namespace
            own = (f"{ns}.svc.{cluster_domain}", f"svc.{cluster_domain}", cluster_domain)
            searches = own + searches
        return _fit(tuple(cluster_dns) + host.nameservers, searches, CLUSTER_FIRST_OPTIONS)
    if not (host.nameservers or host.searches or host.options):
        return None
    return _fit(host.nameservers, host.searches, host.options)


# --- containers ---------------------------------------------------------------------------------


def _cpu_millis_of(resources: Mapping[str, str]) -> int:
    value = resources.get("cpu")
    return cpu_millis(value) if value else 0


def container_config(
    pod: Pod,
    container: Container,
    *,
    restart_count: int,
    volume_paths: Mapping[str, str],
    termination_message_host_path: str = "",
    is_init: bool = False,
    node_name: str = "",
) -> ContainerConfig:
    """One run of a container: env in spec order, binds, resources, labels and annotations.

    ``volume_paths`` maps each volume name to its host directory; a mount naming a volume that is
    not there raises ``ValueError`` (validation rejects such pods first).
    """
    mounts: list[Mount] = []
    for vm in container.volume_mounts:
        try:
            host_path = volume_paths[vm.name]
        except KeyError:
            raise ValueError(
                f"container {container.name!r} mounts volume {vm.name!r},"
                " which the pod does not define"
            ) from None
        mounts.append(Mount(host_path, vm.mount_path, vm.read_only))
    if termination_message_host_path and container.termination_message_path:
        mounts.append(Mount(termination_message_host_path, container.termination_message_path))

    resources = container_resources(container)
    labels = pod_labels(pod, node_name)
    labels[CONTAINER_NAME_LABEL] = container.name
    annotations = {
        HASH_ANNOTATION: container_hash(container),
        RESTART_COUNT_ANNOTATION: str(restart_count),
        TERMINATION_MESSAGE_PATH_ANNOTATION: container.termination_message_path,
        INIT_CONTAINER_ANNOTATION: "true" if is_init else "false",
        GRACE_PERIOD_ANNOTATION: str(pod.spec.termination_grace_period_seconds),
    }
    if container.resize_policy:
        annotations[RESOURCES_ANNOTATION] = resources_record(container)
    return ContainerConfig(
        name=container.name,
        image=container.image,
        command=tuple(container.command),
        args=tuple(container.args),
        working_dir=container.working_dir,
        env=tuple((e.name, e.value) for e in container.env),
        mounts=tuple(mounts),
        labels=labels,
        annotations=annotations,
        attempt=restart_count,
        cpu_shares=resources.cpu_shares,
        cpu_quota=resources.cpu_quota,
        cpu_period=resources.cpu_period,
        memory_limit=resources.memory_limit,
        privileged=container.privileged,
        stdin=container.stdin,
        stdin_once=container.stdin_once,
        tty=container.tty,
        stop_signal=container.lifecycle.stop_signal if container.lifecycle else "",
    )
