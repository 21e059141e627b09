"""The seams between the core and a container engine, shaped like the Kubernetes CRI.

A plugin implements ``ContainerRuntime`` (most simply by subclassing ``RuntimeBase``, which
derives the listing, status, event and stats calls from ``snapshot``) and ``Puller`` (and may
bring its own ``HealthChecker``). The core builds every ``SandboxConfig`` / ``ContainerConfig``
from the pod spec, so an adapter only maps these neutral values onto its engine.

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
  their own, found by type with ``isinstance``: ``ResourceUpdater`` (resize in place) and
  ``NodeClaims`` (one agent per node name on the engine). A wrapper of a runtime (the agent's
  metrics wrapper, ``instrument_runtime``) is built with exactly the capabilities of the runtime it
  wraps, so the same ``isinstance`` answers on it and no caller reaches under a wrapper. The event
  stream and the stats are not optional parts: every runtime answers ``watch_events`` (None: no
  stream) and ``container_stats`` (empty: cannot tell), as ``RuntimeBase`` does by default.
* ``start_container`` in a sandbox that is not ready raises ``Conflict``; ``exec_sync`` in a
  container that is not running raises a ``ContainerRuntimeError``.
* After ``close()`` every call raises a ``ContainerRuntimeError`` (promptly: no hang).
* ``close()`` leaves containers running. Unless its bundle says ``adopts=False``, a new instance
  of the runtime (the same factory and options, say in a restarted agent) sees the sandboxes and
  containers an earlier one started, with the same ids, labels and states.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol, runtime_checkable

import attrs

from kubecore._contract.errors import ContainerNotFound, SandboxNotFound

# The identity labels and annotations, written and read in ``kubecore._contract.labels``.
from kubecore._contract.labels import (
    CONTAINER_NAME_LABEL as CONTAINER_NAME_LABEL,
)
from kubecore._contract.labels import (
    GRACE_PERIOD_ANNOTATION as GRACE_PERIOD_ANNOTATION,
)
from kubecore._contract.labels import (
    HASH_ANNOTATION as HASH_ANNOTATION,
)
from kubecore._contract.labels import (
    INIT_CONTAINER_ANNOTATION as INIT_CONTAINER_ANNOTATION,
)
from kubecore._contract.labels import (
    MANAGED_LABEL as MANAGED_LABEL,
)
from kubecore._contract.labels import (
    NODE_LABEL as NODE_LABEL,
)
from kubecore._contract.labels import (
    POD_NAME_LABEL as POD_NAME_LABEL,
)
from kubecore._contract.labels import (
    POD_NAMESPACE_LABEL as POD_NAMESPACE_LABEL,
)
from kubecore._contract.labels import (
    POD_UID_LABEL as POD_UID_LABEL,
)
from kubecore._contract.labels import (
    RESOURCES_ANNOTATION as RESOURCES_ANNOTATION,
)
from kubecore._contract.labels import (
    RESTART_COUNT_ANNOTATION as RESTART_COUNT_ANNOTATION,
)
from kubecore._contract.labels import (
    SANDBOX_CONTAINER_NAME as SANDBOX_CONTAINER_NAME,
)
from kubecore._contract.labels import (
    SIDECAR_ANNOTATION as SIDECAR_ANNOTATION,
)
from kubecore._contract.labels import (
    TERMINATION_MESSAGE_PATH_ANNOTATION as TERMINATION_MESSAGE_PATH_ANNOTATION,
)
from kubecore._contract.labels import (
    node_of as node_of,
)
from kubecore._contract.labels import (
    owned_by as owned_by,
)
from kubecore._model.v1 import Probe


class SandboxState(enum.Enum):
    READY = "ready"
    NOTREADY = "notready"


class RuntimeState(enum.Enum):
    """A container's state as the engine reports it."""

    CREATED = "created"
    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"


class RuntimeEventType(enum.Enum):
    CREATED = "created"
    STARTED = "started"
    DIED = "died"
    OOM = "oom"
    DELETED = "deleted"


# --- configs: what the core asks for --------------------------------------------------------


@attrs.frozen
class PortMapping:
    container_port: int
    host_port: int = 0
    host_ip: str = ""
    protocol: str = "TCP"


class MountPropagation(enum.Enum):
    """CRI's ``MountPropagation``: how mounts below a bind travel between host and container."""

    PRIVATE = "private"
    HOST_TO_CONTAINER = "host_to_container"
    """Mounts the host makes below the source later appear in the container (``rslave``)."""
    BIDIRECTIONAL = "bidirectional"
    """Both ways (``rshared``); privileged containers only."""


@attrs.frozen
class Mount:
    host_path: str
    container_path: str
    read_only: bool = False
    propagation: MountPropagation = MountPropagation.PRIVATE
    memory_backed: bool = False
    """A tmpfs shared by the pod's containers that mount this ``host_path`` (an emptyDir of
    medium Memory), not a bind of the directory. CRI has no such field, because the kubelet
    mounts the tmpfs on the host itself; here the runtime makes it, so an agent without mount
    privileges, or one talking to a remote engine, keeps the semantics."""
    size_limit_bytes: int | None = None
    """The tmpfs's size (``emptyDir.sizeLimit``); None: the runtime's default (half the RAM)."""
    mode: int | None = None
    """The tmpfs root's permission bits (``emptyDir.mode``, or 02777 under an fsGroup);
    None: the runtime's default (01777 for a tmpfs)."""


@attrs.frozen
class DNSConfig:
    servers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[str, ...] = ()


class NamespaceMode(enum.Enum):
    """CRI's ``NamespaceMode``: whose namespace a container uses."""

    POD = "POD"
    """The pod's: shared by its containers (the sandbox's)."""
    CONTAINER = "CONTAINER"
    """The container's own."""
    NODE = "NODE"
    """The node's (hostPID, hostIPC, hostNetwork)."""


@attrs.frozen
class NamespaceOption:
    """CRI's ``NamespaceOption``: the namespaces of a pod's containers."""

    network: NamespaceMode = NamespaceMode.POD
    pid: NamespaceMode = NamespaceMode.CONTAINER
    ipc: NamespaceMode = NamespaceMode.POD


@attrs.frozen
class Capability:
    """CRI ``Capability``: names as written (``NET_ADMIN``, ``CAP_NET_ADMIN``, ``ALL``)."""

    add_capabilities: tuple[str, ...] = ()
    drop_capabilities: tuple[str, ...] = ()


class ProfileType(enum.StrEnum):
    """CRI ``SecurityProfile.ProfileType``, named as the pod's ``type`` field."""

    RUNTIME_DEFAULT = "RuntimeDefault"
    UNCONFINED = "Unconfined"
    LOCALHOST = "Localhost"


@attrs.frozen
class SecurityProfile:
    """CRI ``SecurityProfile`` (seccomp or AppArmor)."""

    profile_type: ProfileType
    localhost_ref: str = ""
    """Seccomp: the absolute path of the profile file on the node; AppArmor: the profile name."""


@attrs.frozen
class SELinuxOption:
    user: str = ""
    role: str = ""
    type: str = ""
    level: str = ""


@attrs.frozen
class LinuxContainerSecurityContext:
    """CRI ``LinuxContainerSecurityContext``, the pod's and the container's ``securityContext``
    merged. ``None``/empty leaves the runtime's default; ``privileged`` stays on
    ``ContainerConfig``. A runtime that cannot apply a field set here refuses the container
    (``InvalidConfig`` naming the field) rather than running it without."""

    capabilities: Capability | None = None
    run_as_user: int | None = None
    run_as_username: str = ""
    """The image's user by name, when the pod sets a group but no user (CRI needs a user)."""
    run_as_group: int | None = None
    readonly_rootfs: bool = False
    supplemental_groups: tuple[int, ...] = ()
    supplemental_groups_policy: str = "Merge"
    """``Merge`` (the image's groups of the user are kept) or ``Strict``."""
    no_new_privs: bool = False
    seccomp: SecurityProfile | None = None
    """None: the runtime's default profile."""
    apparmor: SecurityProfile | None = None
    selinux_options: SELinuxOption | None = None


@attrs.frozen
class SandboxConfig:
    name: str
    namespace: str
    uid: str
    attempt: int = 0
    hostname: str = ""
    host_network: bool = False
    ports: tuple[PortMapping, ...] = ()
    dns: DNSConfig | None = None
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    image: str = ""
    """The sandbox (pause) image; empty means the runtime's default."""
    mounts: tuple[Mount, ...] = ()
    """Volumes the sandbox holds for the pod's lifetime: the pod's memory-backed emptyDirs,
    so that their tmpfs (and what it holds) outlives a restart of every container using it, as
    the kubelet's host tmpfs does. Mounted out of the way in the sandbox (no CRI field: the
    kubelet needs none, its tmpfs lives on the host)."""
    namespace_options: NamespaceOption = attrs.field(factory=NamespaceOption)
    """pid POD: shareProcessNamespace; pid/ipc NODE: hostPID/hostIPC; network NODE mirrors
    ``host_network``."""
    sysctls: Mapping[str, str] = attrs.field(factory=dict)
    """Namespaced kernel parameters of the pod (CRI ``LinuxPodSandboxConfig.sysctls``), set in
    the namespaces the pod's containers share."""


@attrs.frozen
class ContainerConfig:
    name: str
    image: str
    command: tuple[str, ...] = ()
    """Overrides the image's entrypoint when not empty."""
    args: tuple[str, ...] = ()
    """Overrides the image's default arguments (CMD) when not empty."""
    working_dir: str = ""
    env: tuple[tuple[str, str], ...] = ()
    mounts: tuple[Mount, ...] = ()
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    attempt: int = 0
    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    memory_limit: int | None = None
    privileged: bool = False
    security_context: LinuxContainerSecurityContext | None = None
    stdin: bool = False
    """Keep the container's stdin open (CRI ``stdin``; Docker ``OpenStdin``)."""
    stdin_once: bool = False
    """Close stdin after the first attach detaches (CRI ``stdin_once``; Docker ``StdinOnce``)."""
    tty: bool = False
    """Give the container a terminal (CRI ``tty``; Docker ``Tty``)."""
    stop_signal: str = ""
    """The signal ``stop_container`` sends first (CRI ``stop_signal``; Docker ``StopSignal``),
    ``SIGUSR1`` style; '' for the image's own (else TERM)."""


@attrs.frozen
class ContainerResources:
    """The Linux resources of a running container (CRI ``LinuxContainerResources``), as
    ``ResourceUpdater.update_container_resources`` changes them in place."""

    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    memory_limit: int | None = None


@runtime_checkable
class ResourceUpdater(Protocol):
    """A runtime that can change a running container's resources in place (CRI
    ``UpdateContainerResources``); one without it has containers restarted to resize them."""

    def update_container_resources(self, container_id: str, resources: ContainerResources) -> None:
        """Raises ``ContainerNotFound``; an engine refusal is a ``ContainerRuntimeError``."""
        ...


@attrs.frozen
class NodeHolder:
    """One running agent, as a node's lease names it: ``id`` is unique to the agent (a new one
    at each start); the rest says where it runs, for people and for a restarted agent on the
    same host to tell that the holder's process is gone."""

    id: str
    host: str = ""
    pid: int = 0
    pid_namespace: str = ""
    """The process's pid namespace (``pid:[4026531836]``): pids compare only within one."""

    def __str__(self) -> str:
        where = f"process {self.pid} on host {self.host}" if self.pid else f"host {self.host}"
        return f"{where}, agent {self.id}"


@attrs.frozen
class NodeLease:
    """Who holds a node name on an engine, until when."""

    node_name: str
    holder: NodeHolder
    renewed_at: float
    """When the holder last took or renewed it (seconds since the epoch, its runtime's clock)."""
    ttl: float
    """Seconds after ``renewed_at`` at which the lease lapses unless renewed."""

    def expires_at(self) -> float:
        return self.renewed_at + self.ttl

    def expired(self, now: float) -> bool:
        return now > self.expires_at()


@attrs.frozen
class NodeClaim:
    """What ``claim_node`` answered."""

    granted: bool
    lease: NodeLease
    """The lease as it stands: the caller's when granted, the live holder's when refused."""
    replaced: NodeLease | None = None
    """Another holder's lease that was taken over (it had lapsed, or was named in ``replace``)."""


@runtime_checkable
class NodeClaims(Protocol):
    """A runtime that can hold a node name on its engine for one agent at a time (optional):
    two agents with one node name on one engine would both sync the same objects. Agents on
    other hosts, and with other root directories, share the engine's leases, so the claim
    lives in the engine (Docker: a labelled marker container), not on a host."""

    def claim_node(
        self, node_name: str, holder: NodeHolder, ttl: float, *, replace: str = ""
    ) -> NodeClaim:
        """Take or renew the lease on ``node_name`` for ``holder``, atomically against every
        other caller on the engine. Granted when there is no lease, when ``holder`` (by ``id``)
        holds it, when it lapsed (not renewed within its ``ttl``), or when its holder's id is
        ``replace`` (the caller knows that holder is gone); the lease then stands renewed now
        for ``ttl`` seconds. Otherwise refused, naming the live holder. Raises a
        ``ContainerRuntimeError`` when the engine cannot answer."""
        ...

    def release_node(self, node_name: str, holder: NodeHolder) -> None:
        """Give up the lease if ``holder`` holds it (idempotent; another holder's stays)."""
        ...


OPTIONAL_CAPABILITIES: tuple[type, ...] = (ResourceUpdater, NodeClaims)
"""The protocols a runtime may implement beyond ``ContainerRuntime`` (the module docstring)."""


# --- observations: what the runtime reports ------------------------------------------------


@attrs.frozen
class RuntimeSandbox:
    id: str
    name: str
    namespace: str
    uid: str
    attempt: int
    state: SandboxState
    created_at: float
    ip: str = ""
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class RuntimeContainer:
    id: str
    sandbox_id: str
    name: str
    image: str
    state: RuntimeState
    created_at: float
    attempt: int = 0
    image_id: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    reason: str = ""
    """``OOMKilled``, ``Error``, ``Completed``, ``ContainerCannotRun``, ... ('' while running)."""
    message: str = ""
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class RuntimeSnapshot:
    """Everything kubecore manages on this runtime, read at one moment."""

    sandboxes: tuple[RuntimeSandbox, ...] = ()
    containers: tuple[RuntimeContainer, ...] = ()
    taken_at: float = 0.0


@attrs.frozen
class ExecResult:
    exit_code: int
    stdout: bytes = b""
    stderr: bytes = b""


@attrs.frozen
class RuntimeEvent:
    type: RuntimeEventType
    container_id: str
    timestamp: float
    pod_uid: str = ""
    container_name: str = ""
    exit_code: int | None = None


@attrs.frozen
class RuntimeVersion:
    runtime_name: str
    runtime_version: str
    api_version: str = ""


@attrs.frozen
class ContainerStats:
    container_id: str
    timestamp: float
    cpu_usage_nanos: int | None = None
    memory_working_set_bytes: int | None = None
    memory_usage_bytes: int | None = None
    memory_rss_bytes: int | None = None
    memory_page_faults: int | None = None
    memory_major_page_faults: int | None = None
    writable_layer_used_bytes: int | None = None
    """The container's own writable layer (CRI's ``writable_layer``)."""
    writable_layer_inodes_used: int | None = None
    log_used_bytes: int | None = None
    """The container's log, where the runtime keeps it."""
    log_inodes_used: int | None = None


@attrs.frozen
class Image:
    id: str
    tags: tuple[str, ...] = ()
    digests: tuple[str, ...] = ()
    size: int = 0
    created_at: float = 0.0
    uid: int | None = None
    """The user the image runs as, when numeric (CRI ``Image.uid``)."""
    username: str = ""
    """The user the image runs as, when a name (CRI ``Image.username``); both unset: root."""


@attrs.frozen
class ImageFsUsage:
    used_bytes: int
    capacity_bytes: int


@attrs.frozen
class RegistryAuth:
    username: str = ""
    password: str = ""
    server: str = ""
    identity_token: str = ""


@attrs.frozen
class PullProgress:
    image: str
    status: str
    current: int | None = None
    total: int | None = None
    layer: str = ""


class Subscription(Protocol):
    def close(self) -> None: ...


# --- the seams ----------------------------------------------------------------------------


@runtime_checkable
class ContainerRuntime(Protocol):
    def version(self) -> RuntimeVersion: ...

    # sandboxes
    def run_sandbox(self, config: SandboxConfig) -> str:
        """Create and start a sandbox; return its id."""
        ...

    def stop_sandbox(self, sandbox_id: str) -> None:
        """Stop the sandbox (idempotent; its containers are stopped by the caller first)."""
        ...

    def remove_sandbox(self, sandbox_id: str) -> None:
        """Remove the sandbox and any container still in it (idempotent)."""
        ...

    def list_sandboxes(self) -> list[RuntimeSandbox]: ...

    def sandbox_status(self, sandbox_id: str) -> RuntimeSandbox:
        """Raises ``SandboxNotFound``."""
        ...

    # containers
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

    def list_containers(self) -> list[RuntimeContainer]: ...

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

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> Subscription | None:
        """Call ``handler`` for each container event until the subscription is closed.
        Return None when the runtime has no event stream (the agent then relies on relists)."""
        ...

    def container_stats(self) -> list[ContainerStats]:
        """Usage of every running managed container (may be empty if the runtime cannot tell)."""
        ...

    def close(self) -> None:
        """Release connections and threads."""
        ...


class RuntimeBase(abc.ABC):
    """A base for a ``ContainerRuntime`` plugin: write 12 methods, inherit the other 6.

    A plugin must write these 12 methods (abstract here, so a subclass that misses one cannot be
    instantiated, and the error names it):

    ``version``, ``run_sandbox``, ``stop_sandbox``, ``remove_sandbox``, ``create_container``,
    ``start_container``, ``stop_container``, ``remove_container``, ``snapshot``, ``exec_sync``,
    ``logs``, ``close``.

    Derived, and overridden only where the engine answers faster or knows more:

    * ``list_sandboxes``, ``list_containers``: the ``snapshot``'s objects;
    * ``sandbox_status``, ``container_status``: the object with that id in the ``snapshot``, else
      ``SandboxNotFound`` / ``ContainerNotFound`` (so an id that ``snapshot`` does not show, being
      unmanaged, is not found either);
    * ``watch_events``: None, "no event stream" (the agent then relies on its relists);
    * ``container_stats``: empty (the runtime cannot tell).

    The image service (``Puller``: ``pull``, ``image_status``, ``list_images``, ``remove_image``,
    ``image_fs_usage``) is a separate object; a plugin writes its 5 methods too.
    """

    # -- what a plugin writes (see ``ContainerRuntime`` for each contract) ----------------

    @abc.abstractmethod
    def version(self) -> RuntimeVersion: ...

    @abc.abstractmethod
    def run_sandbox(self, config: SandboxConfig) -> str: ...

    @abc.abstractmethod
    def stop_sandbox(self, sandbox_id: str) -> None: ...

    @abc.abstractmethod
    def remove_sandbox(self, sandbox_id: str) -> None: ...

    @abc.abstractmethod
    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str: ...

    @abc.abstractmethod
    def start_container(self, container_id: str) -> None: ...

    @abc.abstractmethod
    def stop_container(self, container_id: str, timeout: float) -> None: ...

    @abc.abstractmethod
    def remove_container(self, container_id: str) -> None: ...

    @abc.abstractmethod
    def snapshot(self) -> RuntimeSnapshot: ...

    @abc.abstractmethod
    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult: ...

    @abc.abstractmethod
    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    # -- derived ---------------------------------------------------------------------------

    def list_sandboxes(self) -> list[RuntimeSandbox]:
        return list(self.snapshot().sandboxes)

    def list_containers(self) -> list[RuntimeContainer]:
        return list(self.snapshot().containers)

    def sandbox_status(self, sandbox_id: str) -> RuntimeSandbox:
        found = next((s for s in self.snapshot().sandboxes if s.id == sandbox_id), None)
        if found is None:
            raise SandboxNotFound(sandbox_id)
        return found

    def container_status(self, container_id: str) -> RuntimeContainer:
        found = next((c for c in self.snapshot().containers if c.id == container_id), None)
        if found is None:
            raise ContainerNotFound(container_id)
        return found

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> Subscription | None:
        return None

    def container_stats(self) -> list[ContainerStats]:
        return []


@runtime_checkable
class Puller(Protocol):
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

    def list_images(self) -> list[Image]: ...

    def remove_image(self, image: str) -> None:
        """Remove by id or reference (idempotent). Raises ``Conflict`` if a container uses it."""
        ...

    def image_fs_usage(self) -> ImageFsUsage | None:
        """Disk use of the image store, or None if the runtime cannot tell."""
        ...


class PullerWrapper:
    """Base for a ``Puller`` that wraps another: every call goes to ``inner`` unless a subclass
    overrides it (credentials, progress reporting, ...)."""

    def __init__(self, inner: Puller) -> None:
        self.inner = inner

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        return self.inner.pull(image, auth, progress)

    def image_status(self, image: str) -> Image | None:
        return self.inner.image_status(image)

    def list_images(self) -> list[Image]:
        return self.inner.list_images()

    def remove_image(self, image: str) -> None:
        self.inner.remove_image(image)

    def image_fs_usage(self) -> ImageFsUsage | None:
        return self.inner.image_fs_usage()


class ProbeOutcome(enum.Enum):
    SUCCESS = "success"
    FAILURE = "failure"
    UNKNOWN = "unknown"


@attrs.frozen
class ProbeResult:
    outcome: ProbeOutcome
    message: str = ""


@attrs.frozen
class ProbeTarget:
    """What a probe needs to know about the container it checks."""

    container_id: str
    pod_ip: str
    named_ports: Mapping[str, int] = attrs.field(factory=dict)


@runtime_checkable
class HealthChecker(Protocol):
    def check(self, probe: Probe, target: ProbeTarget) -> ProbeResult:
        """Run one probe (exec, HTTP GET or TCP) once, honouring ``probe.timeout_seconds``.
        Never raises: an error is a FAILURE (or UNKNOWN if the check could not run)."""
        ...


class EventType(enum.StrEnum):
    """An event's type, equal to its Kubernetes string: ``event.type == "Warning"`` holds."""

    NORMAL = "Normal"
    WARNING = "Warning"


@attrs.frozen
class ObjectReference:
    kind: str
    namespace: str
    name: str
    uid: str = ""
    field_path: str = ""
    """``spec.containers{web}`` for a container, '' for the pod itself."""


@attrs.frozen
class Event:
    involved_object: ObjectReference
    type: EventType
    reason: str
    message: str
    timestamp: float


@runtime_checkable
class EventRecorder(Protocol):
    def record(self, event: Event) -> None:
        """Must not raise and must not block for long."""
        ...
