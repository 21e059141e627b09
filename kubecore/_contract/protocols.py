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
  ``ContainerLogReopener`` (log files the agent rotates), ``HostMemoryVolumes`` (the agent
  mounts memory-backed emptyDirs on the host) and ``InProcessMounts`` (no kernel binds the
  mounts: subPaths come as verified paths, not as binds). A wrapper of a
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
        """Stop the stream: no handler call starts after this returns. Idempotent."""
        ...


@runtime_checkable
class RuntimeVersioner(Protocol):
    """The runtime's name and version (CRI ``RuntimeVersioner``)."""

    def version(self) -> RuntimeVersion:
        """The engine's name and version, both non-empty. Raises ``RuntimeUnavailable`` if the
        engine cannot answer (and a ``ContainerRuntimeError`` after ``close``)."""
        ...


@runtime_checkable
class PodSandboxManager(Protocol):
    """The pod sandboxes: the namespaces a pod's containers share (CRI ``PodSandboxManager``).

    A sandbox is READY from ``run_sandbox`` until ``stop_sandbox`` (then NOTREADY), and is
    listed until ``remove_sandbox``. Its name, namespace, uid, attempt, labels and annotations
    come back from every list and status call exactly as given."""

    def run_sandbox(self, config: SandboxConfig) -> str:
        """Create and start a sandbox; return its id. The sandbox is READY, has an IP (unless
        it uses the host's network) and keeps ``config``'s labels, annotations and attempt.
        Its ``namespace_options.pid`` is applied (POD: the pod's containers see each other's
        processes; CONTAINER: they do not) or the containers are refused, and its ``sysctls``
        are applied or the sandbox is refused with an error that names ``sysctl``."""
        ...

    def stop_sandbox(self, sandbox_id: str) -> None:
        """Stop the sandbox: it stays listed, NOTREADY, with its labels and annotations. The
        caller stops its containers first. Idempotent: stopping a stopped sandbox, or one that
        does not exist, succeeds silently."""
        ...

    def remove_sandbox(self, sandbox_id: str) -> None:
        """Remove the sandbox (ready or stopped) and any container still in it; afterwards
        ``sandbox_status`` raises ``SandboxNotFound``. Idempotent: removing a missing sandbox
        succeeds silently."""
        ...

    def list_sandboxes(self) -> list[RuntimeSandbox]:
        """Every managed sandbox (``MANAGED_LABEL``), of every node, ready or not; never one
        kubecore did not create."""
        ...

    def sandbox_status(self, sandbox_id: str) -> RuntimeSandbox:
        """The sandbox as it is now (state, IP, creation time, labels, annotations). Raises
        ``SandboxNotFound`` for an id the runtime does not know (or no longer has)."""
        ...


@runtime_checkable
class ContainerManager(Protocol):
    """The containers of the sandboxes, and running commands in them (CRI
    ``ContainerManager``).

    A container goes CREATED (``create_container``), RUNNING (``start_container``), EXITED
    (its process ended, or ``stop_container``), and is listed until ``remove_container``. Its
    name, attempt, sandbox, labels and annotations come back from every call as given."""

    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str:
        """Create (not start) a container that joins the sandbox's namespaces; return its id.
        It is CREATED, with a creation time and no exit code.

        What ``config`` asks reaches the process: ``command`` then ``args``, ``env`` (values
        unchanged), ``mounts`` (bind mounts writable or read-only as asked; a ``memory_backed``
        one a tmpfs of its size and mode), ``memory_limit`` (over it the kernel kills the
        process: EXITED, 137, ``OOMKilled``). What the runtime cannot apply it refuses, never
        runs without: each field of the ``security_context`` (applied as the process sees it:
        uid, groups, capabilities, no-new-privileges, seccomp, read-only root, security label;
        or a ``ContainerRuntimeError`` here or at start that names the field), ``stdin`` and
        ``tty``, ``stop_signal``, a ``memory_backed`` mount (``InvalidConfig`` here, naming
        the field), ``namespace_options`` with ``pid`` TARGET (``InvalidConfig`` naming
        ``namespace_options``).

        Raises ``SandboxNotFound`` for a missing sandbox, ``ImageNotFound`` when the image is
        not present locally (the agent pulls first).
        """
        ...

    def start_container(self, container_id: str) -> None:
        """Start a created container: it is RUNNING with a start time, and exits with its
        process's exit code (0, 1, 3, ...) and a finish time. Raises ``ContainerNotFound`` for
        a missing container, and ``SandboxUnusable`` when the container cannot join its
        sandbox's namespaces, as when the sandbox was stopped (the agent then re-creates the
        sandbox); a start that fails in the engine leaves the container EXITED/CREATED with a
        reason (``ContainerCannotRun``)."""
        ...

    def stop_container(self, container_id: str, timeout: float) -> None:
        """Send the stop signal (``stop_signal``, else TERM), wait up to ``timeout`` seconds,
        then KILL; returns once a running container is EXITED, with its exit code (0 for a
        process that exits on TERM) and a finish time. Idempotent: stopping an exited container
        or a missing one succeeds silently; a created one stays CREATED or becomes EXITED."""
        ...

    def remove_container(self, container_id: str) -> None:
        """Remove the container in any state (created, running: killed first, exited);
        afterwards it is in no list or snapshot and ``container_status`` raises
        ``ContainerNotFound``. Idempotent: removing a missing container succeeds silently."""
        ...

    def list_containers(self) -> list[RuntimeContainer]:
        """Every managed container (``MANAGED_LABEL``), of every node, in every state; never
        one kubecore did not create."""
        ...

    def container_status(self, container_id: str) -> RuntimeContainer:
        """The container as it is now (state, times, exit code, reason, labels, annotations).
        Raises ``ContainerNotFound`` for an id the runtime does not know (or no longer has)."""
        ...

    def snapshot(self) -> RuntimeSnapshot:
        """Every managed sandbox and container with its state: the agent's one read per sync.
        It agrees with ``list_sandboxes`` and ``list_containers`` (the same ids, states, labels
        and annotations) and, like them, holds nothing kubecore did not create. An adapter
        should answer it with as few engine calls as it can (Docker: one list)."""
        ...

    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult:
        """Run a command in a running container and wait for it: its exit code, stdout and
        stderr. Raises ``RuntimeTimeout`` when it runs longer than ``timeout`` seconds (promptly:
        the call returns soon after), ``ContainerNotFound`` for a missing container, and a
        ``ContainerRuntimeError`` for a container that is not running."""
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
        """The container's output (stdout and stderr), line by line, each line ending in ``\\n``,
        kept after the container exits. ``tail``: only the last lines. ``timestamps``: each line
        starts with an RFC 3339 time and a space (the same lines otherwise). ``since`` (seconds
        since the epoch): only the lines written at or after it. ``follow``: the iterator
        blocks for new lines as they are written, and ends when the container stops (at once
        for a stopped one) or when it is closed. Raises ``ContainerNotFound`` for a missing
        container."""
        ...


@runtime_checkable
class ContainerStatsManager(Protocol):
    """The usage of the running containers (CRI ``ContainerStatsManager``)."""

    def container_stats(self) -> list[ContainerStats]:
        """Usage of running managed containers only (may be empty if the runtime cannot tell);
        every figure given is non-negative, None when the runtime cannot tell."""
        ...


@runtime_checkable
class RuntimeEventSource(Protocol):
    """The engine's container events (CRI ``GetContainerEvents``), so the agent reacts between
    relists."""

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> Subscription | None:
        """Call ``handler`` (from a thread of the runtime's) for each container event until
        the subscription is closed: at least STARTED when a container starts and DIED, with
        its exit code, when it ends, each with the container's id, name and pod uid. Return
        None when the runtime has no event stream (the agent then relies on relists)."""
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
    """The runtime service a plugin provides (CRI ``RuntimeService``): the version, the
    sandboxes, the containers, their stats and events, and ``close``.

    The contract, as ``kubecore.testing.conformance`` checks it:

    * ``stop_*`` and ``remove_*`` are idempotent: stopping a stopped object or removing a
      missing one succeeds silently. Any other call on a missing object raises
      ``SandboxNotFound`` / ``ContainerNotFound`` (``ImageNotFound`` for a missing image).
    * Engine failures are ``ContainerRuntimeError`` subclasses, never the engine library's own
      exceptions.
    * Labels and annotations given in a config come back unchanged from every list and status
      call: everything the agent must know after a restart lives there.
    * ``snapshot`` and ``list_*`` show only objects that carry ``MANAGED_LABEL``, of every node.
    * A field of a config the runtime cannot apply is refused with an error that names it,
      never silently dropped.
    * After ``close()`` every call raises a ``ContainerRuntimeError`` promptly; ``close()``
      leaves containers running, and unless the bundle says ``adopts=False`` a new instance
      sees the same sandboxes and containers, with the same ids, labels and states.

    Optional parts (``StreamingRuntime``, ``PortForwarder``, ``ResourceUpdater``,
    ``NodeClaims``, ``ContainerLogReopener``) are protocols of their own, found by type."""

    def close(self) -> None:
        """Release the runtime's connections and threads, leaving its containers running. After
        it every call raises a ``ContainerRuntimeError`` (promptly: no hang), a followed
        ``logs`` iterator included. Idempotent."""
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
        """Pull an image (with ``auth`` for its registry; ``progress`` called with how it goes,
        if the runtime can tell); return its image id, which ``image_status`` and
        ``list_images`` then show. A short name and its qualified form (``busybox``,
        ``docker.io/library/busybox:latest``) are one image. Raises ``ImagePullError`` when
        the pull fails (a missing image, an unreachable registry, refused credentials)."""
        ...

    def image_status(self, image: str) -> Image | None:
        """The local image for this reference (short or qualified: the same image), or None
        when it is not present."""
        ...

    def list_images(self) -> list[Image]:
        """Every image in the store, each once (whatever its names)."""
        ...

    def remove_image(self, image: str) -> None:
        """Remove an image by id or reference; afterwards ``image_status`` answers None.
        Removing one of several tags only untags. Raises ``Conflict`` while a container
        (even a created one) uses it. Idempotent: removing a missing image succeeds silently."""
        ...

    def image_fs_usage(self) -> ImageFsUsage | None:
        """Disk use of the image store (used bytes no more than the capacity, when the
        capacity is known), or None if the runtime cannot tell."""
        ...


@runtime_checkable
class HealthChecker(Protocol):
    """Runs the probes of containers (liveness, readiness, startup) for the agent."""

    def check(self, probe: Probe, target: ProbeTarget) -> ProbeResult:
        """Run one probe (exec, HTTP GET, TCP or gRPC) once, honouring
        ``probe.timeout_seconds``: SUCCESS when an exec exits 0 (an HTTP status 200-399, a TCP
        connection, a gRPC SERVING), else FAILURE. Never raises: an error is a FAILURE (or
        UNKNOWN if the check could not run)."""
        ...


@runtime_checkable
class EventRecorder(Protocol):
    """Receives the Kubernetes events the agent records (pulled, started, killing, ...)."""

    def record(self, event: Event) -> None:
        """Take one event. Called from the agent's threads, so it must not raise and must not
        block for long (queue what is slow)."""
        ...
