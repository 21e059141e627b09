"""What the engine is asked to create: the ``create_container`` keywords of a sandbox and of a
container joining it (namespaces, mounts, ports, resources, security), and the call itself."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from kubecore.runtime import (
    MANAGED_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    ContainerConfig,
    Mount,
    MountPropagation,
    NamespaceMode,
    SandboxConfig,
)
from kubecore_docker._names import container_labels, container_name, sandbox_labels, sandbox_name
from kubecore_docker._security import EngineSecurity, security_args

_NO_RESTART = {"Name": "no"}


def _port_key(container_port: int, protocol: str) -> str:
    proto = protocol.lower() if protocol.lower() in ("tcp", "udp", "sctp") else "tcp"
    return f"{container_port}/{proto}"


def sandbox_create_args(config: SandboxConfig, image: str) -> dict[str, Any]:
    """``create_container`` keywords (with ``host_config`` still as keywords) for a sandbox."""
    namespaces = config.namespace_options
    host: dict[str, Any] = {
        "ipc_mode": "host" if namespaces.ipc is NamespaceMode.NODE else "shareable",
        "restart_policy": _NO_RESTART,
    }
    if namespaces.pid is NamespaceMode.NODE:
        host["pid_mode"] = "host"
    args: dict[str, Any] = {
        "image": image,
        "name": sandbox_name(config),
        "labels": sandbox_labels(config),
        "hostname": config.hostname or None,
        "use_config_proxy": False,
    }
    held = [memory_mount_of(m, config.labels) for m in config.mounts if m.memory_backed]
    if held:
        host["mounts"] = held
    binds = [bind_of(m) for m in config.mounts if not m.memory_backed]
    if binds:
        host["binds"] = binds
    if config.host_network:
        host["network_mode"] = "host"
    else:
        bindings: dict[str, list[tuple[str, int]]] = {}
        for port in config.ports:
            if port.host_port <= 0:
                continue
            key = _port_key(port.container_port, port.protocol)
            bindings.setdefault(key, []).append((port.host_ip, port.host_port))
        if bindings:
            args["ports"] = [tuple(key.split("/")) for key in bindings]
            host["port_bindings"] = bindings
    if config.sysctls:
        host["sysctls"] = dict(config.sysctls)
    if config.dns is not None:
        if config.dns.servers:
            host["dns"] = list(config.dns.servers)
        if config.dns.searches:
            host["dns_search"] = list(config.dns.searches)
        if config.dns.options:
            host["dns_opt"] = list(config.dns.options)
    args["host_config"] = host
    return args


_PROPAGATION_OPTION = {
    MountPropagation.PRIVATE: "",
    MountPropagation.HOST_TO_CONTAINER: ",rslave",
    MountPropagation.BIDIRECTIONAL: ",rshared",
}


def bind_of(mount: Mount) -> str:
    """A bind in ``docker run -v`` form, with its propagation (rprivate is Docker's default)."""
    mode = ("ro" if mount.read_only else "rw") + _PROPAGATION_OPTION[mount.propagation]
    return f"{mount.host_path}:{mount.container_path}:{mode}"


def tmpfs_volume_name(mount: Mount) -> str:
    """One Docker volume per pod volume: every container of the pod mounting it shares it."""
    return "kubecore-tmpfs-" + hashlib.sha256(mount.host_path.encode()).hexdigest()[:24]


def memory_mount_of(mount: Mount, labels: Mapping[str, str]) -> dict[str, Any]:
    """An emptyDir of medium Memory: a local-driver volume backed by a tmpfs of the given size,
    labelled with the pod so that removing its sandbox removes it."""
    options = {"type": "tmpfs", "device": "tmpfs"}
    tmpfs_options = []
    if mount.size_limit_bytes is not None:
        tmpfs_options.append(f"size={mount.size_limit_bytes}")
    if mount.mode is not None:
        tmpfs_options.append(f"mode={mount.mode:o}")
    if tmpfs_options:
        options["o"] = ",".join(tmpfs_options)
    return {
        "Target": mount.container_path,
        "Source": tmpfs_volume_name(mount),
        "Type": "volume",
        "ReadOnly": mount.read_only,
        "VolumeOptions": {
            "Labels": {
                MANAGED_LABEL: "true",
                POD_UID_LABEL: labels.get(POD_UID_LABEL, ""),
                POD_NAMESPACE_LABEL: labels.get(POD_NAMESPACE_LABEL, ""),
            },
            "DriverConfig": {"Name": "local", "Options": options},
        },
    }


def container_create_args(
    sandbox_id: str,
    config: ContainerConfig,
    sandbox: SandboxConfig,
    engine: EngineSecurity | None = None,
) -> dict[str, Any]:
    """``create_container`` keywords for an app container joining ``sandbox_id``'s namespaces.

    Kubernetes ``command`` replaces the image's ENTRYPOINT (and so drops its CMD), ``args``
    replaces CMD; with only ``args`` the image's ENTRYPOINT stays.
    """
    joined = f"container:{sandbox_id}"
    namespaces = sandbox.namespace_options
    host: dict[str, Any] = {
        "network_mode": joined,
        # A sandbox in the node's IPC namespace cannot be joined (it is not "shareable").
        "ipc_mode": "host" if namespaces.ipc is NamespaceMode.NODE else joined,
        "restart_policy": _NO_RESTART,
        "privileged": config.privileged,
    }
    own = config.namespace_options
    if own is not None and own.pid is NamespaceMode.TARGET:
        # An ephemeral container in its target's process namespace (dockershim's way).
        host["pid_mode"] = f"container:{own.target_id}"
    elif namespaces.pid is NamespaceMode.NODE:
        host["pid_mode"] = "host"
    elif namespaces.pid is NamespaceMode.POD:
        host["pid_mode"] = joined
    binds = [bind_of(m) for m in config.mounts if not m.memory_backed]
    if binds:
        host["binds"] = binds
    tmpfs = [memory_mount_of(m, config.labels) for m in config.mounts if m.memory_backed]
    if tmpfs:
        host["mounts"] = tmpfs
    if config.cpu_shares is not None:
        host["cpu_shares"] = config.cpu_shares
    if config.cpu_quota is not None:
        host["cpu_quota"] = config.cpu_quota
    if config.cpu_period is not None:
        host["cpu_period"] = config.cpu_period
    if config.memory_limit is not None:
        host["mem_limit"] = config.memory_limit
        host["memswap_limit"] = config.memory_limit
    user = None
    if config.security_context is not None:
        user, secured = security_args(
            config.name, config.security_context, engine or EngineSecurity()
        )
        host.update(secured)
    args: dict[str, Any] = {
        "image": config.image,
        "name": container_name(config, sandbox),
        "labels": container_labels(config, sandbox_id, sandbox),
        "entrypoint": list(config.command) or None,
        "command": list(config.args) or None,
        "environment": [f"{key}={value}" for key, value in config.env] or None,
        "working_dir": config.working_dir or None,
        "user": user,
        "use_config_proxy": False,
        "host_config": host,
    }
    if config.tty:
        args["tty"] = True
    if config.stop_signal:
        args["stop_signal"] = config.stop_signal
    if config.stdin:
        args["stdin_open"] = True
        # docker-py ties StdinOnce to attaching at create time: the engine gets the CRI value.
        args[_CONFIG_OVERRIDES] = {"StdinOnce": config.stdin_once, "AttachStdin": False}
    return args


_CONFIG_OVERRIDES = "config_overrides"
"""Key of ``container_create_args``: fields of the engine's container config set as given."""


def create_from_args(api: Any, call: dict[str, Any]) -> str:
    """``create_container``, with the config fields docker-py will not set as given."""
    overrides = call.get(_CONFIG_OVERRIDES)
    if not overrides:
        return str(api.create_container(**call)["Id"])
    kwargs = {k: v for k, v in call.items() if k not in (_CONFIG_OVERRIDES, "name")}
    kwargs.pop("use_config_proxy", None)  # the proxy environment is never added
    config = api.create_container_config(**kwargs)
    config.update(overrides)
    return str(api.create_container_from_config(config, call["name"])["Id"])
