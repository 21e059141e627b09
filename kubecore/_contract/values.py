"""The values of the runtime contract: what the core asks a runtime for (``SandboxConfig``,
``ContainerConfig`` and their parts, in the CRI's shape) and what a runtime reports back
(``RuntimeSnapshot``, ``RuntimeContainer``, images, stats, events), plus the values of the probe
and event seams. Frozen ``attrs`` classes and enums, no behaviour."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs


class SandboxState(enum.Enum):
    """A sandbox's state as the engine reports it: READY while its namespaces are up."""

    READY = "ready"
    NOTREADY = "notready"


class RuntimeState(enum.Enum):
    """A container's state as the engine reports it."""

    CREATED = "created"
    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"


class RuntimeEventType(enum.Enum):
    """What happened to a container in a ``RuntimeEvent`` (CRI ``ContainerEventType``)."""

    CREATED = "created"
    STARTED = "started"
    DIED = "died"
    OOM = "oom"
    DELETED = "deleted"


# --- configs: what the core asks for --------------------------------------------------------


@attrs.frozen
class PortMapping:
    """A container port published on the node (CRI ``PortMapping``): ``host_port`` 0 publishes
    none."""

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
    """A volume mounted into a container (CRI ``Mount``): a bind of ``host_path``, or a tmpfs
    when ``memory_backed``."""

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
    """The sandbox's resolv.conf (CRI ``DNSConfig``): name servers, search domains, options."""

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
    TARGET = "TARGET"
    """Another container's, ``NamespaceOption.target_id`` (pid only: an ephemeral container
    with a ``targetContainerName``)."""


@attrs.frozen
class NamespaceOption:
    """CRI's ``NamespaceOption``: the namespaces of a pod's containers."""

    network: NamespaceMode = NamespaceMode.POD
    pid: NamespaceMode = NamespaceMode.CONTAINER
    ipc: NamespaceMode = NamespaceMode.POD
    target_id: str = ""
    """The runtime id of the container whose namespace ``pid`` TARGET joins."""


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
    """CRI ``SELinuxOption``: the SELinux label a container runs with; empty fields keep the
    runtime's."""

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
    """What the core asks ``run_sandbox`` for (CRI ``PodSandboxConfig``): the pod's identity,
    network, ports, DNS, labels and shared namespaces."""

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
    """What the core asks ``create_container`` for (CRI ``ContainerConfig``): image, command,
    environment, mounts, resources and security, built from the pod spec."""

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
    namespace_options: NamespaceOption | None = None
    """None: the namespaces the sandbox's ``namespace_options`` give every container of the pod.
    Set (CRI ``LinuxContainerSecurityContext.namespace_options``) for an ephemeral container
    that targets another: ``pid`` TARGET with ``target_id``, the pod's for the others. A runtime
    that cannot join another container's pid namespace refuses the container (``InvalidConfig``
    naming ``namespace_options.pid``), never runs it in a namespace of its own."""


@attrs.frozen
class ContainerResources:
    """The Linux resources of a running container (CRI ``LinuxContainerResources``), as
    ``ResourceUpdater.update_container_resources`` changes them in place."""

    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    memory_limit: int | None = None


# --- observations: what the runtime reports ------------------------------------------------


@attrs.frozen
class RuntimeSandbox:
    """A sandbox as the runtime reports it (CRI ``PodSandbox``), with the labels and annotations
    it was created with."""

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
    """A container as the runtime reports it (CRI ``ContainerStatus``): its state, times, exit
    code, reason, and the labels and annotations it was created with."""

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
    log_path: str = ""
    """The file the runtime writes the container's output to in the CRI log format (CRI
    ``ContainerStatus.log_path``), read and rotated by the agent; '' for a runtime that keeps
    logs itself (Docker)."""


@attrs.frozen
class RuntimeSnapshot:
    """Everything kubecore manages on this runtime, read at one moment."""

    sandboxes: tuple[RuntimeSandbox, ...] = ()
    containers: tuple[RuntimeContainer, ...] = ()
    taken_at: float = 0.0


@attrs.frozen
class ExecResult:
    """What ``exec_sync`` answers: the command's exit code and output."""

    exit_code: int
    stdout: bytes = b""
    stderr: bytes = b""


@attrs.frozen
class RuntimeEvent:
    """One container event from ``watch_events`` (CRI ``ContainerEventResponse``); ``pod_uid``
    and ``container_name`` come from the container's labels."""

    type: RuntimeEventType
    container_id: str
    timestamp: float
    pod_uid: str = ""
    container_name: str = ""
    exit_code: int | None = None


@attrs.frozen
class RuntimeVersion:
    """What ``version`` answers (CRI ``VersionResponse``)."""

    runtime_name: str
    runtime_version: str
    api_version: str = ""


@attrs.frozen
class ContainerStats:
    """The usage of one running container (CRI ``ContainerStats``); None where the runtime cannot
    tell."""

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
    """An image in the runtime's store (CRI ``Image``)."""

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
    """The disk use of the image store (CRI ``FilesystemUsage``), for image garbage collection."""

    used_bytes: int
    capacity_bytes: int


@attrs.frozen
class RegistryAuth:
    """The credentials of one pull (CRI ``AuthConfig``), from the pod's pull secrets or the
    node's keyring."""

    username: str = ""
    password: str = ""
    server: str = ""
    identity_token: str = ""


@attrs.frozen
class PullProgress:
    """One step of a pull, reported to ``pull``'s ``progress`` callback (a layer's download,
    say)."""

    image: str
    status: str
    current: int | None = None
    total: int | None = None
    layer: str = ""


class ProbeOutcome(enum.Enum):
    """A probe's verdict: SUCCESS, FAILURE, or UNKNOWN when the check could not run."""

    SUCCESS = "success"
    FAILURE = "failure"
    UNKNOWN = "unknown"


@attrs.frozen
class ProbeResult:
    """What ``HealthChecker.check`` answers: the outcome and, on failure, why."""

    outcome: ProbeOutcome
    message: str = ""


@attrs.frozen
class ProbeTarget:
    """What a probe needs to know about the container it checks."""

    container_id: str
    pod_ip: str
    named_ports: Mapping[str, int] = attrs.field(factory=dict)


class EventType(enum.StrEnum):
    """An event's type, equal to its Kubernetes string: ``event.type == "Warning"`` holds."""

    NORMAL = "Normal"
    WARNING = "Warning"


@attrs.frozen
class ObjectReference:
    """The object an ``Event`` is about (v1 ``ObjectReference``): a pod, or one of its
    containers."""

    kind: str
    namespace: str
    name: str
    uid: str = ""
    field_path: str = ""
    """``spec.containers{web}`` for a container, '' for the pod itself."""


@attrs.frozen
class Event:
    """One Kubernetes event the agent records (v1 ``Event``): about which object, Normal or
    Warning, its reason and message."""

    involved_object: ObjectReference
    type: EventType
    reason: str
    message: str
    timestamp: float
