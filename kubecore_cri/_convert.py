"""Pure translations between kubecore's runtime values and CRI ``runtime.v1`` messages: the
configs kubecore asks for become requests, the runtime's answers become kubecore's values."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from kubecore.runtime import (
    ContainerConfig,
    ContainerResources,
    ContainerStats,
    Image,
    InvalidConfig,
    LinuxContainerSecurityContext,
    Mount,
    MountPropagation,
    NamespaceMode,
    NamespaceOption,
    PortMapping,
    ProfileType,
    RegistryAuth,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeSandbox,
    RuntimeState,
    SandboxConfig,
    SandboxState,
    SecurityProfile,
)
from kubecore_cri._errors import config_not_supported
from kubecore_cri._pb import api_pb2 as pb

NANOS = 1_000_000_000

_PROTOCOLS = {"TCP": pb.TCP, "UDP": pb.UDP, "SCTP": pb.SCTP}
_PROPAGATION = {
    MountPropagation.PRIVATE: pb.PROPAGATION_PRIVATE,
    MountPropagation.HOST_TO_CONTAINER: pb.PROPAGATION_HOST_TO_CONTAINER,
    MountPropagation.BIDIRECTIONAL: pb.PROPAGATION_BIDIRECTIONAL,
}
_NAMESPACE_MODES = {
    NamespaceMode.POD: pb.POD,
    NamespaceMode.CONTAINER: pb.CONTAINER,
    NamespaceMode.NODE: pb.NODE,
    NamespaceMode.TARGET: pb.TARGET,
}
_PROFILE_TYPES = {
    ProfileType.RUNTIME_DEFAULT: pb.SecurityProfile.RuntimeDefault,
    ProfileType.UNCONFINED: pb.SecurityProfile.Unconfined,
    ProfileType.LOCALHOST: pb.SecurityProfile.Localhost,
}
_STATES = {
    pb.CONTAINER_CREATED: RuntimeState.CREATED,
    pb.CONTAINER_RUNNING: RuntimeState.RUNNING,
    pb.CONTAINER_EXITED: RuntimeState.EXITED,
    pb.CONTAINER_UNKNOWN: RuntimeState.UNKNOWN,
}
_EVENT_TYPES = {
    pb.CONTAINER_CREATED_EVENT: RuntimeEventType.CREATED,
    pb.CONTAINER_STARTED_EVENT: RuntimeEventType.STARTED,
    pb.CONTAINER_STOPPED_EVENT: RuntimeEventType.DIED,
    pb.CONTAINER_DELETED_EVENT: RuntimeEventType.DELETED,
}


def seconds(nanos: int) -> float | None:
    """A CRI time (nanoseconds since the epoch) in seconds; 0 (unset) is None."""
    return nanos / NANOS if nanos > 0 else None


# --- configs: kubecore -> CRI ------------------------------------------------------------------


def pod_log_directory(log_root: str, config: SandboxConfig) -> str:
    """The sandbox's log directory, as the kubelet names it: ``<root>/<ns>_<pod>_<uid>``."""
    return os.path.join(log_root, f"{config.namespace}_{config.name}_{config.uid}")


def container_log_path(config: ContainerConfig) -> str:
    """A container's log file, relative to its sandbox's log directory (the kubelet's
    ``<container>/<restart count>.log``)."""
    return f"{config.name}/{config.attempt}.log"


def port_mapping(port: PortMapping) -> Any:
    protocol = _PROTOCOLS.get(port.protocol.upper(), pb.TCP)
    return pb.PortMapping(
        protocol=protocol,
        container_port=port.container_port,
        host_port=port.host_port,
        host_ip=port.host_ip,
    )


def namespace_option(option: NamespaceOption, host_network: bool = False) -> Any:
    network = NamespaceMode.NODE if host_network else option.network
    return pb.NamespaceOption(
        network=_NAMESPACE_MODES[network],
        pid=_NAMESPACE_MODES[option.pid],
        ipc=_NAMESPACE_MODES[option.ipc],
        target_id=option.target_id,
    )


def sandbox_config(config: SandboxConfig, *, log_root: str, cgroup_parent: str = "") -> Any:
    """The ``PodSandboxConfig`` of a sandbox. ``config.image`` has no CRI field: the runtime
    runs its own sandbox image (containerd's ``sandbox_image``). Memory-backed mounts held by
    the sandbox have none either (the kubelet mounts such a tmpfs on the host): refused, never
    dropped."""
    if config.mounts:
        raise config_not_supported("a memory-backed emptyDir (a tmpfs the sandbox holds)")
    message = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(
            name=config.name, uid=config.uid, namespace=config.namespace, attempt=config.attempt
        ),
        hostname="" if config.host_network else config.hostname,
        log_directory=pod_log_directory(log_root, config),
        port_mappings=[port_mapping(p) for p in config.ports if p.host_port > 0],
        labels=dict(config.labels),
        annotations=dict(config.annotations),
        linux=pb.LinuxPodSandboxConfig(
            cgroup_parent=cgroup_parent,
            security_context=pb.LinuxSandboxSecurityContext(
                namespace_options=namespace_option(config.namespace_options, config.host_network)
            ),
            sysctls=dict(config.sysctls),
        ),
    )
    if config.dns is not None:
        message.dns_config.CopyFrom(
            pb.DNSConfig(
                servers=list(config.dns.servers),
                searches=list(config.dns.searches),
                options=list(config.dns.options),
            )
        )
    return message


def mount(m: Mount) -> Any:
    if m.memory_backed:
        raise config_not_supported(f"the memory-backed mount at {m.container_path}")
    return pb.Mount(
        container_path=m.container_path,
        host_path=m.host_path,
        readonly=m.read_only,
        propagation=_PROPAGATION[m.propagation],
    )


def security_profile(profile: SecurityProfile) -> Any:
    return pb.SecurityProfile(
        profile_type=_PROFILE_TYPES[profile.profile_type], localhost_ref=profile.localhost_ref
    )


def cri_capabilities(names: Iterable[str]) -> list[str]:
    """Capability names as CRI has them, without the ``CAP_`` prefix a pod may write
    (``CAP_NET_ADMIN`` -> ``NET_ADMIN``): containerd prefixes each name with ``CAP_`` itself, so
    ``CAP_NET_ADMIN`` would reach the kernel as the unknown ``CAP_CAP_NET_ADMIN``."""
    return [name[4:] if name.upper().startswith("CAP_") else name for name in names]


def container_security(config: ContainerConfig, sandbox: SandboxConfig) -> Any:
    """The ``LinuxContainerSecurityContext``: the container's merged security context, its
    privilege and the namespaces it joins."""
    own = config.namespace_options or sandbox.namespace_options
    message = pb.LinuxContainerSecurityContext(
        privileged=config.privileged,
        namespace_options=namespace_option(own, sandbox.host_network),
    )
    sc: LinuxContainerSecurityContext | None = config.security_context
    if sc is None:
        return message
    if sc.capabilities is not None:
        message.capabilities.CopyFrom(
            pb.Capability(
                add_capabilities=cri_capabilities(sc.capabilities.add_capabilities),
                drop_capabilities=cri_capabilities(sc.capabilities.drop_capabilities),
            )
        )
    if sc.run_as_user is not None:
        message.run_as_user.value = sc.run_as_user
    elif sc.run_as_username:
        message.run_as_username = sc.run_as_username
    if sc.run_as_group is not None:
        message.run_as_group.value = sc.run_as_group
    message.readonly_rootfs = sc.readonly_rootfs
    message.supplemental_groups.extend(sc.supplemental_groups)
    message.supplemental_groups_policy = (
        pb.Strict if sc.supplemental_groups_policy == "Strict" else pb.Merge
    )
    message.no_new_privs = sc.no_new_privs
    if sc.seccomp is not None:
        message.seccomp.CopyFrom(security_profile(sc.seccomp))
    if sc.apparmor is not None:
        message.apparmor.CopyFrom(security_profile(sc.apparmor))
    if sc.selinux_options is not None:
        s = sc.selinux_options
        message.selinux_options.CopyFrom(
            pb.SELinuxOption(user=s.user, role=s.role, type=s.type, level=s.level)
        )
    return message


def linux_resources(resources: ContainerResources) -> Any:
    """``LinuxContainerResources``: an unset value is 0 (the runtime's default), and the swap
    limit equals the memory limit (no swap), as the kubelet sets it."""
    message = pb.LinuxContainerResources(
        cpu_period=resources.cpu_period or 0,
        cpu_quota=resources.cpu_quota or 0,
        cpu_shares=resources.cpu_shares or 0,
        memory_limit_in_bytes=resources.memory_limit or 0,
    )
    if resources.memory_limit:
        message.memory_swap_limit_in_bytes = resources.memory_limit
    return message


_SIGNALS = {
    name.removeprefix("SIGNAL_"): number
    for name, number in pb.Signal.items()
    if name != "SIGNAL_RUNTIME_DEFAULT"
}


def stop_signal(name: str) -> Any:
    """A ``SIGUSR1``/``USR1`` style name as CRI's ``Signal`` (unknown: ``InvalidConfig``)."""
    if not name:
        return pb.SIGNAL_RUNTIME_DEFAULT
    key = name.upper()
    key = key if key.startswith("SIG") else "SIG" + key
    if key not in _SIGNALS:
        raise InvalidConfig(f"stop signal {name!r}: not a signal CRI knows")
    return _SIGNALS[key]


def container_config(config: ContainerConfig, sandbox: SandboxConfig) -> Any:
    """The ``ContainerConfig`` of a container joining a sandbox made from ``sandbox``."""
    return pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=config.name, attempt=config.attempt),
        image=pb.ImageSpec(image=config.image),
        command=list(config.command),
        args=list(config.args),
        working_dir=config.working_dir,
        envs=[pb.KeyValue(key=k, value=v.encode()) for k, v in config.env],
        mounts=[mount(m) for m in config.mounts],
        labels=dict(config.labels),
        annotations=dict(config.annotations),
        log_path=container_log_path(config),
        stdin=config.stdin,
        stdin_once=config.stdin_once,
        tty=config.tty,
        stop_signal=stop_signal(config.stop_signal),
        linux=pb.LinuxContainerConfig(
            resources=linux_resources(
                ContainerResources(
                    cpu_shares=config.cpu_shares,
                    cpu_quota=config.cpu_quota,
                    cpu_period=config.cpu_period,
                    memory_limit=config.memory_limit,
                )
            ),
            security_context=container_security(config, sandbox),
        ),
    )


def server_address(server: str) -> str:
    """The registry as a URL (``localhost:5001`` -> ``https://localhost:5001``): containerd reads
    ``AuthConfig.server_address`` as a URL and sends the credentials only to the host it names,
    and a bare ``host:port`` parses as a URL with no host, so they would never be sent."""
    if not server or "://" in server:
        return server
    return "https://" + server.rstrip("/")


def auth_config(auth: RegistryAuth) -> Any:
    return pb.AuthConfig(
        username=auth.username,
        password=auth.password,
        server_address=server_address(auth.server),
        identity_token=auth.identity_token,
    )


# --- answers: CRI -> kubecore ------------------------------------------------------------------


def sandbox_from(item: Any, ip: str = "") -> RuntimeSandbox:
    """A ``PodSandbox`` (list) or ``PodSandboxStatus``; ``ip`` from the status's network."""
    ready = item.state == pb.SANDBOX_READY
    return RuntimeSandbox(
        id=item.id,
        name=item.metadata.name,
        namespace=item.metadata.namespace,
        uid=item.metadata.uid,
        attempt=item.metadata.attempt,
        state=SandboxState.READY if ready else SandboxState.NOTREADY,
        created_at=seconds(item.created_at) or 0.0,
        ip=ip if ready else "",
        labels=dict(item.labels),
        annotations=dict(item.annotations),
    )


def sandbox_ip(status: Any) -> str:
    return str(status.network.ip) if status.HasField("network") else ""


def container_from(status: Any, sandbox_id: str) -> RuntimeContainer:
    """A ``ContainerStatus``, in the sandbox ``sandbox_id`` (the status does not name it)."""
    state = _STATES.get(status.state, RuntimeState.UNKNOWN)
    started = seconds(status.started_at)
    finished = seconds(status.finished_at)
    exited = state is RuntimeState.EXITED
    reason = status.reason if exited else ""
    if exited and not reason:
        reason = "Completed" if status.exit_code == 0 else "Error"
    if exited and started is None and status.exit_code != 0:
        reason = "ContainerCannotRun"  # the start failed: the process never ran
    return RuntimeContainer(
        id=status.id,
        sandbox_id=sandbox_id,
        name=status.metadata.name,
        image=status.image.image,
        state=state,
        created_at=seconds(status.created_at) or 0.0,
        attempt=status.metadata.attempt,
        image_id=status.image_ref,
        started_at=started if state in (RuntimeState.RUNNING, RuntimeState.EXITED) else None,
        finished_at=finished if exited else None,
        exit_code=status.exit_code if exited else None,
        reason=reason,
        message=status.message if exited else "",
        labels=dict(status.labels),
        annotations=dict(status.annotations),
        log_path=status.log_path,
    )


def image_from(image: Any) -> Image:
    uid = image.uid.value if image.HasField("uid") else None
    return Image(
        id=image.id,
        tags=tuple(image.repo_tags),
        digests=tuple(image.repo_digests),
        size=int(image.size),
        uid=uid,
        username=image.username,
    )


def _value(message: Any, field: str) -> int | None:
    return int(getattr(message, field).value) if message.HasField(field) else None


def stats_from(stats: Any, fallback_time: float) -> ContainerStats:
    """One ``ContainerStats``: CPU, memory and the writable layer, where the runtime tells."""
    cpu = stats.cpu if stats.HasField("cpu") else None
    memory = stats.memory if stats.HasField("memory") else None
    layer = stats.writable_layer if stats.HasField("writable_layer") else None
    stamp = seconds(cpu.timestamp) if cpu is not None else None
    return ContainerStats(
        container_id=stats.attributes.id,
        timestamp=stamp or fallback_time,
        cpu_usage_nanos=_value(cpu, "usage_core_nano_seconds") if cpu is not None else None,
        memory_working_set_bytes=_value(memory, "working_set_bytes") if memory else None,
        memory_usage_bytes=_value(memory, "usage_bytes") if memory else None,
        memory_rss_bytes=_value(memory, "rss_bytes") if memory else None,
        memory_page_faults=_value(memory, "page_faults") if memory else None,
        memory_major_page_faults=_value(memory, "major_page_faults") if memory else None,
        writable_layer_used_bytes=_value(layer, "used_bytes") if layer else None,
        writable_layer_inodes_used=_value(layer, "inodes_used") if layer else None,
    )


def event_from(response: Any) -> RuntimeEvent | None:
    """A ``ContainerEventResponse``; the exit code from its container status when it has one."""
    kind = _EVENT_TYPES.get(response.container_event_type)
    if kind is None or not response.container_id:
        return None
    exit_code: int | None = None
    pod_uid = ""
    name = ""
    for status in response.containers_statuses:
        if status.id == response.container_id:
            name = status.metadata.name
            if kind is RuntimeEventType.DIED:
                exit_code = status.exit_code
    if response.HasField("pod_sandbox_status"):
        pod_uid = response.pod_sandbox_status.metadata.uid
    return RuntimeEvent(
        type=kind,
        container_id=response.container_id,
        timestamp=seconds(response.created_at) or 0.0,
        pod_uid=pod_uid,
        container_name=name,
        exit_code=exit_code,
    )
