"""Pod spec -> runtime-neutral configs: the sandbox's (``sandbox_config``) and each container
run's (``container_config``), with their mounts. DNS, hostnames and the hosts file, cgroup
settings and the spec hashes they carry have their own modules (``dns``, ``hosts``,
``cgroups``, ``kubecore._model.spec_hash``).

Everything here is pure: the agent reads resolv.conf, prepares volumes and termination-message
files, and passes their results in."""

from __future__ import annotations

from collections.abc import Mapping

from kubecore._contract.labels import (
    container_annotations,
    container_labels,
    sandbox_annotations,
    sandbox_labels,
)
from kubecore._contract.values import (
    ContainerConfig,
    DNSConfig,
    Image,
    Mount,
    MountPropagation,
    NamespaceMode,
    NamespaceOption,
    PortMapping,
    SandboxConfig,
)
from kubecore._kuberuntime.cgroups import container_resources
from kubecore._kuberuntime.hosts import sandbox_hostname
from kubecore._kuberuntime.security import container_security, pod_sysctls
from kubecore._model.spec_hash import container_hash, resources_record, sandbox_hash
from kubecore._model.v1 import Container, Pod
from kubecore._volumes.pod_dirs import PodVolume


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
