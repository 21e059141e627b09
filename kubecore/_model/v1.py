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
TERMINAL_PHASES: tuple[PodPhase, ...] = ("Succeeded", "Failed")
"""The phases of a pod that has ended: it never starts anything again."""
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
    """v1 ``ObjectMeta``: an object's name, namespace, uid, labels and annotations."""

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
    """v1 ``ConfigMapKeySelector``: one key of a ConfigMap, for an environment variable's value."""

    key: str
    name: str = ""
    optional: bool | None = None


@attrs.frozen
class SecretKeySelector:
    """v1 ``SecretKeySelector``: one key of a Secret, for an environment variable's value."""

    key: str
    name: str = ""
    optional: bool | None = None


@attrs.frozen
class ObjectFieldSelector:
    """v1 ``ObjectFieldSelector``: a field of the pod (``metadata.name``, ``status.podIP``, ...)
    for the downward API."""

    field_path: str
    api_version: str = "v1"


@attrs.frozen
class ResourceFieldSelector:
    """v1 ``ResourceFieldSelector``: a container's resource request or limit (``limits.memory``,
    ...) for the downward API."""

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
    """v1 ``EnvVarSource``: where an environment variable's value comes from (one of the
    references)."""

    config_map_key_ref: ConfigMapKeySelector | None = None
    secret_key_ref: SecretKeySelector | None = None
    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    file_key_ref: FileKeySelector | None = None


@attrs.frozen
class EnvVar:
    """v1 ``EnvVar``: one environment variable of a container, given as ``value`` or read from
    ``value_from``."""

    name: str
    value: str = ""
    value_from: EnvVarSource | None = None


@attrs.frozen
class ConfigMapEnvSource:
    """v1 ``ConfigMapEnvSource``: a ConfigMap whose every key becomes an environment variable."""

    name: str = ""
    optional: bool | None = None


@attrs.frozen
class SecretEnvSource:
    """v1 ``SecretEnvSource``: a Secret whose every key becomes an environment variable."""

    name: str = ""
    optional: bool | None = None


@attrs.frozen
class EnvFromSource:
    """v1 ``EnvFromSource``: one entry of ``envFrom``, a ConfigMap or Secret with an optional
    name prefix."""

    prefix: str = ""
    config_map_ref: ConfigMapEnvSource | None = None
    secret_ref: SecretEnvSource | None = None


@attrs.frozen
class ContainerPort:
    """v1 ``ContainerPort``: a port a container listens on, published on the node when
    ``host_port`` is set."""

    container_port: int
    name: str = ""
    host_port: int = 0
    host_ip: str = ""
    protocol: Protocol_ = "TCP"


MountPropagation = Literal["None", "HostToContainer", "Bidirectional"]


@attrs.frozen
class VolumeMount:
    """v1 ``VolumeMount``: where one of the pod's volumes appears in a container, and how (read-
    only, subPath, propagation)."""

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
    """v1 ``ExecAction``: a command run in the container, for a probe or a lifecycle hook."""

    command: tuple[str, ...] = ()


@attrs.frozen
class HTTPHeader:
    """v1 ``HTTPHeader``: one header an HTTP GET probe or hook sends."""

    name: str
    value: str


@attrs.frozen
class HTTPGetAction:
    """v1 ``HTTPGetAction``: an HTTP GET to the container (port, path, scheme, headers), for a
    probe or a hook."""

    port: int | str
    path: str = "/"
    host: str = ""
    scheme: Literal["HTTP", "HTTPS"] = "HTTP"
    http_headers: tuple[HTTPHeader, ...] = ()


@attrs.frozen
class TCPSocketAction:
    """v1 ``TCPSocketAction``: a TCP connection to the container's port, for a probe."""

    port: int | str
    host: str = ""


@attrs.frozen
class GRPCAction:
    """A gRPC health check (``grpc.health.v1.Health/Check``) of ``service`` ('' for the server)."""

    port: int
    service: str = ""


@attrs.frozen
class SleepAction:
    """v1 ``SleepAction``: a pause of some seconds, as a lifecycle hook."""

    seconds: int


@attrs.frozen
class Probe:
    """v1 ``Probe``: a liveness, readiness or startup check (exec, HTTP GET, TCP or gRPC) and its
    timing and thresholds."""

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
    """v1 ``LifecycleHandler``: what a postStart or preStop hook does (exec, HTTP GET or sleep)."""

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    sleep: SleepAction | None = None


@attrs.frozen
class Lifecycle:
    """v1 ``Lifecycle``: a container's postStart and preStop hooks."""

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
    """v1 ``SeccompProfile``: the seccomp profile a container runs with (RuntimeDefault,
    Unconfined or a Localhost file)."""

    type: str
    """``RuntimeDefault``, ``Unconfined`` or ``Localhost``."""
    localhost_profile: str = ""
    """With ``Localhost``: a path relative to the node's seccomp profile directory."""


@attrs.frozen
class AppArmorProfile:
    """v1 ``AppArmorProfile``: the AppArmor profile a container runs with."""

    type: str
    """``RuntimeDefault``, ``Unconfined`` or ``Localhost``."""
    localhost_profile: str = ""
    """With ``Localhost``: the name of a profile loaded on the node."""


@attrs.frozen
class SELinuxOptions:
    """v1 ``SELinuxOptions``: the SELinux label (user, role, type, level) of a pod or container."""

    user: str = ""
    role: str = ""
    type: str = ""
    level: str = ""


@attrs.frozen
class WindowsSecurityContextOptions:
    """v1 ``WindowsSecurityContextOptions``: Windows-only security settings (read and validated;
    Linux runtimes ignore them)."""

    gmsa_credential_spec_name: str = ""
    gmsa_credential_spec: str = ""
    run_as_user_name: str = ""
    host_process: bool | None = None


@attrs.frozen
class Sysctl:
    """v1 ``Sysctl``: one namespaced kernel parameter set for the pod."""

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
    """v1 ``Container``: one container of a pod (image, command, environment, ports, mounts,
    resources, probes, hooks, security)."""

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
        """Whether ``securityContext.privileged`` is set."""
        return bool(self.security_context and self.security_context.privileged)

    @functools.cached_property
    def derived(self) -> dict[str, Any]:
        """Values kubecore's pure functions derive from this immutable object (spec hashes, the
        planner's index), computed once and kept here rather than in a module-level cache.
        Not a field: equality, hashing, ``attrs.evolve`` and dumping ignore it."""
        return {}


@attrs.frozen
class EphemeralContainer(Container):
    """v1 ``EphemeralContainer``: a container added to a running pod (``kubectl debug``) through
    the ``pods/ephemeralcontainers`` subresource. It has a container's fields, less those that
    validation refuses on it (ports, probes, resources, lifecycle, restart policy, resize
    policy), and is started once, never restarted, and left out of the pod's spec hashes."""

    target_container_name: str = ""
    """The app or init container whose process namespace it joins ('' : the pod's)."""


@attrs.frozen
class EmptyDirVolumeSource:
    """v1 ``EmptyDirVolumeSource``: a directory that lives as long as the pod, on disk or in
    memory (``medium: Memory``)."""

    medium: str = ""
    size_limit: str | None = None
    mode: int | None = None
    """The directory's permission bits (0 to 01777; default 0777). The pod's fsGroup, when
    set, decides them instead (0777 with setgid), as in Kubernetes."""


@attrs.frozen
class HostPathVolumeSource:
    """v1 ``HostPathVolumeSource``: a file or directory of the node, with an optional type check."""

    path: str
    type: str = ""


@attrs.frozen
class KeyToPath:
    """v1 ``KeyToPath``: which key of a ConfigMap or Secret becomes which file of a volume, and
    its mode."""

    key: str
    path: str
    mode: int | None = None


@attrs.frozen
class ConfigMapVolumeSource:
    """v1 ``ConfigMapVolumeSource``: a ConfigMap's keys as files."""

    name: str = ""
    items: tuple[KeyToPath, ...] = ()
    default_mode: int | None = None
    optional: bool | None = None


@attrs.frozen
class SecretVolumeSource:
    """v1 ``SecretVolumeSource``: a Secret's keys as files."""

    secret_name: str = ""
    items: tuple[KeyToPath, ...] = ()
    default_mode: int | None = None
    optional: bool | None = None


@attrs.frozen
class DownwardAPIVolumeFile:
    """v1 ``DownwardAPIVolumeFile``: one file of a downward API volume, holding a pod field or a
    resource."""

    path: str
    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    mode: int | None = None


@attrs.frozen
class DownwardAPIVolumeSource:
    """v1 ``DownwardAPIVolumeSource``: pod fields and container resources as files."""

    items: tuple[DownwardAPIVolumeFile, ...] = ()
    default_mode: int | None = None


@attrs.frozen
class ConfigMapProjection:
    """v1 ``ConfigMapProjection``: a ConfigMap's keys in a projected volume."""

    name: str = ""
    items: tuple[KeyToPath, ...] = ()
    optional: bool | None = None


@attrs.frozen
class SecretProjection:
    """v1 ``SecretProjection``: a Secret's keys in a projected volume."""

    name: str = ""
    items: tuple[KeyToPath, ...] = ()
    optional: bool | None = None


@attrs.frozen
class DownwardAPIProjection:
    """v1 ``DownwardAPIProjection``: downward API files in a projected volume."""

    items: tuple[DownwardAPIVolumeFile, ...] = ()


@attrs.frozen
class ServiceAccountTokenProjection:
    """v1 ``ServiceAccountTokenProjection``: a service account token file in a projected volume."""

    path: str
    audience: str = ""
    expiration_seconds: int = 0


@attrs.frozen
class VolumeProjection:
    """v1 ``VolumeProjection``: one source of a projected volume (ConfigMap, Secret, downward API
    or token)."""

    config_map: ConfigMapProjection | None = None
    secret: SecretProjection | None = None
    downward_api: DownwardAPIProjection | None = None
    service_account_token: ServiceAccountTokenProjection | None = None


@attrs.frozen
class ProjectedVolumeSource:
    """v1 ``ProjectedVolumeSource``: several sources merged into one directory."""

    sources: tuple[VolumeProjection, ...] = ()
    default_mode: int | None = None


@attrs.frozen
class PersistentVolumeClaimVolumeSource:
    """v1 ``PersistentVolumeClaimVolumeSource``: a claim on a persistent volume, by name."""

    claim_name: str
    read_only: bool = False


@attrs.frozen
class ImageVolumeSource:
    """v1 ``ImageVolumeSource``: an OCI image's content mounted as a volume."""

    reference: str = ""
    pull_policy: str = ""


@attrs.frozen
class Volume:
    """v1 ``Volume``: one named volume of a pod, with exactly one source."""

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
    """v1 ``LocalObjectReference``: an object of the pod's namespace by name (an image pull
    secret, say)."""

    name: str


# --- scheduler-only fields: decoded, validated and dumped; the node does not act on them except
# nodeSelector and required node affinity (admission) and readinessGates (the Ready condition).


@attrs.frozen
class Toleration:
    """v1 ``Toleration``: a taint of the node the pod accepts (key, operator, value, effect)."""

    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


@attrs.frozen
class LabelSelectorRequirement:
    """v1 ``LabelSelectorRequirement``: one ``key operator values`` term of a label selector."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@attrs.frozen
class LabelSelector:
    """v1 ``LabelSelector``: the labels an object must have (exact matches and expressions)."""

    match_labels: dict[str, str] = attrs.field(factory=dict)
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


@attrs.frozen
class TopologySpreadConstraint:
    """v1 ``TopologySpreadConstraint``: how evenly the pod's peers spread across a topology (read
    and validated; a scheduler's concern)."""

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
    """v1 ``PodSchedulingGate``: a gate that holds the pod back from scheduling while present."""

    name: str


@attrs.frozen
class NodeSelectorRequirement:
    """v1 ``NodeSelectorRequirement``: one ``key operator values`` term on a node's labels."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@attrs.frozen
class NodeSelectorTerm:
    """v1 ``NodeSelectorTerm``: requirements a node must all meet (on labels and fields)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@attrs.frozen
class NodeSelector:
    """v1 ``NodeSelector``: node selector terms, any of which a node must meet."""

    node_selector_terms: tuple[NodeSelectorTerm, ...] = ()


@attrs.frozen
class PreferredSchedulingTerm:
    """v1 ``PreferredSchedulingTerm``: a node selector term with a weight, a preference not a
    rule."""

    weight: int
    preference: NodeSelectorTerm


@attrs.frozen
class NodeAffinity:
    """v1 ``NodeAffinity``: the nodes a pod requires or prefers (the agent checks the required
    part against its own node)."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = ()


@attrs.frozen
class PodAffinityTerm:
    """v1 ``PodAffinityTerm``: the pods whose nodes (by topology key) a pod wants to be near or
    away from."""

    topology_key: str
    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@attrs.frozen
class WeightedPodAffinityTerm:
    """v1 ``WeightedPodAffinityTerm``: a pod affinity term with a weight, a preference not a
    rule."""

    weight: int
    pod_affinity_term: PodAffinityTerm


@attrs.frozen
class PodAffinity:
    """``podAffinity`` and ``podAntiAffinity`` (the same shape)."""

    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = ()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = ()


@attrs.frozen
class Affinity:
    """v1 ``Affinity``: the pod's node affinity, pod affinity and pod anti-affinity."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


@attrs.frozen
class PodReadinessGate:
    """v1 ``PodReadinessGate``: a pod condition that must be true for the pod to be Ready."""

    condition_type: str


@attrs.frozen
class PodOS:
    """v1 ``PodOS``: the operating system the pod's containers need (``linux`` or ``windows``)."""

    name: str


# --- pod-level options ----------------------------------------------------------------------


@attrs.frozen
class HostAlias:
    """v1 ``HostAlias``: an IP and its host names, added to the pod's managed hosts file."""

    ip: str
    hostnames: tuple[str, ...] = ()


@attrs.frozen
class PodDNSConfigOption:
    """v1 ``PodDNSConfigOption``: one resolver option (``ndots``, ...) of the pod's resolv.conf."""

    name: str = ""
    value: str = ""


@attrs.frozen
class PodDNSConfig:
    """v1 ``PodDNSConfig``: name servers, searches and options added to (or, with dnsPolicy None,
    making) the pod's resolv.conf."""

    nameservers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[PodDNSConfigOption, ...] = ()


@attrs.frozen
class PodSpec:
    """v1 ``PodSpec``: what a pod runs and how (containers, init containers, volumes, restart
    policy, DNS, security, scheduling)."""

    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...] = ()
    ephemeral_containers: tuple[EphemeralContainer, ...] = ()
    """Added to a running pod over the API's ``pods/ephemeralcontainers``, never removed."""
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
    """v1 ``ConfigMap``: named text and binary data that pods read as environment variables or
    files."""

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
    """v1 ``ContainerStateWaiting``: a container not yet running, and why (``ContainerCreating``,
    ``CrashLoopBackOff``, ...)."""

    reason: str = ""
    message: str = ""


@attrs.frozen
class ContainerStateRunning:
    """v1 ``ContainerStateRunning``: a running container, since when."""

    started_at: str = ""


@attrs.frozen
class ContainerStateTerminated:
    """v1 ``ContainerStateTerminated``: a container that ran and exited: its exit code, reason,
    message and times."""

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
    """v1 ``ContainerStatus``: what the agent reports of one container: its state, last state,
    readiness, restarts, image and id."""

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
    """v1 ``PodCondition``: one condition of the pod (``Ready``, ``Initialized``, ...), true or
    not, since when and why."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""


@attrs.frozen
class HostIP:
    """v1 ``HostIP``: one IP address of the node the pod runs on."""

    ip: str


@attrs.frozen
class PodIP:
    """v1 ``PodIP``: one IP address of the pod."""

    ip: str


QOSClass = Literal["", "Guaranteed", "Burstable", "BestEffort"]


@attrs.frozen
class PodStatus:
    """v1 ``PodStatus``: what the agent reports of a pod: its phase, conditions, IPs and every
    container's status."""

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
    ephemeral_container_statuses: tuple[ContainerStatus, ...] = ()


@attrs.frozen
class Pod:
    """v1 ``Pod``: the unit the agent runs, its ``metadata``, ``spec`` and the ``status`` the
    agent reports; build one, or load it from a manifest (``kubecore.manifest``)."""

    metadata: ObjectMeta
    spec: PodSpec
    status: PodStatus | None = None
    api_version: str = "v1"
    kind: str = "Pod"

    @property
    def uid(self) -> str:
        """``metadata.uid``: the pod's identity on the node."""
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
