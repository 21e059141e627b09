"""The Kubernetes ``v1`` Pod, as frozen attrs classes.

Attribute names are the snake_case forms of the v1 JSON field names (``volumeMounts`` ->
``volume_mounts``, ``httpGet`` -> ``http_get``). Loading, dumping and validation live in
``_manifest.py``; these classes only hold values and the defaults Kubernetes applies.
Mappings are plain dicts for convenience: treat them as read-only.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import attrs

DEFAULT_NAMESPACE = "default"
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"
DEFAULT_TERMINATION_GRACE_PERIOD = 30

RestartPolicy = Literal["Always", "OnFailure", "Never"]
PullPolicy = Literal["Always", "IfNotPresent", "Never"]
DNSPolicy = Literal["ClusterFirst", "Default", "None", "ClusterFirstWithHostNet"]
Protocol_ = Literal["TCP", "UDP", "SCTP"]
PodPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]
ContainerRestartPolicy = Literal["Always"]
TerminationMessagePolicy = Literal["File", "FallbackToLogsOnError"]


def image_tag(image: str) -> str:
    """The tag of an image reference ('' when it has none or is pinned by digest)."""
    if "@" in image:
        return ""
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else ""


def default_pull_policy(image: str) -> PullPolicy:
    """Kubernetes' default: Always for ``:latest`` or no tag, else IfNotPresent."""
    if "@" in image:
        return "IfNotPresent"
    tag = image_tag(image)
    return "Always" if tag in ("", "latest") else "IfNotPresent"


@attrs.frozen
class ObjectMeta:
    name: str
    namespace: str = DEFAULT_NAMESPACE
    uid: str = ""
    labels: dict[str, str] = attrs.field(factory=dict)
    annotations: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class EnvVar:
    name: str
    value: str = ""


@attrs.frozen
class ContainerPort:
    container_port: int
    name: str = ""
    host_port: int = 0
    host_ip: str = ""
    protocol: Protocol_ = "TCP"


@attrs.frozen
class VolumeMount:
    name: str
    mount_path: str
    read_only: bool = False


@attrs.frozen
class ResourceRequirements:
    """Quantities kept as written (``250m``, ``128Mi``); ``kubecore.quantity.parse_quantity``
    reads them."""

    requests: dict[str, str] = attrs.field(factory=dict)
    limits: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class ContainerResizePolicy:
    """How a change of one resource (``cpu``, ``memory``) of a running container is applied:
    ``NotRequired`` (in place, where the runtime can) or ``RestartContainer``."""

    resource_name: str
    restart_policy: str = "NotRequired"


@attrs.frozen
class ExecAction:
    command: tuple[str, ...] = ()


@attrs.frozen
class HTTPHeader:
    name: str
    value: str


@attrs.frozen
class HTTPGetAction:
    port: int | str
    path: str = "/"
    host: str = ""
    scheme: Literal["HTTP", "HTTPS"] = "HTTP"
    http_headers: tuple[HTTPHeader, ...] = ()


@attrs.frozen
class TCPSocketAction:
    port: int | str
    host: str = ""


@attrs.frozen
class GRPCAction:
    """A gRPC health check (``grpc.health.v1.Health/Check``) of ``service`` ('' for the server)."""

    port: int
    service: str = ""


@attrs.frozen
class SleepAction:
    seconds: int


@attrs.frozen
class Probe:
    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    initial_delay_seconds: int = 0
    timeout_seconds: int = 1
    period_seconds: int = 10
    success_threshold: int = 1
    failure_threshold: int = 3
    grpc: GRPCAction | None = None
    termination_grace_period_seconds: int | None = None
    """The grace period of a kill after this (liveness or startup) probe failed; else the pod's."""


@attrs.frozen
class LifecycleHandler:
    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    sleep: SleepAction | None = None


@attrs.frozen
class Lifecycle:
    post_start: LifecycleHandler | None = None
    pre_stop: LifecycleHandler | None = None
    stop_signal: str = ""
    """The signal that stops the container (``SIGUSR1``); '' for the image's (else TERM)."""


@attrs.frozen
class SecurityContext:
    privileged: bool | None = None


@attrs.frozen
class Container:
    name: str
    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    working_dir: str = ""
    env: tuple[EnvVar, ...] = ()
    ports: tuple[ContainerPort, ...] = ()
    volume_mounts: tuple[VolumeMount, ...] = ()
    resources: ResourceRequirements = attrs.field(factory=ResourceRequirements)
    liveness_probe: Probe | None = None
    readiness_probe: Probe | None = None
    startup_probe: Probe | None = None
    lifecycle: Lifecycle | None = None
    image_pull_policy: PullPolicy = attrs.field()
    security_context: SecurityContext | None = None
    termination_message_path: str = DEFAULT_TERMINATION_MESSAGE_PATH
    termination_message_policy: TerminationMessagePolicy = "File"
    restart_policy: ContainerRestartPolicy | None = None
    """``Always`` on an init container makes it a sidecar (a restartable init container)."""
    stdin: bool = False
    stdin_once: bool = False
    tty: bool = False
    resize_policy: tuple[ContainerResizePolicy, ...] = ()
    """With one, a change of this container's resources is a resize (in place where allowed and
    the runtime can), not a change of its spec."""

    @image_pull_policy.default
    def _default_pull_policy(self) -> PullPolicy:
        return default_pull_policy(self.image)

    @property
    def is_sidecar(self) -> bool:
        """A restartable init container: it keeps running beside the app containers."""
        return self.restart_policy == "Always"

    @property
    def privileged(self) -> bool:
        return bool(self.security_context and self.security_context.privileged)

    @functools.cached_property
    def derived(self) -> dict[str, Any]:
        """Values kubecore's pure functions derive from this immutable object (spec hashes, the
        planner's index), computed once and kept here rather than in a module-level cache.
        Not a field: equality, hashing, ``attrs.evolve`` and dumping ignore it."""
        return {}


@attrs.frozen
class EmptyDirVolumeSource:
    medium: str = ""
    size_limit: str | None = None


@attrs.frozen
class HostPathVolumeSource:
    path: str
    type: str = ""


@attrs.frozen
class Volume:
    name: str
    empty_dir: EmptyDirVolumeSource | None = None
    host_path: HostPathVolumeSource | None = None


@attrs.frozen
class LocalObjectReference:
    name: str


@attrs.frozen
class PodSpec:
    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...] = ()
    volumes: tuple[Volume, ...] = ()
    restart_policy: RestartPolicy = "Always"
    dns_policy: DNSPolicy = "ClusterFirst"
    host_network: bool = False
    termination_grace_period_seconds: int = DEFAULT_TERMINATION_GRACE_PERIOD
    node_name: str = ""
    image_pull_secrets: tuple[LocalObjectReference, ...] = ()
    active_deadline_seconds: int | None = None


# --- status -----------------------------------------------------------------------------------
# Times are RFC 3339 strings, as the v1 API shows them.


@attrs.frozen
class ContainerStateWaiting:
    reason: str = ""
    message: str = ""


@attrs.frozen
class ContainerStateRunning:
    started_at: str = ""


@attrs.frozen
class ContainerStateTerminated:
    exit_code: int
    reason: str = ""
    message: str = ""
    signal: int = 0
    started_at: str = ""
    finished_at: str = ""
    container_id: str = ""


@attrs.frozen
class ContainerState:
    """Exactly one of the three is set (or none, for an unknown state)."""

    waiting: ContainerStateWaiting | None = None
    running: ContainerStateRunning | None = None
    terminated: ContainerStateTerminated | None = None


@attrs.frozen
class ContainerStatus:
    name: str
    image: str
    state: ContainerState = attrs.field(factory=ContainerState)
    last_state: ContainerState = attrs.field(factory=ContainerState)
    ready: bool = False
    started: bool = False
    restart_count: int = 0
    image_id: str = ""
    container_id: str = ""


@attrs.frozen
class PodCondition:
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""


@attrs.frozen
class PodStatus:
    phase: PodPhase = "Pending"
    conditions: tuple[PodCondition, ...] = ()
    message: str = ""
    reason: str = ""
    host_ip: str = ""
    pod_ip: str = ""
    start_time: str = ""
    init_container_statuses: tuple[ContainerStatus, ...] = ()
    container_statuses: tuple[ContainerStatus, ...] = ()


@attrs.frozen
class Pod:
    metadata: ObjectMeta
    spec: PodSpec
    status: PodStatus | None = None
    api_version: str = "v1"
    kind: str = "Pod"

    @property
    def uid(self) -> str:
        return self.metadata.uid

    @property
    def full_name(self) -> str:
        """``name_namespace``, the seed's pod full name (unique on a node)."""
        return f"{self.metadata.name}_{self.metadata.namespace}"

    @functools.cached_property
    def derived(self) -> dict[str, Any]:
        """Values kubecore's pure functions derive from this immutable object (spec hashes, the
        planner's index), computed once and kept here rather than in a module-level cache.
        Not a field: equality, hashing, ``attrs.evolve`` and dumping ignore it."""
        return {}
