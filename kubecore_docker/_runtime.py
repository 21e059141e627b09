"""``DockerRuntime``: kubecore's ``ContainerRuntime`` over docker-py's low-level ``APIClient``."""

from __future__ import annotations

import logging
import math
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kubecore import ContainerRuntimeError
from kubecore.runtime import (
    MANAGED_LABEL,
    POD_UID_LABEL,
    Clock,
    Conflict,
    ContainerConfig,
    ContainerNotFound,
    ContainerResources,
    ContainerStats,
    ExecResult,
    InvalidConfig,
    NameOwnedByAnotherNode,
    NodeClaim,
    NodeHolder,
    NotFound,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeUnavailable,
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
)
from kubecore_docker._client import DockerConnection, DockerOptions
from kubecore_docker._convert import (
    StateDetail,
    Summary,
    container_from,
    detail_from_inspect,
    sandbox_from,
    state_key,
    summary_from_inspect,
    summary_from_list,
)
from kubecore_docker._errors import Subject, cannot_join_sandbox, engine_errors
from kubecore_docker._events import EventWatcher
from kubecore_docker._exec import exec_sync
from kubecore_docker._lease import DockerNodeLeases
from kubecore_docker._logs import open_logs
from kubecore_docker._names import CONTAINER_TYPE, DOCKER_TYPE_LABEL, SANDBOX_ID_LABEL, SANDBOX_TYPE
from kubecore_docker._ports import port_forward
from kubecore_docker._security import EngineSecurity
from kubecore_docker._specs import container_create_args, create_from_args, sandbox_create_args
from kubecore_docker._stats import StatsReader
from kubecore_docker._streams import attach, exec_stream

log = logging.getLogger(__name__)

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
        self._nodes: set[str] = set()
        """The node names this runtime made objects for or claimed: the only nodes whose
        interrupted sandboxes it removes."""
        self._watchers: list[EventWatcher] = []
        self._closed = False
        self._engine: EngineSecurity | None = None
        self._leases = DockerNodeLeases(self._api, self._clock)
        self._stats = StatsReader(self._connection, self._clock)

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
        """The connection to the engine it uses."""
        return self._connection

    @property
    def options(self) -> DockerOptions:
        """The options it was loaded with."""
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
        """Create a container; a name left over from an earlier try of this node is removed and
        created again (one another node's object holds raises ``NameOwnedByAnotherNode``)."""
        api = self._api()
        with engine_errors(subject):
            call = {**args, "host_config": api.create_host_config(**args["host_config"])}
        try:
            with engine_errors(subject):
                return create_from_args(api, call)
        except Conflict:
            self._remove_stale(str(args["name"]), node_of(args.get("labels") or {}), subject)
        with engine_errors(subject):
            return create_from_args(api, call)

    def _remove_stale(self, name: str, node_name: str, subject: Subject) -> None:
        """Remove the container holding ``name`` when node ``node_name`` owns it."""
        try:
            held = summary_from_inspect(self._inspect(name, subject))
        except NotFound:
            return  # removed since
        if not owned_by(held.labels, node_name):
            owner = node_of(held.labels) or "no node (made by hand or by another tool)"
            raise NameOwnedByAnotherNode(
                f"the name {name} is taken by container {held.id[:12]} of {owner}, not of"
                f" node {node_name!r}: it is left alone"
            )
        log.info("removing a stale container named %s", name, extra={"container_name": name})
        self._remove(held.id)

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
            self._nodes.add(node_of(config.labels))
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
        node = node_of(summary.labels)
        if not node:
            return  # nobody's (no agent made it): hidden, and left alone
        with self._details_lock:
            if not any(owned_by(summary.labels, mine) for mine in self._nodes):
                return  # another node's: hidden, and its own agent removes it
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
        return exec_sync(self._api, self._clock, container_id, command, timeout)

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        return open_logs(
            self._api(),
            self._connection,
            container_id,
            tail=tail,
            follow=follow,
            since=since,
            timestamps=timestamps,
        )

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> Subscription | None:
        self._api()
        watcher = EventWatcher(self._connection, handler).start()
        self._watchers.append(watcher)
        return watcher

    def container_stats(self) -> list[ContainerStats]:
        return self._stats.read(self._api())

    # -- streaming: exec, attach, port-forward (kubecore_docker._streams, ._ports) -------------

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
            self._api(), self._clock, container_id, command, stdin=stdin, tty=tty, size=size
        )

    def attach(self, container_id: str, *, stdin: bool, tty: bool) -> StreamSession:
        return attach(self._api(), self._clock, container_id, stdin=stdin, tty=tty)

    def port_forward(self, sandbox_id: str, port: int, timeout: float) -> socket.socket:
        return port_forward(self._api(), sandbox_id, port, timeout)

    # -- node leases (NodeClaims) -------------------------------------------------------------

    def claim_node(
        self, node_name: str, holder: NodeHolder, ttl: float, *, replace: str = ""
    ) -> NodeClaim:
        """A marker container per node name (``kubecore_docker._lease``)."""
        with self._details_lock:
            self._nodes.add(node_name)
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
