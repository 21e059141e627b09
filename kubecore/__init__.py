"""kubecore: the core of a container node agent (the Kubernetes kubelet) as a pluggable library.

Public names are re-exported here; the modules behind them are private.
"""

from kubecore._actions import (
    BackoffEntry,
    ContainerToKill,
    KillReason,
    ObservedPod,
    PodActions,
    PodHistory,
    ProbeState,
    Waiting,
)
from kubecore._clock import Clock, ManualClock, SystemClock
from kubecore._errors import (
    Conflict,
    ContainerNotFound,
    ContainerRuntimeError,
    FieldError,
    ImageNotFound,
    ImagePullError,
    InvalidConfig,
    KubecoreError,
    NotFound,
    PluginError,
    RuntimeTimeout,
    RuntimeUnavailable,
    SandboxNotFound,
    UnknownRuntime,
    ValidationError,
)
from kubecore._model import (
    Container,
    ContainerPort,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    EmptyDirVolumeSource,
    EnvVar,
    ExecAction,
    HostPathVolumeSource,
    HTTPGetAction,
    HTTPHeader,
    Lifecycle,
    LifecycleHandler,
    LocalObjectReference,
    ObjectMeta,
    Pod,
    PodCondition,
    PodSpec,
    PodStatus,
    Probe,
    ResourceRequirements,
    SecurityContext,
    TCPSocketAction,
    Volume,
    VolumeMount,
    default_pull_policy,
)
from kubecore._runtime import (
    ContainerConfig,
    ContainerRuntime,
    ContainerStats,
    DNSConfig,
    Event,
    EventRecorder,
    EventType,
    ExecResult,
    HealthChecker,
    Image,
    ImageFsUsage,
    Mount,
    ObjectReference,
    PortMapping,
    ProbeOutcome,
    ProbeResult,
    ProbeTarget,
    Puller,
    PullProgress,
    RegistryAuth,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    RuntimeVersion,
    SandboxConfig,
    SandboxState,
    Subscription,
)

# -- manifest (loading, dumping, validation, quantities) --
from kubecore._manifest import (
    DocumentError,
    assign_uid,
    dump_pod_json,
    dump_pod_yaml,
    dump_pods_yaml,
    load_pods_from_dict,
    load_pods_from_file,
    load_pods_from_string,
    load_pods_lenient,
    pod_from_dict,
    pod_to_dict,
    stamp_source,
    validate_pod,
)
from kubecore._quantity import cpu_millis, memory_bytes, parse_quantity

# -- plugins --
from kubecore._plugins import (
    BrokenPlugin,
    DuplicateRuntime,
    KubecorePluginManager,
    PluginWarning,
    RuntimeBundle,
    RuntimeInfo,
    RuntimeRegistry,
    broken_plugins,
    hookimpl,
    hookspec,
    load_runtime,
    plugin_manager,
    runtimes,
)

# -- planning, status, translation --
from kubecore._backoff import in_backoff, next_backoff
from kubecore._planner import compute_pod_actions
from kubecore._status import compute_pod_status
from kubecore._translate import (
    ResolvConf,
    container_config,
    container_hash,
    dns_config,
    milli_cpu_to_shares,
    parse_resolv_conf,
    sandbox_config,
)
# -- agent --
from kubecore._events import FanoutRecorder, LoggingRecorder, MemoryRecorder
from kubecore._health import DefaultHealthChecker
from kubecore._kubelet import Kubelet, KubeletConfig, SyncReport
from kubecore._metrics import Metrics
from kubecore._podconfig import PodConfig
# -- sources, server, metrics --
from kubecore._server import KubeletServer, ServerConfig, serve
from kubecore._sources import (
    FileSource,
    HTTPSource,
    PodSource,
    SourcePoller,
    SourceProblem,
    StaticSource,
)

__version__ = "0.1.0"

__all__ = [name for name in dir() if not name.startswith("_")]
