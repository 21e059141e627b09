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
ContainerRestartPolicy = Literal["Always", "OnFailure", "Never"]
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
    generate_name: str = ""
    """Kept as written; only an API server makes a name from it (``name`` stays required)."""
    creation_timestamp: str = ""
    """RFC 3339; the agent reports when it first saw the pod (an API server's time is kept)."""


@attrs.frozen
class ConfigMapKeySelector:
    key: str
    name: str = ""
    optional: bool | None = None


@attrs.frozen
class SecretKeySelector:
    key: str
    name: str = ""
    optional: bool | None = None


@attrs.frozen
class ObjectFieldSelector:
    field_path: str
    api_version: str = "v1"


@attrs.frozen
class ResourceFieldSelector:
    resource: str
    container_name: str = ""
    divisor: str = ""
    """A quantity as written (``1Mi``); empty means 1."""


@attrs.frozen
class FileKeySelector:
    """A key of an env file in one of the pod's emptyDir volumes (``fileKeyRef``)."""

    volume_name: str
    path: str
    key: str
    optional: bool | None = None


@attrs.frozen
class EnvVarSource:
    config_map_key_ref: ConfigMapKeySelector | None = None
    secret_key_ref: SecretKeySelector | None = None
    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    file_key_ref: FileKeySelector | None = None


@attrs.frozen
class EnvVar:
    name: str
    value: str = ""
    value_from: EnvVarSource | None = None


@attrs.frozen
class ConfigMapEnvSource:
    name: str = ""
    optional: bool | None = None


@attrs.frozen
class SecretEnvSource:
    name: str = ""
    optional: bool | None = None


@attrs.frozen
class EnvFromSource:
    prefix: str = ""
    config_map_ref: ConfigMapEnvSource | None = None
    secret_ref: SecretEnvSource | None = None


@attrs.frozen
class ContainerPort:
    container_port: int
    name: str = ""
    host_port: int = 0
    host_ip: str = ""
    protocol: Protocol_ = "TCP"


MountPropagation = Literal["None", "HostToContainer", "Bidirectional"]


@attrs.frozen
class VolumeMount:
    name: str
    mount_path: str
    read_only: bool = False
    sub_path: str = ""
    sub_path_expr: str = ""
    mount_propagation: MountPropagation | None = None


@attrs.frozen
class ResourceRequirements:
    """Quantities kept as written (``250m``, ``128Mi``); ``kubecore.v1.parse_quantity``
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
class ContainerRestartRuleOnExitCodes:
    """The exit codes a restart rule matches: ``In`` the values, or ``NotIn`` them."""

    operator: str
    values: tuple[int, ...] = ()


@attrs.frozen
class ContainerRestartRule:
    """What to do when a container exits with matching exit codes (``action: Restart``)."""

    action: str
    exit_codes: ContainerRestartRuleOnExitCodes | None = None


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
class Capabilities:
    """Names as written (``NET_ADMIN`` or ``CAP_NET_ADMIN``; ``ALL``)."""

    add: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()


@attrs.frozen
class SeccompProfile:
    type: str
    """``RuntimeDefault``, ``Unconfined`` or ``Localhost``."""
    localhost_profile: str = ""
    """With ``Localhost``: a path relative to the node's seccomp profile directory."""


@attrs.frozen
class AppArmorProfile:
    type: str
    """``RuntimeDefault``, ``Unconfined`` or ``Localhost``."""
    localhost_profile: str = ""
    """With ``Localhost``: the name of a profile loaded on the node."""


@attrs.frozen
class SELinuxOptions:
    user: str = ""
    role: str = ""
    type: str = ""
    level: str = ""


@attrs.frozen
class WindowsSecurityContextOptions:
    gmsa_credential_spec_name: str = ""
    gmsa_credential_spec: str = ""
    run_as_user_name: str = ""
    host_process: bool | None = None


@attrs.frozen
class Sysctl:
    name: str
    value: str


@attrs.frozen
class SecurityContext:
    """A container's ``securityContext``; unset fields take the pod's value, if any."""

    privileged: bool | None = None
    capabilities: Capabilities | None = None
    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    read_only_root_filesystem: bool | None = None
    allow_privilege_escalation: bool | None = None
    proc_mount: str = ""
    """``Default`` or ``Unmasked`` ('' means ``Default``)."""
    seccomp_profile: SeccompProfile | None = None
    app_armor_profile: AppArmorProfile | None = None
    se_linux_options: SELinuxOptions | None = None
    windows_options: WindowsSecurityContextOptions | None = None


@attrs.frozen
class PodSecurityContext:
    """The pod's ``securityContext``: defaults for every container, and the pod's own settings
    (groups, volume ownership, sysctls)."""

    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    supplemental_groups: tuple[int, ...] = ()
    supplemental_groups_policy: str = ""
    """``Merge`` or ``Strict`` ('' means ``Merge``)."""
    fs_group: int | None = None
    fs_group_change_policy: str = ""
    """``Always`` or ``OnRootMismatch`` ('' means ``Always``)."""
    sysctls: tuple[Sysctl, ...] = ()
    seccomp_profile: SeccompProfile | None = None
    app_armor_profile: AppArmorProfile | None = None
    se_linux_options: SELinuxOptions | None = None
    se_linux_change_policy: str = ""
    windows_options: WindowsSecurityContextOptions | None = None


@attrs.frozen
class Container:
    name: str
    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    working_dir: str = ""
    env: tuple[EnvVar, ...] = ()
    env_from: tuple[EnvFromSource, ...] = ()
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
    """This container's own restart policy, over the pod's (KEP-5307). ``Always`` on an init
    container makes it a sidecar (a restartable init container)."""
    restart_policy_rules: tuple[ContainerRestartRule, ...] = ()
    """Checked in order when the container exits: the first that matches its exit code decides
    (``Restart``); when none does, ``restart_policy`` does."""
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
        """A restartable init container: it keeps running beside the app containers. (Read it
        on init containers only: an app container with its own ``Always`` policy is no sidecar.)"""
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
    mode: int | None = None
    """The directory's permission bits (0 to 01777; default 0777). The pod's fsGroup, when
    set, decides them instead (0777 with setgid), as in Kubernetes."""


@attrs.frozen
class HostPathVolumeSource:
    path: str
    type: str = ""


@attrs.frozen
class KeyToPath:
    key: str
    path: str
    mode: int | None = None


@attrs.frozen
class ConfigMapVolumeSource:
    name: str = ""
    items: tuple[KeyToPath, ...] = ()
    default_mode: int | None = None
    optional: bool | None = None


@attrs.frozen
class SecretVolumeSource:
    secret_name: str = ""
    items: tuple[KeyToPath, ...] = ()
    default_mode: int | None = None
    optional: bool | None = None


@attrs.frozen
class DownwardAPIVolumeFile:
    path: str
    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    mode: int | None = None


@attrs.frozen
class DownwardAPIVolumeSource:
    items: tuple[DownwardAPIVolumeFile, ...] = ()
    default_mode: int | None = None


@attrs.frozen
class ConfigMapProjection:
    name: str = ""
    items: tuple[KeyToPath, ...] = ()
    optional: bool | None = None


@attrs.frozen
class SecretProjection:
    name: str = ""
    items: tuple[KeyToPath, ...] = ()
    optional: bool | None = None


@attrs.frozen
class DownwardAPIProjection:
    items: tuple[DownwardAPIVolumeFile, ...] = ()


@attrs.frozen
class ServiceAccountTokenProjection:
    path: str
    audience: str = ""
    expiration_seconds: int = 0


@attrs.frozen
class VolumeProjection:
    config_map: ConfigMapProjection | None = None
    secret: SecretProjection | None = None
    downward_api: DownwardAPIProjection | None = None
    service_account_token: ServiceAccountTokenProjection | None = None


@attrs.frozen
class ProjectedVolumeSource:
    sources: tuple[VolumeProjection, ...] = ()
    default_mode: int | None = None


@attrs.frozen
class PersistentVolumeClaimVolumeSource:
    claim_name: str
    read_only: bool = False


@attrs.frozen
class ImageVolumeSource:
    reference: str = ""
    pull_policy: str = ""


@attrs.frozen
class Volume:
    name: str
    empty_dir: EmptyDirVolumeSource | None = None
    host_path: HostPathVolumeSource | None = None
    config_map: ConfigMapVolumeSource | None = None
    secret: SecretVolumeSource | None = None
    downward_api: DownwardAPIVolumeSource | None = None
    projected: ProjectedVolumeSource | None = None
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    image: ImageVolumeSource | None = None


@attrs.frozen
class LocalObjectReference:
    name: str


# --- scheduler-only fields: decoded, validated and dumped; the node does not act on them except
# nodeSelector and required node affinity (admission) and readinessGates (the Ready condition).


@attrs.frozen
class Toleration:
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


@attrs.frozen
class LabelSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@attrs.frozen
class LabelSelector:
    match_labels: dict[str, str] = attrs.field(factory=dict)
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


@attrs.frozen
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str = ""
    node_taints_policy: str = ""
    match_label_keys: tuple[str, ...] = ()


@attrs.frozen
class PodSchedulingGate:
    name: str


@attrs.frozen
class NodeSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@attrs.frozen
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@attrs.frozen
class NodeSelector:
    node_selector_terms: tuple[NodeSelectorTerm, ...] = ()


@attrs.frozen
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm


@attrs.frozen
class NodeAffinity:
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = ()


@attrs.frozen
class PodAffinityTerm:
    topology_key: str
    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@attrs.frozen
class WeightedPodAffinityTerm:
    weight: int
    pod_affinity_term: PodAffinityTerm


@attrs.frozen
class PodAffinity:
    """``podAffinity`` and ``podAntiAffinity`` (the same shape)."""

    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = ()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = ()


@attrs.frozen
class Affinity:
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


@attrs.frozen
class PodReadinessGate:
    condition_type: str


@attrs.frozen
class PodOS:
    name: str


# --- pod-level options ----------------------------------------------------------------------


@attrs.frozen
class HostAlias:
    ip: str
    hostnames: tuple[str, ...] = ()


@attrs.frozen
class PodDNSConfigOption:
    name: str = ""
    value: str = ""


@attrs.frozen
class PodDNSConfig:
    nameservers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[PodDNSConfigOption, ...] = ()


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
    # scheduler and API-server fields
    node_selector: dict[str, str] = attrs.field(factory=dict)
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    scheduling_gates: tuple[PodSchedulingGate, ...] = ()
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str = ""
    scheduler_name: str = ""
    service_account_name: str = ""
    service_account: str = ""
    """The deprecated alias of ``service_account_name``."""
    automount_service_account_token: bool | None = None
    overhead: dict[str, str] = attrs.field(factory=dict)
    readiness_gates: tuple[PodReadinessGate, ...] = ()
    os: PodOS | None = None
    enable_service_links: bool | None = None
    # pod-level options
    share_process_namespace: bool | None = None
    host_pid: bool = False
    host_ipc: bool = False
    host_aliases: tuple[HostAlias, ...] = ()
    hostname: str = ""
    subdomain: str = ""
    set_hostname_as_fqdn: bool | None = None
    dns_config: PodDNSConfig | None = None
    resources: ResourceRequirements | None = None
    security_context: PodSecurityContext | None = None
    host_users: bool | None = None
    active_deadline_seconds: int | None = None


# --- ConfigMaps and Secrets ---------------------------------------------------------------------


@attrs.frozen
class ConfigMap:
    metadata: ObjectMeta
    data: dict[str, str] = attrs.field(factory=dict)
    binary_data: dict[str, bytes] = attrs.field(factory=dict)
    immutable: bool | None = None
    api_version: str = "v1"
    kind: str = "ConfigMap"


SECRET_TYPE_OPAQUE = "Opaque"
SECRET_TYPE_DOCKER_CONFIG_JSON = "kubernetes.io/dockerconfigjson"
SECRET_TYPE_DOCKERCFG = "kubernetes.io/dockercfg"


@attrs.frozen
class Secret:
    """``data`` holds the decoded bytes; a manifest's ``stringData`` is merged into it when read
    (its keys win, as the API server does). Values are left out of ``repr``."""

    metadata: ObjectMeta
    data: dict[str, bytes] = attrs.field(factory=dict, repr=False)
    string_data: dict[str, str] = attrs.field(factory=dict, repr=False)
    type: str = SECRET_TYPE_OPAQUE
    immutable: bool | None = None
    api_version: str = "v1"
    kind: str = "Secret"


KubeObject = ConfigMap | Secret
"""The objects (besides pods) that sources deliver to the agent."""


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
class HostIP:
    ip: str


@attrs.frozen
class PodIP:
    ip: str


QOSClass = Literal["", "Guaranteed", "Burstable", "BestEffort"]


@attrs.frozen
class PodStatus:
    phase: PodPhase = "Pending"
    conditions: tuple[PodCondition, ...] = ()
    message: str = ""
    reason: str = ""
    host_ip: str = ""
    host_ips: tuple[HostIP, ...] = ()
    pod_ip: str = ""
    pod_ips: tuple[PodIP, ...] = ()
    start_time: str = ""
    qos_class: QOSClass = ""
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
