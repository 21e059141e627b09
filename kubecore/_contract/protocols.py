"""The seams between the core and a container engine, shaped like the Kubernetes CRI.

A plugin implements ``ContainerRuntime`` (most simply by subclassing ``RuntimeBase``, which
derives the listing, status, event and stats calls from ``snapshot``) and ``Puller`` (and may
bring its own ``HealthChecker``). The core builds every ``SandboxConfig`` / ``ContainerConfig``
from the pod spec, so an adapter only maps these neutral values onto its engine.

``ContainerRuntime`` is composed, as CRI's ``RuntimeService`` is, of small protocols: the version
(``RuntimeVersioner``), the sandboxes (``PodSandboxManager``), the containers
(``ContainerManager``), the stats (``ContainerStatsManager``) and the event stream
(``RuntimeEventSource``); the image service (``Puller``, CRI's ``ImageManagerService``) is a
separate object. The optional parts (``kubecore._contract.capabilities``) are protocols of their
own, found by type.

Contract for every adapter:

* ``stop_*`` and ``remove_*`` are idempotent: stopping a stopped object or removing a missing one
  succeeds silently.
* Any other call on a missing object raises ``SandboxNotFound`` / ``ContainerNotFound`` /
  ``ImageNotFound``.
* Engine failures are raised as ``kubecore`` errors (``ContainerRuntimeError`` subclasses), never as
  the engine library's own exceptions.
* Labels and annotations given in a config are returned unchanged by list/status calls: everything
  the agent must know after a restart lives there.
* ``snapshot``/``list_*`` return only objects that carry ``MANAGED_LABEL``: kubecore never sees, and
  so never touches, containers it did not create. Of those, an agent touches only the objects
  whose ``NODE_LABEL`` names its node (``owned_by``): the runtime lists every node's.
* Optional capabilities (``OPTIONAL_CAPABILITIES``) are small ``runtime_checkable`` protocols of
  their own, found by type with ``isinstance`` (or ``capabilities(runtime)``): ``ResourceUpdater``
  (resize in place), ``NodeClaims`` (one agent per node name on the engine),
  ``ContainerLogReopener`` (log files the agent rotates) and ``HostMemoryVolumes`` (the agent
  mounts memory-backed emptyDirs on the host). A wrapper of a
  runtime (the agent's metrics wrapper, ``instrument_runtime``) is built with exactly the
  capabilities of the runtime it wraps, so the same ``isinstance`` answers on it and no caller
  reaches under a wrapper. The event stream and the stats are not optional parts: every runtime
  answers ``watch_events`` (None: no stream) and ``container_stats`` (empty: cannot tell), as
  ``RuntimeBase`` does by default.
* ``start_container`` in a sandbox that is not ready raises ``Conflict``; ``exec_sync`` in a
  container that is not running raises a ``ContainerRuntimeError``.
* After ``close()`` every call raises a ``ContainerRuntimeError`` (promptly: no hang).
* ``close()`` leaves containers running. Unless its bundle says ``adopts=False``, a new instance
  of the runtime (the same factory and options, say in a restarted agent) sees the sandboxes and
  containers an earlier one started, with the same ids, labels and states.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol, runtime_checkable

from kubecore._contract.values import (
    ContainerConfig,
    ContainerStats,
    Event,
    ExecResult,
    Image,
    ImageFsUsage,
    ProbeResult,
    ProbeTarget,
    PullProgress,
    RegistryAuth,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeVersion,
    SandboxConfig,
)
from kubecore._model.v1 import Probe


class Subscription(Protocol):
    """A running event stream (``watch_events``'s answer): closing it stops the handler calls."""

    def close(self) -> None:
        """Stop the stream; no handler call starts after this returns (idempotent)."""
        ...


@runtime_checkable
class RuntimeVersioner(Protocol):
    """The runtime's name and version (CRI ``RuntimeVersioner``)."""

    def version(self) -> RuntimeVersion:
        """The engine's name and version; raises ``RuntimeUnavailable`` if it cannot answer."""
        ...


@runtime_checkable
class PodSandboxManager(Protocol):
    """The pod sandboxes: the namespaces a pod's containers share (CRI ``PodSandboxManager``)."""

    def run_sandbox(self, config: SandboxConfig) -> str:
        """Create and start a sandbox; return its id."""
        ...

    def stop_sandbox(self, sandbox_id: str) -> None:
        """Stop the sandbox (idempotent; its containers are stopped by the caller first)."""
        ...

    def remove_sandbox(self, sandbox_id: str) -> None:
        """Remove the sandbox and any container still in it (idempotent)."""
        ...

    def list_sandboxes(self) -> list[RuntimeSandbox]:
        """Every managed sandbox (``MANAGED_LABEL``), of every node."""
        ...

    def sandbox_status(self, sandbox_id: str) -> RuntimeSandbox:
        """Raises ``SandboxNotFound``."""
        ...


@runtime_checkable
class ContainerManager(Protocol):
    """The containers of the sandboxes, and running commands in them (CRI
    ``ContainerManager``)."""

    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str:
        """Create (not start) a container that joins the sandbox's namespaces; return its id.

        Raises ``SandboxNotFound``, ``ImageNotFound`` (the image is not present locally).
        """
        ...

    def start_container(self, container_id: str) -> None:
        """Start a created container. Raises ``ContainerNotFound``, and ``SandboxUnusable``
        when the container cannot join its sandbox's namespaces (the agent then re-creates the
        sandbox); a start that fails in the engine leaves the container EXITED/CREATED with a
        reason (``ContainerCannotRun``)."""
        ...

    def stop_container(self, container_id: str, timeout: float) -> None:
        """Signal TERM, wait up to ``timeout`` seconds, then KILL (idempotent)."""
        ...

    def remove_container(self, container_id: str) -> None:
        """Remove the container, killing it if needed (idempotent)."""
        ...

    def list_containers(self) -> list[RuntimeContainer]:
        """Every managed container (``MANAGED_LABEL``), of every node."""
        ...

    def container_status(self, container_id: str) -> RuntimeContainer:
        """Raises ``ContainerNotFound``."""
        ...

    def snapshot(self) -> RuntimeSnapshot:
        """Every managed sandbox and container with its state: the agent's one read per sync.
        An adapter should answer it with as few engine calls as it can (Docker: one list)."""
        ...

    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult:
        """Run a command in a running container. Raises ``RuntimeTimeout`` after ``timeout``."""
        ...

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        """The container's output (stdout and stderr), line by line, each line ending in ``\\n``.
        With ``timestamps`` each line starts with an RFC 3339 time and a space. With ``follow``
        the iterator blocks for new lines until the container stops or the iterator is closed."""
        ...


@runtime_checkable
class ContainerStatsManager(Protocol):
    """The usage of the running containers (CRI ``ContainerStatsManager``)."""

    def container_stats(self) -> list[ContainerStats]:
        """Usage of every running managed container (may be empty if the runtime cannot tell)."""
        ...


@runtime_checkable
class RuntimeEventSource(Protocol):
    """The engine's container events (CRI ``GetContainerEvents``), so the agent reacts between
    relists."""

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> Subscription | None:
        """Call ``handler`` for each container event until the subscription is closed.
        Return None when the runtime has no event stream (the agent then relies on relists)."""
        ...


@runtime_checkable
class ContainerRuntime(
    RuntimeVersioner,
    PodSandboxManager,
    ContainerManager,
    ContainerStatsManager,
    RuntimeEventSource,
    Protocol,
):
    """The runtime service a plugin provides (CRI ``RuntimeService``): every part above, and
    ``close``. The contract of every call is in this module's docstring and on each method."""

    def close(self) -> None:
        """Release connections and threads."""
        ...


@runtime_checkable
class Puller(Protocol):
    """The image service a plugin provides (CRI ``ImageManagerService``): pull, inspect, list
    and remove images."""

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        """Pull an image; return its image id. Raises ``ImagePullError``."""
        ...

    def image_status(self, image: str) -> Image | None:
        """The local image for this exact reference, or None."""
        ...

    def list_images(self) -> list[Image]:
        """Every image in the store."""
        ...

    def remove_image(self, image: str) -> None:
        """Remove by id or reference (idempotent). Raises ``Conflict`` if a container uses it."""
        ...

    def image_fs_usage(self) -> ImageFsUsage | None:
        """Disk use of the image store, or None if the runtime cannot tell."""
        ...


@runtime_checkable
class HealthChecker(Protocol):
    """Runs the probes of containers (liveness, readiness, startup) for the agent."""

    def check(self, probe: Probe, target: ProbeTarget) -> ProbeResult:
        """Run one probe (exec, HTTP GET or TCP) once, honouring ``probe.timeout_seconds``.
        Never raises: an error is a FAILURE (or UNKNOWN if the check could not run)."""
        ...


@runtime_checkable
class EventRecorder(Protocol):
    """Receives the Kubernetes events the agent records (pulled, started, killing, ...)."""

    def record(self, event: Event) -> None:
        """Must not raise and must not block for long."""
        ...
