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

from kubecore._contract.labels import SANDBOX_HASH_ANNOTATION as SANDBOX_HASH_ANNOTATION
from kubecore._contract.labels import (
    container_annotations,
    container_labels,
    sandbox_annotations,
    sandbox_labels,
)
from kubecore._contract.values import (
    ContainerConfig,
    ContainerResources,
    DNSConfig,
    Image,
    Mount,
    MountPropagation,
    NamespaceMode,
    NamespaceOption,
    PortMapping,
    SandboxConfig,
)
from kubecore._kuberuntime.security import container_security, pod_sysctls
from kubecore._model.quantity import cpu_millis, memory_bytes
from kubecore._model.v1 import Container, Pod, PodDNSConfig, ResourceRequirements
from kubecore._volumes.pod_dirs import PodVolume

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


def container_resources(container: Container, pod: Pod | None = None) -> ContainerResources:
    """The Linux resources of a container: CPU shares from the request (else the limit), a CFS
    quota from the limit, the memory limit. With its ``pod``, the pod-level limits stand in for
    those the container does not set (``effective_limits``)."""
    requests = container.resources.requests
    limits = container.resources.limits if pod is None else effective_limits(pod, container)
    # Kubernetes defaults a missing cpu request to the container's own limit.
    request_milli = _cpu_millis_of(requests) or _cpu_millis_of(container.resources.limits)
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
    built_from: dict[str, Any] = {
        "hostname": pod.metadata.name,
        "host_network": spec.host_network,
        "dns_policy": spec.dns_policy,
        "ports": [_canonical(p) for c in spec.containers for p in c.ports],
    }
    # Pod-level options, only when set: a pod without them keeps the hash it always had.
    options = {
        "pod_hostname": spec.hostname,
        "subdomain": spec.subdomain,
        "set_hostname_as_fqdn": spec.set_hostname_as_fqdn,
        "share_process_namespace": spec.share_process_namespace,
        "host_pid": spec.host_pid,
        "host_ipc": spec.host_ipc,
        "dns_config": spec.dns_config,
        # A changed pod-level securityContext reaches every container (and the sysctls the
        # sandbox holds) only through a new sandbox.
        "security_context": spec.security_context,
    }
    built_from.update((k, _canonical(v)) for k, v in options.items() if v not in (None, "", False))
    return _digest(built_from)


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


def _hostname(name: str) -> str:
    # As the kubelet: truncate to 63 and never end in '-' or '.'.
    return name[:MAX_HOSTNAME].rstrip("-.") if len(name) > MAX_HOSTNAME else name


MAX_FQDN = 64


def pod_hostname_and_domain(pod: Pod, cluster_domain: str) -> tuple[str, str]:
    """The pod's hostname (``spec.hostname``, else its name) and domain
    (``<subdomain>.<namespace>.svc.<cluster domain>`` when it has a subdomain, else '')."""
    spec = pod.spec
    hostname = spec.hostname or _hostname(pod.metadata.name)
    domain = ""
    if spec.subdomain and cluster_domain:
        domain = f"{spec.subdomain}.{pod.metadata.namespace}.svc.{cluster_domain}"
    return hostname, domain


def sandbox_hostname(pod: Pod, cluster_domain: str) -> str:
    """The hostname a pod's containers see: the FQDN when ``setHostnameAsFQDN`` and it has a
    domain. A FQDN longer than 64 characters raises ``ValueError`` (the kubelet's limit)."""
    hostname, domain = pod_hostname_and_domain(pod, cluster_domain)
    if not (pod.spec.set_hostname_as_fqdn and domain):
        return hostname
    fqdn = f"{hostname}.{domain}"
    if len(fqdn) > MAX_FQDN:
        raise ValueError(
            f"failed to construct FQDN from pod hostname and cluster domain, FQDN {fqdn} is too"
            f" long ({MAX_FQDN} characters is the max, {len(fqdn)} characters requested)"
        )
    return fqdn


def namespace_options(pod: Pod) -> NamespaceOption:
    """CRI's namespace modes for the pod's containers."""
    spec = pod.spec
    return NamespaceOption(
        network=NamespaceMode.NODE if spec.host_network else NamespaceMode.POD,
        pid=(
            NamespaceMode.NODE
            if spec.host_pid
            else NamespaceMode.POD
            if spec.share_process_namespace
            else NamespaceMode.CONTAINER
        ),
        ipc=NamespaceMode.NODE if spec.host_ipc else NamespaceMode.POD,
    )


_HOSTS_HEADER = """\
# Kubernetes-managed hosts file.
127.0.0.1\tlocalhost
::1\tlocalhost ip6-localhost ip6-loopback
fe00::0\tip6-localnet
fe00::0\tip6-mcastprefix
fe00::1\tip6-allnodes
fe00::2\tip6-allrouters
"""


def _host_alias_lines(pod: Pod) -> str:
    if not pod.spec.host_aliases:
        return ""
    lines = [f"{a.ip}\t{chr(9).join(a.hostnames)}\n" for a in pod.spec.host_aliases]
    return "\n# Entries added by HostAliases.\n" + "".join(lines)


def managed_hosts_file(
    pod: Pod, *, pod_ip: str, cluster_domain: str, node_hosts: str = ""
) -> str | None:
    """The ``/etc/hosts`` the kubelet writes for a pod (None: the pod keeps the runtime's own).

    A pod on the pod network gets localhost entries, its own IP with its FQDN and hostname, and
    its ``hostAliases``. A host-network pod sees the node's file (``node_hosts``), plus its
    ``hostAliases`` when it has some.
    """
    if pod.spec.host_network:
        if not pod.spec.host_aliases:
            return None
        return (
            "# Kubernetes-managed hosts file (host network).\n"
            + node_hosts
            + _host_alias_lines(pod)
        )
    hostname, domain = pod_hostname_and_domain(pod, cluster_domain)
    own = ""
    if pod_ip:
        own = (
            f"{pod_ip}\t{hostname}.{domain}\t{hostname}\n" if domain else f"{pod_ip}\t{hostname}\n"
        )
    return _HOSTS_HEADER + own + _host_alias_lines(pod)


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
    cluster_domain: str = "",
) -> SandboxConfig:
    """The sandbox of a pod: hostname, every app container's ports (a port whose hostPort is 0 is
    listed but not bound by adapters), host network, namespace modes, DNS, labels and
    annotations. Raises ``ValueError`` for a hostname the kubelet could not set.

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
    labels = {**meta.labels, **sandbox_labels(meta.name, meta.namespace, meta.uid, node_name)}
    annotations = {
        **meta.annotations,
        **sandbox_annotations(spec.termination_grace_period_seconds, sandbox_hash(pod)),
    }
    return SandboxConfig(
        name=meta.name,
        namespace=meta.namespace,
        uid=meta.uid,
        attempt=attempt,
        # A host-network pod keeps the node's hostname, as the kubelet does.
        hostname="" if spec.host_network else sandbox_hostname(pod, cluster_domain),
        host_network=spec.host_network,
        ports=ports,
        dns=dns,
        labels=labels,
        annotations=annotations,
        image=sandbox_image,
        namespace_options=namespace_options(pod),
        sysctls=pod_sysctls(pod),
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

    ``spec.dnsConfig`` is then merged in, as the kubelet does: its nameservers and searches are
    appended (duplicates dropped), its options replace those of the same name.
    Lists are capped as today's kubelet does: 3 nameservers, 32 search domains / 2048 chars.
    """
    base = _policy_dns(pod, cluster_dns=cluster_dns, cluster_domain=cluster_domain, host=host)
    extra = pod.spec.dns_config
    if extra is None:
        return None if base is None else _fit(base.nameservers, base.searches, base.options)
    base = base or ResolvConf()
    return _fit(
        base.nameservers + extra.nameservers,
        base.searches + extra.searches,
        _merge_dns_options(base.options, extra),
    )


def _policy_dns(
    pod: Pod, *, cluster_dns: tuple[str, ...], cluster_domain: str, host: ResolvConf
) -> ResolvConf | None:
    policy = pod.spec.dns_policy
    if policy == "None":
        return ResolvConf()
    cluster_first = policy == "ClusterFirstWithHostNet" or (
        policy == "ClusterFirst" and not pod.spec.host_network
    )
    if cluster_first and cluster_dns:
        searches = host.searches
        if cluster_domain:
            ns = pod.metadata.namespace
            own = (f"{ns}.svc.{cluster_domain}", f"svc.{cluster_domain}", cluster_domain)
            searches = own + searches
        return ResolvConf(tuple(cluster_dns) + host.nameservers, searches, CLUSTER_FIRST_OPTIONS)
    if not (host.nameservers or host.searches or host.options):
        return None
    return host


def _merge_dns_options(options: tuple[str, ...], extra: PodDNSConfig) -> tuple[str, ...]:
    merged = {option.split(":", 1)[0]: option for option in options}
    for option in extra.options:
        merged[option.name] = f"{option.name}:{option.value}" if option.value else option.name
    return tuple(merged.values())


# --- containers ---------------------------------------------------------------------------------


def _cpu_millis_of(resources: Mapping[str, str]) -> int:
    value = resources.get("cpu")
    return cpu_millis(value) if value else 0


def effective_limits(pod: Pod, container: Container) -> Mapping[str, str]:
    """The container's limits, with the pod-level limit of each resource (``spec.resources``)
    standing in for one the container does not set.

    A runtime without a pod cgroup (Docker) cannot bound the pod as a whole; capping each
    container that has no limit of its own at the pod's is the nearest it can do: no container
    exceeds the pod's limit, though together they may.
    """
    pod_resources = pod.spec.resources
    own = container.resources.limits
    if pod_resources is None or not pod_resources.limits:
        return own
    return {**pod_resources.limits, **own}


_PROPAGATION = {
    None: MountPropagation.PRIVATE,
    "None": MountPropagation.PRIVATE,
    "HostToContainer": MountPropagation.HOST_TO_CONTAINER,
    "Bidirectional": MountPropagation.BIDIRECTIONAL,
}


SANDBOX_VOLUMES_DIR = "/.kubecore/volumes"
"""Where a sandbox holds the pod's memory-backed volumes (nothing runs there to see them)."""


def sandbox_held_mounts(volumes: Mapping[str, PodVolume]) -> tuple[Mount, ...]:
    """The memory-backed volumes a pod's sandbox holds open for the pod's lifetime."""
    return tuple(
        Mount(
            v.host_path,
            f"{SANDBOX_VOLUMES_DIR}/{name}",
            memory_backed=True,
            size_limit_bytes=v.size_limit_bytes,
            mode=v.mode,
        )
        for name, v in sorted(volumes.items())
        if v.memory_backed
    )


def container_mounts(
    container: Container,
    volumes: Mapping[str, str | PodVolume],
    sub_paths: Mapping[tuple[str, str], str] | None = None,
) -> list[Mount]:
    """The container's volume mounts. ``volumes`` maps each volume name to its host directory
    (or its ``PodVolume``); ``sub_paths`` maps (volume, subPath or subPathExpr as written) to
    the host path the agent prepared for it (``VolumeManager.sub_path_source``), which must be
    there: a path joined here could be swapped by a container before the engine resolves it."""
    mounts: list[Mount] = []
    for vm in container.volume_mounts:
        try:
            found = volumes[vm.name]
        except KeyError:
            raise ValueError(
                f"container {container.name!r} mounts volume {vm.name!r},"
                " which the pod does not define"
            ) from None
        volume = PodVolume(found) if isinstance(found, str) else found
        host_path = volume.host_path
        written = vm.sub_path or vm.sub_path_expr
        if written:
            try:
                host_path = (sub_paths or {})[(vm.name, written)]
            except KeyError:
                field = "subPath" if vm.sub_path else "subPathExpr"
                raise ValueError(
                    f"container {container.name!r} mounts volume {vm.name!r} with {field}"
                    f" {written!r}, which the agent has not prepared"
                ) from None
        mounts.append(
            Mount(
                host_path,
                vm.mount_path,
                vm.read_only or volume.read_only,
                propagation=_PROPAGATION[vm.mount_propagation],
                memory_backed=volume.memory_backed,
                size_limit_bytes=volume.size_limit_bytes,
                mode=volume.mode,
            )
        )
    return mounts


def container_config(
    pod: Pod,
    container: Container,
    *,
    restart_count: int,
    volume_paths: Mapping[str, str | PodVolume],
    termination_message_host_path: str = "",
    is_init: bool = False,
    node_name: str = "",
    sub_paths: Mapping[tuple[str, str], str] | None = None,
    hosts_file: str = "",
    seccomp_root: str = "",
    image: Image | None = None,
) -> ContainerConfig:
    """One run of a container: env in spec order, binds, resources, labels and annotations,
    and the security context (the pod's merged with the container's).

    ``volume_paths`` maps each volume name to its host directory or ``PodVolume``; a mount
    naming a volume that is not there raises ``ValueError`` (validation rejects such pods
    first). ``sub_paths``: see ``container_mounts``. ``hosts_file``: the pod's managed hosts
    file, mounted on ``/etc/hosts``. ``seccomp_root`` is the directory of Localhost seccomp
    profiles; ``image`` the image's status, needed only when
    ``kubecore._kuberuntime.security.needs_image_user`` says so.
    """
    mounts = container_mounts(container, volume_paths, sub_paths)
    if termination_message_host_path and container.termination_message_path:
        mounts.append(Mount(termination_message_host_path, container.termination_message_path))
    if hosts_file:
        mounts.append(Mount(hosts_file, "/etc/hosts"))

    resources = container_resources(container, pod)
    meta = pod.metadata
    labels = container_labels(meta.name, meta.namespace, meta.uid, container.name, node_name)
    annotations = container_annotations(
        spec_hash=container_hash(container),
        restart_count=restart_count,
        grace_period=pod.spec.termination_grace_period_seconds,
        termination_message_path=container.termination_message_path,
        is_init=is_init,
        is_sidecar=container.is_sidecar,
        resources=resources_record(container) if container.resize_policy else None,
    )
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
        security_context=container_security(pod, container, seccomp_root=seccomp_root, image=image),
        stdin=container.stdin,
        stdin_once=container.stdin_once,
        tty=container.tty,
        stop_signal=container.lifecycle.stop_signal if container.lifecycle else "",
    )
