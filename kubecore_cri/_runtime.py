"""``CriRuntime``: kubecore's ``ContainerRuntime`` over a CRI ``runtime.v1`` RuntimeService."""

from __future__ import annotations

import contextlib
import logging
import math
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kubecore import ContainerRuntimeError
from kubecore.runtime import (
    MANAGED_LABEL,
    Clock,
    ContainerConfig,
    ContainerNotFound,
    ContainerResources,
    ContainerStats,
    ExecResult,
    ImageNotFound,
    NameOwnedByAnotherNode,
    NodeClaim,
    NodeHolder,
    NotFound,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeTimeout,
    RuntimeVersion,
    SandboxConfig,
    SandboxNotFound,
    SandboxUnusable,
    StreamSession,
    Subscription,
    SystemClock,
    TerminalSize,
    node_of,
    owned_by,
    read_cri_log,
)
from kubecore_cri._client import CriConnection, CriOptions
from kubecore_cri._convert import (
    container_config,
    container_from,
    linux_resources,
    sandbox_config,
    sandbox_from,
    sandbox_ip,
    stats_from,
)
from kubecore_cri._errors import Subject, image_missing, reserved_for, sandbox_gone
from kubecore_cri._events import EventStream
from kubecore_cri._lease import CriNodeLeases
from kubecore_cri._pb import api_pb2 as pb
from kubecore_cri._ports import port_forward
from kubecore_cri._security import RuntimeSecurity
from kubecore_cri._streams import LiveStreams, attach, exec_stream

log = logging.getLogger(__name__)

_MANAGED = {MANAGED_LABEL: "true"}


class CriRuntime:
    """The ``ContainerRuntime`` for a CRI runtime (containerd, CRI-O).

    State lives only in the runtime (CRI metadata, labels and annotations). A steady-state
    ``snapshot`` costs two calls (``ListPodSandbox``, ``ListContainers``): the status of each
    object (a sandbox's IP, a container's times and exit code) is asked once per state it is
    listed in, and kept while the list shows it in that state; a ready sandbox's IP, once asked
    by ``sandbox_status``, is not asked again.
    """

    def __init__(
        self,
        connection: CriConnection | CriOptions | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(connection, CriConnection):
            connection = CriConnection(connection)
        self._connection = connection
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._sandbox_ips: dict[str, tuple[int, str]] = {}
        self._statuses: dict[str, tuple[int, Any]] = {}
        self._events = EventStream(connection)
        self._said_image = False
        self._runtime_security: RuntimeSecurity | None = None
        self._live = LiveStreams()
        options = connection.options
        self._leases = CriNodeLeases(options.lease_dir, options.endpoint, self._clock)

    @property
    def options(self) -> CriOptions:
        """The options it was loaded with."""
        return self._connection.options

    def _call(
        self, method: str, request: Any, subject: Subject = Subject.RUNTIME, **kw: Any
    ) -> Any:
        return self._connection.call(method, request, subject, **kw)

    # -- runtime -------------------------------------------------------------------------------

    def version(self) -> RuntimeVersion:
        answer = self._call("Version", pb.VersionRequest(version="v1"))
        return RuntimeVersion(
            runtime_name=answer.runtime_name,
            runtime_version=answer.runtime_version,
            api_version=answer.runtime_api_version,
        )

    def status(self) -> dict[str, tuple[bool, str]]:
        """The runtime's conditions (``RuntimeReady``, ``NetworkReady``): (status, why)."""
        answer = self._call("Status", pb.StatusRequest())
        return {
            c.type: (c.status, f"{c.reason}: {c.message}" if c.reason else c.message)
            for c in answer.status.conditions
        }

    # -- sandboxes -----------------------------------------------------------------------------

    def _sandbox_request(self, config: SandboxConfig) -> Any:
        if config.image and not self._said_image:
            self._said_image = True
            log.info(
                "the cri runtime runs its own sandbox image (its configuration's), not %s",
                config.image,
            )
        return sandbox_config(
            config, log_root=self.options.log_root, cgroup_parent=self.options.cgroup_parent
        )

    def run_sandbox(self, config: SandboxConfig) -> str:
        request = pb.RunPodSandboxRequest(
            config=self._sandbox_request(config), runtime_handler=self.options.runtime_handler
        )
        # RunPodSandbox sets up the network too: it gets the stop budget on top of the timeout.
        try:
            answer = self._call("RunPodSandbox", request, Subject.SANDBOX, timeout=self._long())
        except ContainerRuntimeError as error:
            self._refuse_foreign_name(error, "PodSandboxStatus", node_of(config.labels))
            raise
        return str(answer.pod_sandbox_id)

    def _refuse_foreign_name(
        self, error: ContainerRuntimeError, status_call: str, node: str
    ) -> None:
        """Raise ``NameOwnedByAnotherNode`` when ``error`` is the runtime refusing a name that
        an object of another node than ``node`` holds (the runtime never removes it, nor does
        the agent: the name stays refused until that node lets it go)."""
        holder = reserved_for(str(error))
        if not holder:
            return
        if status_call == "PodSandboxStatus":
            request: Any = pb.PodSandboxStatusRequest(pod_sandbox_id=holder)
        else:
            request = pb.ContainerStatusRequest(container_id=holder)
        try:
            labels = dict(self._call(status_call, request).status.labels)
        except ContainerRuntimeError:
            return  # gone since, or unreadable: the refusal stands as it is
        if not owned_by(labels, node):
            owner = node_of(labels) or "no node (made by hand or by another tool)"
            raise NameOwnedByAnotherNode(
                f"the name is taken by {holder[:13]} of {owner}, not of node {node!r}: it is"
                f" left alone ({error})"
            ) from error

    def _long(self, extra: float = 0.0) -> float:
        return self.options.timeout * 2 + extra

    def stop_sandbox(self, sandbox_id: str) -> None:
        with contextlib.suppress(NotFound):
            self._call(
                "StopPodSandbox",
                pb.StopPodSandboxRequest(pod_sandbox_id=sandbox_id),
                Subject.SANDBOX,
                timeout=self._long(),
            )

    def remove_sandbox(self, sandbox_id: str) -> None:
        with contextlib.suppress(NotFound):
            self._call(
                "RemovePodSandbox",
                pb.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id),
                Subject.SANDBOX,
                timeout=self._long(),
            )
        with self._lock:
            self._sandbox_ips.pop(sandbox_id, None)

    def sandbox_status(self, sandbox_id: str) -> RuntimeSandbox:
        answer = self._call(
            "PodSandboxStatus",
            pb.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id),
            Subject.SANDBOX,
        )
        status = answer.status
        if status.labels.get(MANAGED_LABEL) != "true":
            raise SandboxNotFound(f"{sandbox_id} is not a kubecore sandbox")
        ip = sandbox_ip(status)
        if status.state == pb.SANDBOX_READY:
            # The agent asks right after RunPodSandbox: the next relist need not ask again.
            with self._lock:
                self._sandbox_ips[sandbox_id] = (status.state, ip)
        return sandbox_from(status, ip)

    def list_sandboxes(self) -> list[RuntimeSandbox]:
        return list(self.snapshot().sandboxes)

    # -- containers ----------------------------------------------------------------------------

    def _security(self, config: ContainerConfig) -> None:
        """Refuse what the runtime would ignore: asked once, by the first container that names
        an AppArmor profile or SELinux labels."""
        sc = config.security_context
        if sc is None or (sc.apparmor is None and sc.selinux_options is None):
            return
        if self._runtime_security is None:
            info = self._call("Status", pb.StatusRequest(verbose=True)).info
            self._runtime_security = RuntimeSecurity.from_status_info(
                info, local=self._connection.is_local()
            )
        self._runtime_security.check(config)

    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str:
        self._security(config)
        request = pb.CreateContainerRequest(
            pod_sandbox_id=sandbox_id,
            config=container_config(config, sandbox_config),
            sandbox_config=self._sandbox_request(sandbox_config),
        )
        try:
            answer = self._call("CreateContainer", request, Subject.SANDBOX, timeout=self._long())
        except NotFound as error:
            if image_missing(str(error)):
                raise ImageNotFound(f"{config.image}: {error}") from error
            if sandbox_gone(str(error)):
                raise SandboxUnusable(str(error)) from error
            raise
        except ContainerRuntimeError as error:
            self._refuse_foreign_name(error, "ContainerStatus", node_of(config.labels))
            raise
        return str(answer.container_id)

    def start_container(self, container_id: str) -> None:
        try:
            self._call(
                "StartContainer",
                pb.StartContainerRequest(container_id=container_id),
                Subject.CONTAINER,
                timeout=self._long(),
            )
        except NotFound:
            raise
        except ContainerRuntimeError as error:
            if sandbox_gone(str(error)):
                raise SandboxUnusable(str(error)) from error
            raise

    def stop_container(self, container_id: str, timeout: float) -> None:
        seconds = max(0, math.ceil(timeout))
        with contextlib.suppress(NotFound):
            self._call(
                "StopContainer",
                pb.StopContainerRequest(container_id=container_id, timeout=seconds),
                Subject.CONTAINER,
                timeout=self._long(seconds),
            )

    def remove_container(self, container_id: str) -> None:
        with contextlib.suppress(NotFound):
            self._call(
                "RemoveContainer",
                pb.RemoveContainerRequest(container_id=container_id),
                Subject.CONTAINER,
                timeout=self._long(),
            )
        with self._lock:
            self._statuses.pop(container_id, None)

    def update_container_resources(self, container_id: str, resources: ContainerResources) -> None:
        """Resize in place: the values given replace the container's, the others stay (read
        from its status: a CRI update sets every resource it carries)."""
        current = self._container_status(container_id).resources.linux
        merged = linux_resources(resources)
        for field in ("cpu_period", "cpu_quota", "cpu_shares", "memory_limit_in_bytes"):
            if not getattr(merged, field):
                setattr(merged, field, getattr(current, field))
        if not merged.memory_swap_limit_in_bytes:
            merged.memory_swap_limit_in_bytes = current.memory_swap_limit_in_bytes
        self._call(
            "UpdateContainerResources",
            pb.UpdateContainerResourcesRequest(container_id=container_id, linux=merged),
            Subject.CONTAINER,
        )
        with self._lock:
            self._statuses.pop(container_id, None)

    def _container_status(self, container_id: str) -> Any:
        answer = self._call(
            "ContainerStatus",
            pb.ContainerStatusRequest(container_id=container_id),
            Subject.CONTAINER,
        )
        return answer.status

    def container_status(self, container_id: str) -> RuntimeContainer:
        listed = self._call(
            "ListContainers", pb.ListContainersRequest(filter=pb.ContainerFilter(id=container_id))
        ).containers
        if not listed or listed[0].labels.get(MANAGED_LABEL) != "true":
            raise ContainerNotFound(f"{container_id} is not a kubecore container")
        return container_from(self._container_status(container_id), listed[0].pod_sandbox_id)

    def list_containers(self) -> list[RuntimeContainer]:
        return list(self.snapshot().containers)

    def snapshot(self) -> RuntimeSnapshot:
        sandboxes = self._call(
            "ListPodSandbox",
            pb.ListPodSandboxRequest(filter=pb.PodSandboxFilter(label_selector=_MANAGED)),
        ).items
        containers = self._call(
            "ListContainers",
            pb.ListContainersRequest(filter=pb.ContainerFilter(label_selector=_MANAGED)),
        ).containers
        taken_at = self._clock.now()
        seen_sandboxes = {item.id: item.state for item in sandboxes}
        seen_containers = {item.id: item.state for item in containers}
        with self._lock:
            for gone in set(self._sandbox_ips) - set(seen_sandboxes):
                del self._sandbox_ips[gone]
            for gone in set(self._statuses) - set(seen_containers):
                del self._statuses[gone]
        observed_sandboxes = tuple(
            sandbox_from(item, self._ip(item.id, item.state)) for item in sandboxes
        )
        observed: list[RuntimeContainer] = []
        for item in containers:
            status = self._status(item.id, item.state)
            if status is not None:
                observed.append(container_from(status, item.pod_sandbox_id))
        return RuntimeSnapshot(
            sandboxes=observed_sandboxes, containers=tuple(observed), taken_at=taken_at
        )

    def _ip(self, sandbox_id: str, state: int) -> str:
        """A ready sandbox's IP, asked once while it stays ready."""
        if state != pb.SANDBOX_READY:
            return ""
        with self._lock:
            cached = self._sandbox_ips.get(sandbox_id)
        if cached is not None and cached[0] == state:
            return cached[1]
        try:
            status = self._call(
                "PodSandboxStatus",
                pb.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id),
                Subject.SANDBOX,
            ).status
        except SandboxNotFound:
            return ""
        ip = sandbox_ip(status)
        with self._lock:
            self._sandbox_ips[sandbox_id] = (state, ip)
        return ip

    def _status(self, container_id: str, state: int) -> Any:
        """A container's status, asked once per state it is listed in (None: gone meanwhile)."""
        with self._lock:
            cached = self._statuses.get(container_id)
        if cached is not None and cached[0] == state:
            return cached[1]
        try:
            status = self._container_status(container_id)
        except ContainerNotFound:
            return None
        with self._lock:
            self._statuses[container_id] = (status.state, status)
        return status

    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult:
        seconds = max(1, math.ceil(timeout))
        request = pb.ExecSyncRequest(container_id=container_id, cmd=command, timeout=seconds)
        try:
            answer = self._call(
                "ExecSync", request, Subject.CONTAINER, timeout=seconds + self.options.timeout
            )
        except RuntimeTimeout:
            raise
        except NotFound:
            raise
        except ContainerRuntimeError as error:
            if "timeout" in str(error).lower() and "exceeded" in str(error).lower():
                raise RuntimeTimeout(f"exec in {container_id}: {error}") from error
            raise
        return ExecResult(
            exit_code=answer.exit_code, stdout=bytes(answer.stdout), stderr=bytes(answer.stderr)
        )

    # -- streams (exec, attach, port-forward through the runtime's streaming server) ---------------

    def exec_stream(
        self,
        container_id: str,
        command: list[str],
        *,
        stdin: bool,
        tty: bool,
        size: TerminalSize | None = None,
    ) -> StreamSession:
        return exec_stream(
            self._connection, self._live, container_id, command, stdin=stdin, tty=tty, size=size
        )

    def attach(self, container_id: str, *, stdin: bool, tty: bool) -> StreamSession:
        return attach(self._connection, self._live, container_id, stdin=stdin, tty=tty)

    def port_forward(self, sandbox_id: str, port: int, timeout: float) -> socket.socket:
        return port_forward(self._connection, self._live, sandbox_id, port, timeout)

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        """The container's log file (``ContainerStatus.log_path``, in the CRI log format), read
        on this host; a followed log ends when the container is no longer running."""
        path = self._container_status(container_id).log_path
        if not path:
            raise ContainerRuntimeError(f"the CRI runtime keeps no log file for {container_id}")

        def running() -> bool:
            try:
                return bool(self._container_status(container_id).state == pb.CONTAINER_RUNNING)
            except ContainerRuntimeError:
                return False

        return read_cri_log(
            path, tail=tail, follow=follow, since=since, timestamps=timestamps, running=running
        )

    def reopen_container_log(self, container_id: str) -> None:
        """``ReopenContainerLog``: the runtime writes to a new file at the container's log path."""
        self._call(
            "ReopenContainerLog",
            pb.ReopenContainerLogRequest(container_id=container_id),
            Subject.CONTAINER,
        )

    def binds_host_memory_volumes(self) -> bool:
        """``HostMemoryVolumes``: CRI mounts are binds, so the agent mounts a memory-backed
        emptyDir's tmpfs on the host, as the kubelet does."""
        return True

    def claim_node(
        self, node_name: str, holder: NodeHolder, ttl: float, *, replace: str = ""
    ) -> NodeClaim:
        """A lease file on the runtime's host, under ``lease_dir`` (``kubecore_cri._lease``)."""
        return self._leases.claim(node_name, holder, ttl, replace)

    def release_node(self, node_name: str, holder: NodeHolder) -> None:
        self._leases.release(node_name, holder)

    def container_stats(self) -> list[ContainerStats]:
        answer = self._call(
            "ListContainerStats",
            pb.ListContainerStatsRequest(filter=pb.ContainerStatsFilter(label_selector=_MANAGED)),
        )
        # containerd reports a created container that never ran too: the contract is the
        # running ones (Docker's stats are).
        running = self._call(
            "ListContainers",
            pb.ListContainersRequest(
                filter=pb.ContainerFilter(
                    state=pb.ContainerStateValue(state=pb.CONTAINER_RUNNING),
                    label_selector=_MANAGED,
                )
            ),
        ).containers
        ids = {container.id for container in running}
        now = self._clock.now()
        return [stats_from(item, now) for item in answer.stats if item.attributes.id in ids]

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> Subscription | None:
        return self._events.watch(handler)

    def close(self) -> None:
        self._live.close_all()
        self._events.close()
        self._connection.close()
