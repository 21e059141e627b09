"""``DockerRuntime``: kubecore's ``ContainerRuntime`` over docker-py's low-level ``APIClient``."""

from __future__ import annotations

import hashlib
import logging
import math
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from kubecore import ContainerRuntimeError
from kubecore.runtime import (
    MANAGED_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    Clock,
    Conflict,
    ContainerConfig,
    ContainerNotFound,
    ContainerResources,
    ContainerStats,
    ExecResult,
    InvalidConfig,
    LinuxContainerSecurityContext,
    Mount,
    MountPropagation,
    NamespaceMode,
    NodeClaim,
    NodeHolder,
    NotFound,
    ProfileType,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeTimeout,
    RuntimeUnavailable,
    RuntimeVersion,
    SandboxConfig,
    SandboxNotFound,
    SandboxUnusable,
    SecurityProfile,
    Subscription,
    SystemClock,
    node_of,
)
from kubecore_docker._client import DockerConnection, DockerOptions
from kubecore_docker._convert import (
    StateDetail,
    Summary,
    container_from,
    detail_from_inspect,
    sandbox_from,
    state_key,
    stats_from,
    summary_from_inspect,
    summary_from_list,
)
from kubecore_docker._errors import (
    Subject,
    cannot_join_sandbox,
    engine_errors,
    raise_translated,
)
from kubecore_docker._events import EventWatcher
from kubecore_docker._lease import DockerNodeLeases
from kubecore_docker._names import (
    CONTAINER_TYPE,
    DOCKER_TYPE_LABEL,
    SANDBOX_ID_LABEL,
    SANDBOX_TYPE,
    container_labels,
    container_name,
    sandbox_labels,
    sandbox_name,
)

log = logging.getLogger(__name__)

_NO_RESTART = {"Name": "no"}
_EXEC_EXIT_POLLS = 50


def _port_key(container_port: int, protocol: str) -> str:
    proto = protocol.lower() if protocol.lower() in ("tcp", "udp", "sctp") else "tcp"
    return f"{container_port}/{proto}"


@attrs.frozen
class EngineSecurity:
    """The Linux security modules the engine applies (its ``docker info`` SecurityOptions)."""

    apparmor: bool = False
    selinux: bool = False

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> EngineSecurity:
        names = {
            str(option).split(",", 1)[0].removeprefix("name=")
            for option in info.get("SecurityOptions") or ()
        }
        return cls(apparmor="apparmor" in names, selinux="selinux" in names)


def _refuse(container: str, field: str, why: str) -> InvalidConfig:
    return InvalidConfig(f"container {container!r}: {field}: {why}")


def _seccomp_option(name: str, profile: SecurityProfile) -> str | None:
    if profile.profile_type is ProfileType.UNCONFINED:
        return "seccomp=unconfined"
    if profile.profile_type is ProfileType.RUNTIME_DEFAULT:
        return None  # the engine's default profile applies when none is named
    try:
        with open(profile.localhost_ref, encoding="utf-8") as f:
            return f"seccomp={f.read()}"
    except OSError as error:
        why = f"cannot read the Localhost profile {profile.localhost_ref}: {error.strerror}"
        raise _refuse(name, "seccomp", why) from None


def _apparmor_option(name: str, profile: SecurityProfile, engine: EngineSecurity) -> str | None:
    if not engine.apparmor:
        raise _refuse(name, "apparmor", "the engine does not apply AppArmor profiles")
    if profile.profile_type is ProfileType.UNCONFINED:
        return "apparmor=unconfined"
    if profile.profile_type is ProfileType.RUNTIME_DEFAULT:
        return None
    return f"apparmor={profile.localhost_ref}"


def security_args(
    name: str, sc: LinuxContainerSecurityContext, engine: EngineSecurity
) -> tuple[str | None, dict[str, Any]]:
    """The Docker ``user`` and host-config keywords of a security context; ``InvalidConfig``
    for what the engine cannot apply (never silently dropped)."""
    if sc.supplemental_groups_policy != "Merge":
        raise _refuse(
            name,
            "supplemental_groups_policy",
            f"{sc.supplemental_groups_policy}: Docker always adds the image's groups of the user",
        )
    user: str | None = None
    who = str(sc.run_as_user) if sc.run_as_user is not None else sc.run_as_username
    if who:
        user = who if sc.run_as_group is None else f"{who}:{sc.run_as_group}"
    elif sc.run_as_group is not None:
        raise _refuse(name, "run_as_group", "needs run_as_user or run_as_username")
    host: dict[str, Any] = {}
    if sc.supplemental_groups:
        host["group_add"] = [str(gid) for gid in sc.supplemental_groups]
    if sc.capabilities is not None:
        if sc.capabilities.add_capabilities:
            host["cap_add"] = list(sc.capabilities.add_capabilities)
        if sc.capabilities.drop_capabilities:
            host["cap_drop"] = list(sc.capabilities.drop_capabilities)
    if sc.readonly_rootfs:
        host["read_only"] = True
    options: list[str | None] = []
    if sc.no_new_privs:
        options.append("no-new-privileges")
    if sc.seccomp is not None:
        options.append(_seccomp_option(name, sc.seccomp))
    if sc.apparmor is not None:
        options.append(_apparmor_option(name, sc.apparmor, engine))
    if sc.selinux_options is not None:
        if not engine.selinux:
            raise _refuse(name, "selinux_options", "the engine does not apply SELinux labels")
        selinux = sc.selinux_options
        labels = {"user": selinux.user, "role": selinux.role, "type": selinux.type}
        labels["level"] = selinux.level
        options.extend(f"label={key}:{value}" for key, value in labels.items() if value)
    if any(options):
        host["security_opt"] = [option for option in options if option]
    return user, host


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
    if namespaces.pid is NamespaceMode.NODE:
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


def _create_container(api: Any, call: dict[str, Any]) -> str:
    """``create_container``, with the config fields docker-py will not set as given."""
    overrides = call.get(_CONFIG_OVERRIDES)
    if not overrides:
        return str(api.create_container(**call)["Id"])
    kwargs = {k: v for k, v in call.items() if k not in (_CONFIG_OVERRIDES, "name")}
    kwargs.pop("use_config_proxy", None)  # the proxy environment is never added
    config = api.create_container_config(**kwargs)
    config.update(overrides)
    return str(api.create_container_from_config(config, call["name"])["Id"])


INTERRUPTED_AFTER = 30.0
"""Seconds after which a sandbox still never started is an interrupted ``run_sandbox`` (an agent
killed between create and start), removed; until then it is only hidden. One without a node
label is no agent's: always hidden, never removed."""


class DockerRuntime:
    """The ``ContainerRuntime`` for a Docker Engine.

    State lives only in the engine (names and labels, dockershim style); the one cache here keeps
    the inspect of each container for as long as the list shows it in the same state, so a
    steady-state ``snapshot`` costs one engine request however many pods run.
    """

    def __init__(
        self,
        connection: DockerConnection | DockerOptions | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(connection, DockerConnection):
            connection = DockerConnection(connection)
        self._connection = connection
        self._clock = clock or SystemClock()
        self._details: dict[str, tuple[tuple[str, str, int | None], StateDetail]] = {}
        self._details_lock = threading.Lock()
        self._starting: set[str] = set()
        """Names of the sandboxes this process is creating and starting (not interrupted)."""
        self._watchers: list[EventWatcher] = []
        self._log_paths: dict[str, str] = {}
        """Container id -> its log file on this host (read once, by inspect)."""
        self._closed = False
        self._engine: EngineSecurity | None = None
        self._leases = DockerNodeLeases(self._api, self._clock)

    def _engine_security(self, config: ContainerConfig) -> EngineSecurity:
        """What the engine's security modules are, asked once and only by a container that
        names an AppArmor profile or SELinux labels."""
        sc = config.security_context
        if sc is None or (sc.apparmor is None and sc.selinux_options is None):
            return EngineSecurity()
        if self._engine is None:
            with engine_errors():
                self._engine = EngineSecurity.from_info(self._api().info())
        return self._engine

    @property
    def connection(self) -> DockerConnection:
        return self._connection

    @property
    def options(self) -> DockerOptions:
        return self._connection.options

    def _api(self) -> Any:
        if self._closed:  # the connection would reopen itself: a closed runtime stays closed
            raise RuntimeUnavailable("the docker runtime is closed")
        return self._connection.api()

    def _forget(self, container_id: str) -> None:
        with self._details_lock:
            self._details.pop(container_id, None)

    # -- engine -------------------------------------------------------------------------------

    def version(self) -> RuntimeVersion:
        with engine_errors():
            data = self._api().version()
        return RuntimeVersion(
            runtime_name="docker",
            runtime_version=str(data.get("Version", "")),
            api_version=str(data.get("ApiVersion", "")),
        )

    # -- creation shared by sandboxes and containers -------------------------------------------

    def _create(self, args: dict[str, Any], subject: Subject) -> str:
        """Create a container; a name left over from an earlier try is removed and created again."""
        api = self._api()
        with engine_errors(subject):
            call = {**args, "host_config": api.create_host_config(**args["host_config"])}
        try:
            with engine_errors(subject):
                return _create_container(api, call)
        except Conflict:
            log.info(
                "removing a stale container named %s",
                args["name"],
                extra={"container_name": args["name"]},
            )
            self._remove(args["name"])
        with engine_errors(subject):
            return _create_container(api, call)

    def _remove(self, container: str) -> None:
        self._forget(container)
        try:
            with engine_errors(Subject.CONTAINER):
                self._api().remove_container(container, force=True, v=True)
        except NotFound:
            pass
        except Conflict as error:
            if "already in progress" not in str(error):
                raise

    def _stop(self, container: str, timeout: float) -> None:
        self._forget(container)
        try:
            with engine_errors(Subject.CONTAINER):
                self._api().stop(container, timeout=max(0, math.ceil(timeout)))
        except NotFound:
            pass

    def _inspect(self, container_id: str, subject: Subject) -> dict[str, Any]:
        with engine_errors(subject):
            return dict(self._api().inspect_container(container_id))

    # -- sandboxes ----------------------------------------------------------------------------

    def run_sandbox(self, config: SandboxConfig) -> str:
        """Create and start, as one step (the CRI's RunPodSandbox): a sandbox whose start was
        interrupted (an agent killed between the two calls) is never listed, and a snapshot
        removes it once it is ``INTERRUPTED_AFTER`` seconds old (a new ``run_sandbox`` of the
        same name replaces it at once)."""
        args = sandbox_create_args(config, config.image or self.options.sandbox_image)
        name = str(args["name"])
        with self._details_lock:
            self._starting.add(name)
        try:
            sandbox_id = self._create(args, Subject.SANDBOX)
            try:
                with engine_errors(Subject.SANDBOX):
                    self._api().start(sandbox_id)
            except ContainerRuntimeError:
                self._remove(sandbox_id)
                raise
        finally:
            with self._details_lock:
                self._starting.discard(name)
        return sandbox_id

    def stop_sandbox(self, sandbox_id: str) -> None:
        self._stop(sandbox_id, self.options.sandbox_stop_timeout)

    def remove_sandbox(self, sandbox_id: str) -> None:
        with engine_errors():
            members = self._api().containers(
                all=True, filters={"label": [MANAGED_LABEL, f"{SANDBOX_ID_LABEL}={sandbox_id}"]}
            )
        for member in members:
            self._remove(member["Id"])
        pod_uid = self._sandbox_pod_uid(sandbox_id)
        self._remove(sandbox_id)
        if pod_uid:
            self._remove_pod_volumes(pod_uid)

    def _sandbox_pod_uid(self, sandbox_id: str) -> str:
        try:
            with engine_errors(Subject.SANDBOX):
                data = self._api().inspect_container(sandbox_id)
        except NotFound:
            return ""
        return str((data.get("Config") or {}).get("Labels", {}).get(POD_UID_LABEL, ""))

    def _remove_pod_volumes(self, pod_uid: str) -> None:
        """The pod's Memory emptyDirs go with its sandbox (one still used by another sandbox of
        the pod stays: Docker refuses, and the next removal takes it)."""
        with engine_errors():
            found = self._api().volumes(
                filters={"label": [MANAGED_LABEL, f"{POD_UID_LABEL}={pod_uid}"]}
            )
        for volume in found.get("Volumes") or ():
            try:
                with engine_errors():
                    self._api().remove_volume(volume["Name"])
            except (NotFound, Conflict):
                pass
            except ContainerRuntimeError as error:
                log.info("keeping volume %s for now: %s", volume["Name"], error)

    def sandbox_status(self, sandbox_id: str) -> RuntimeSandbox:
        summary = summary_from_inspect(self._inspect(sandbox_id, Subject.SANDBOX))
        if not _is_managed(summary, SANDBOX_TYPE):
            raise SandboxNotFound(f"{sandbox_id} is not a kubecore sandbox")
        return sandbox_from(summary)

    def list_sandboxes(self) -> list[RuntimeSandbox]:
        return list(self.snapshot().sandboxes)

    # -- containers ---------------------------------------------------------------------------

    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str:
        try:
            args = container_create_args(
                sandbox_id, config, sandbox_config, self._engine_security(config)
            )
            return self._create(args, Subject.SANDBOX)
        except SandboxNotFound as error:
            raise SandboxNotFound(f"sandbox {sandbox_id}: {error}") from error
        except InvalidConfig as error:
            # Joining a missing container's namespaces is refused with 400 "No such container".
            if "no such container" in str(error).lower():
                raise SandboxNotFound(f"sandbox {sandbox_id}: {error}") from error
            raise

    def start_container(self, container_id: str) -> None:
        self._forget(container_id)
        try:
            with engine_errors(Subject.CONTAINER):
                self._api().start(container_id)
        except ContainerRuntimeError as error:
            if cannot_join_sandbox(str(error)):
                raise SandboxUnusable(str(error)) from error
            raise

    def stop_container(self, container_id: str, timeout: float) -> None:
        self._stop(container_id, timeout)

    def remove_container(self, container_id: str) -> None:
        self._remove(container_id)

    def update_container_resources(self, container_id: str, resources: ContainerResources) -> None:
        """Resize in place (``docker update``): CPU shares, CFS quota and period, memory (with
        the swap limit equal to it, as at creation). A resource left unset is not changed."""
        changes: dict[str, Any] = {}
        if resources.cpu_shares is not None:
            changes["cpu_shares"] = resources.cpu_shares
        if resources.cpu_quota is not None:
            changes["cpu_quota"] = resources.cpu_quota
        if resources.cpu_period is not None:
            changes["cpu_period"] = resources.cpu_period
        if resources.memory_limit is not None:
            changes["mem_limit"] = resources.memory_limit
            changes["memswap_limit"] = resources.memory_limit
        if not changes:
            return
        self._forget(container_id)
        with engine_errors(Subject.CONTAINER):
            self._api().update_container(container_id, **changes)

    def container_status(self, container_id: str) -> RuntimeContainer:
        data = self._inspect(container_id, Subject.CONTAINER)
        summary = summary_from_inspect(data)
        if not _is_managed(summary, CONTAINER_TYPE):
            raise ContainerNotFound(f"{container_id} is not a kubecore container")
        return container_from(summary, detail_from_inspect(data))

    def list_containers(self) -> list[RuntimeContainer]:
        return list(self.snapshot().containers)

    def snapshot(self) -> RuntimeSnapshot:
        with engine_errors():
            entries = self._api().containers(all=True, filters={"label": MANAGED_LABEL})
        taken_at = self._clock.now()
        sandboxes: list[RuntimeSandbox] = []
        containers: list[RuntimeContainer] = []
        listed: set[str] = set()
        for entry in entries:
            summary = summary_from_list(entry)
            listed.add(summary.id)
            kind = summary.labels.get(DOCKER_TYPE_LABEL)
            if kind == SANDBOX_TYPE:
                if summary.status == "created":  # never started: an interrupted run_sandbox
                    self._drop_interrupted(summary)
                    continue
                sandboxes.append(sandbox_from(summary))
            elif kind == CONTAINER_TYPE:
                detail = self._detail(summary)
                if detail is not None:
                    containers.append(container_from(summary, detail))
        with self._details_lock:
            for gone in set(self._details) - listed:
                del self._details[gone]
        return RuntimeSnapshot(
            sandboxes=tuple(sandboxes), containers=tuple(containers), taken_at=taken_at
        )

    def _drop_interrupted(self, summary: Summary) -> None:
        if not node_of(summary.labels):
            return  # nobody's (no agent made it): hidden, and left alone
        with self._details_lock:
            if summary.name in self._starting:
                return  # being started by this process right now
        if self._clock.now() - summary.created_at < INTERRUPTED_AFTER:
            return  # a list taken just before this process's own start may still say created
        log.info("removing sandbox %s: its start was interrupted", summary.name)
        try:
            self._remove(summary.id)
        except ContainerRuntimeError as error:
            log.warning("could not remove the interrupted sandbox %s: %s", summary.name, error)

    def _detail(self, summary: Summary) -> StateDetail | None:
        """The inspect-only facts for a listed container: cached while its state holds."""
        key = state_key(summary)
        with self._details_lock:
            cached = self._details.get(summary.id)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            data = self._inspect(summary.id, Subject.CONTAINER)
        except ContainerNotFound:
            return None  # removed between the list and the inspect
        detail = detail_from_inspect(data)
        fresh = state_key(summary_from_inspect(data))
        if fresh[1] == key[1]:
            with self._details_lock:
                self._details[summary.id] = (key, detail)
        return detail

    # -- exec, logs, events, stats ------------------------------------------------------------

    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult:
        api = self._api()
        with engine_errors(Subject.CONTAINER):
            exec_id = api.exec_create(container_id, command, stdout=True, stderr=True)["Id"]
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["output"] = api.exec_start(exec_id, demux=True)
            except BaseException as error:
                outcome["error"] = error

        worker = threading.Thread(target=run, name=f"kubecore-exec-{exec_id[:12]}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            raise RuntimeTimeout(f"exec {command!r} in {container_id} took longer than {timeout}s")
        if "error" in outcome:
            raise_translated(outcome["error"], Subject.CONTAINER)
        stdout, stderr = outcome.get("output") or (None, None)
        return ExecResult(
            exit_code=self._exec_exit_code(exec_id), stdout=stdout or b"", stderr=stderr or b""
        )

    def _exec_exit_code(self, exec_id: str) -> int:
        # The output closes as the process ends; the engine may record the exit code a moment later.
        for _ in range(_EXEC_EXIT_POLLS):
            with engine_errors(Subject.CONTAINER):
                info = self._api().exec_inspect(exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            self._clock.sleep(0.01)
        raise ContainerRuntimeError(f"exec {exec_id} has no exit code")

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        api = self._api()
        client = self._connection.stream_client(timeout=None) if follow else api
        kwargs: dict[str, Any] = {
            "stdout": True,
            "stderr": True,
            "stream": True,
            "timestamps": timestamps,
            "follow": follow,
            "tail": "all" if tail is None else max(0, int(tail)),
        }
        if since is not None and since > 0:
            kwargs["since"] = float(since)
        try:
            with engine_errors(Subject.CONTAINER):
                stream = client.logs(container_id, **kwargs)
        except BaseException:
            if follow:
                client.close()
            raise
        return _lines(stream, client if follow else None)

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> Subscription | None:
        self._api()
        watcher = EventWatcher(self._connection, handler).start()
        self._watchers.append(watcher)
        return watcher

    def container_stats(self) -> list[ContainerStats]:
        api = self._api()
        with engine_errors():
            # size: the writable layer's bytes (SizeRw), for ephemeral-storage accounting
            running = api.containers(
                filters={
                    "label": [MANAGED_LABEL, f"{DOCKER_TYPE_LABEL}={CONTAINER_TYPE}"],
                    "status": "running",
                },
                size=True,
            )
        # one_shot skips the engine's second sample (about 1 s per container); API 1.41 and later.
        one_shot = self._connection.api_version_at_least("1.41")
        result: list[ContainerStats] = []
        for entry in running:
            try:
                with engine_errors(Subject.CONTAINER):
                    if one_shot:
                        data = api.stats(entry["Id"], stream=False, one_shot=True)
                    else:
                        data = api.stats(entry["Id"], stream=False)
            except (ContainerNotFound, Conflict):
                continue
            except (RuntimeUnavailable, RuntimeTimeout):
                raise
            except ContainerRuntimeError as error:
                # A container ending while it is read answers garbage, not a 404: one
                # container's figures missing must not fail the whole summary.
                log.debug("stats of %s could not be read: %s", entry["Id"], error)
                continue
            size_rw = entry.get("SizeRw", 0)  # left out when 0
            stats = stats_from(
                entry["Id"], data, self._clock.now(), size_rw if isinstance(size_rw, int) else None
            )
            log_bytes = self._log_bytes(api, entry["Id"])
            if log_bytes is not None:
                stats = attrs.evolve(stats, log_used_bytes=log_bytes, log_inodes_used=1)
            result.append(stats)
        running_ids = {entry["Id"] for entry in running}
        self._log_paths = {k: v for k, v in self._log_paths.items() if k in running_ids}
        return result

    def _log_bytes(self, api: Any, container_id: str) -> int | None:
        """The size of the container's log file, when the engine runs on this host and keeps
        one (the json-file and local drivers do)."""
        if not self._connection.is_local():
            return None
        path = self._log_paths.get(container_id)
        if path is None:
            try:
                with engine_errors(Subject.CONTAINER):
                    path = str(api.inspect_container(container_id).get("LogPath") or "")
            except ContainerRuntimeError:
                return None
            self._log_paths[container_id] = path
        try:
            return os.stat(path).st_size if path else None
        except OSError:
            return None

    # -- node leases (NodeClaims) -------------------------------------------------------------

    def claim_node(
        self, node_name: str, holder: NodeHolder, ttl: float, *, replace: str = ""
    ) -> NodeClaim:
        """A marker container per node name (``kubecore_docker._lease``)."""
        return self._leases.claim(node_name, holder, ttl, replace)

    def release_node(self, node_name: str, holder: NodeHolder) -> None:
        self._leases.release(node_name, holder)

    def close(self) -> None:
        self._closed = True
        watchers, self._watchers = self._watchers, []
        for watcher in watchers:
            watcher.close()
        self._connection.close()


def _is_managed(summary: Summary, kind: str) -> bool:
    return MANAGED_LABEL in summary.labels and summary.labels.get(DOCKER_TYPE_LABEL) == kind


def _lines(stream: Any, own_client: Any) -> Iterator[bytes]:
    """Engine log chunks as lines ending in ``\\n``; closes the stream and its own client."""
    buffer = b""
    try:
        with engine_errors(Subject.CONTAINER):
            for chunk in stream:
                buffer += chunk
                while True:
                    newline = buffer.find(b"\n")
                    if newline < 0:
                        break
                    yield buffer[: newline + 1]
                    buffer = buffer[newline + 1 :]
        if buffer:
            yield buffer + b"\n"
    finally:
        for closeable in (stream, own_client):
            if closeable is not None:
                try:
                    closeable.close()
                except Exception:
                    log.debug("closing a log stream failed", exc_info=True)
