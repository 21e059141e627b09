"""kubecore: the core of a container node agent (the Kubernetes kubelet) as a pluggable library.

The names here are what embedding the agent or writing a runtime plugin needs: the agent and its
sources, the pod model, the runtime protocols and their value types, the errors, the runtime
registry, the clocks and the rate limiter on them. Helpers live in small public namespaces:

* ``kubecore.credentials``: registry keyrings and the puller that uses them
* ``kubecore.events``: the events the agent records, their reasons (``EventReason``), recorders
* ``kubecore.health``: the default probe checker
* ``kubecore.images``: image references as Docker reads them
* ``kubecore.labels``: the labels and annotations on runtime objects
* ``kubecore.manifest``: load, validate and dump pod manifests
* ``kubecore.metrics``: the agent's Prometheus metrics
* ``kubecore.objects``: ConfigMaps, Secrets, their store, and env resolution
* ``kubecore.planner``: the pure planner, pod status and back-off
* ``kubecore.plugins``: the plugin manager behind ``load_runtime``
* ``kubecore.quantity``: resource quantities
* ``kubecore.security``: pods' security context, as the runtime receives it
* ``kubecore.server``: the HTTP API
* ``kubecore.sources``: merging and polling pod sources
* ``kubecore.translate``: pods to runtime configs, DNS
* ``kubecore.volumes``: volume sources, the atomic writer, mount propagation
* ``kubecore.testing``: strategies and the runtime conformance suite

The modules whose names start with ``_`` are private.

Everything is imported on first use (``kubecore.Kubelet``, ``kubecore.server``, ``import
kubecore.manifest``): ``import kubecore`` alone loads no namespace, so a command that needs little
starts fast.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from kubecore import credentials as credentials
    from kubecore import events as events
    from kubecore import health as health
    from kubecore import images as images
    from kubecore import labels as labels
    from kubecore import manifest as manifest
    from kubecore import metrics as metrics
    from kubecore import objects as objects
    from kubecore import planner as planner
    from kubecore import plugins as plugins
    from kubecore import quantity as quantity
    from kubecore import security as security
    from kubecore import server as server
    from kubecore import sources as sources
    from kubecore import translate as translate
    from kubecore import volumes as volumes
    from kubecore._agent.kubelet import Kubelet, KubeletConfig, SyncReport
    from kubecore._config.base import PodSource
    from kubecore._config.file import FileSource
    from kubecore._config.http import HTTPSource
    from kubecore._config.static import StaticSource
    from kubecore._config.updates import Operation, PodUpdate
    from kubecore._contract.errors import (
        Conflict,
        ContainerNotFound,
        ContainerRuntimeError,
        CreateContainerConfigError,
        DocumentError,
        DuplicateRuntime,
        FieldError,
        ImageNeverPull,
        ImageNotFound,
        ImagePullError,
        InvalidConfig,
        InvalidKubeletConfig,
        KubecoreError,
        NodeNameInUse,
        NotFound,
        PluginError,
        PluginWarning,
        RegistryConfigError,
        RootDirInUse,
        RuntimeTimeout,
        RuntimeUnavailable,
        SandboxNotFound,
        SandboxUnusable,
        SourceUnavailable,
        UnknownRuntime,
        ValidationError,
    )
    from kubecore._contract.runtime import (
        ContainerConfig,
        ContainerRuntime,
        ContainerStats,
        DNSConfig,
        ExecResult,
        HealthChecker,
        Image,
        ImageFsUsage,
        Mount,
        NodeClaim,
        NodeClaims,
        NodeHolder,
        NodeLease,
        PortMapping,
        ProbeOutcome,
        ProbeResult,
        ProbeTarget,
        Puller,
        PullerWrapper,
        PullProgress,
        RegistryAuth,
        RuntimeBase,
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
    from kubecore._manifest import load_pods_from_file, load_pods_from_string
    from kubecore._model.v1 import (
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
    )
    from kubecore._plugins.registry import (
        RuntimeBundle,
        RuntimeInfo,
        RuntimeRegistry,
        hookimpl,
        load_runtime,
        runtimes,
    )
    from kubecore._status.compute import pod_settled, pod_verdict
    from kubecore._util.clock import Clock, ManualClock, SystemClock, TimerHandle
    from kubecore._util.ratelimit import TokenBucket

from kubecore._version import __version__ as __version__

__all__ = [
    "Clock",
    "Conflict",
    "Container",
    "ContainerConfig",
    "ContainerNotFound",
    "ContainerPort",
    "ContainerRuntime",
    "ContainerRuntimeError",
    "ContainerState",
    "ContainerStateRunning",
    "ContainerStateTerminated",
    "ContainerStateWaiting",
    "ContainerStats",
    "ContainerStatus",
    "CreateContainerConfigError",
    "DNSConfig",
    "DocumentError",
    "DuplicateRuntime",
    "EmptyDirVolumeSource",
    "EnvVar",
    "ExecAction",
    "ExecResult",
    "FieldError",
    "FileSource",
    "HTTPGetAction",
    "HTTPHeader",
    "HTTPSource",
    "HealthChecker",
    "HostPathVolumeSource",
    "Image",
    "ImageFsUsage",
    "ImageNeverPull",
    "ImageNotFound",
    "ImagePullError",
    "InvalidConfig",
    "InvalidKubeletConfig",
    "KubecoreError",
    "Kubelet",
    "KubeletConfig",
    "Lifecycle",
    "LifecycleHandler",
    "LocalObjectReference",
    "ManualClock",
    "Mount",
    "NodeClaim",
    "NodeClaims",
    "NodeHolder",
    "NodeLease",
    "NodeNameInUse",
    "NotFound",
    "ObjectMeta",
    "Operation",
    "PluginError",
    "PluginWarning",
    "Pod",
    "PodCondition",
    "PodSource",
    "PodSpec",
    "PodStatus",
    "PodUpdate",
    "PortMapping",
    "Probe",
    "ProbeOutcome",
    "ProbeResult",
    "ProbeTarget",
    "PullProgress",
    "Puller",
    "PullerWrapper",
    "RegistryAuth",
    "RegistryConfigError",
    "ResourceRequirements",
    "RootDirInUse",
    "RuntimeBase",
    "RuntimeBundle",
    "RuntimeContainer",
    "RuntimeEvent",
    "RuntimeEventType",
    "RuntimeInfo",
    "RuntimeRegistry",
    "RuntimeSandbox",
    "RuntimeSnapshot",
    "RuntimeState",
    "RuntimeTimeout",
    "RuntimeUnavailable",
    "RuntimeVersion",
    "SandboxConfig",
    "SandboxNotFound",
    "SandboxState",
    "SandboxUnusable",
    "SecurityContext",
    "SourceUnavailable",
    "StaticSource",
    "Subscription",
    "SyncReport",
    "SystemClock",
    "TCPSocketAction",
    "TimerHandle",
    "TokenBucket",
    "UnknownRuntime",
    "ValidationError",
    "Volume",
    "VolumeMount",
    "hookimpl",
    "load_pods_from_file",
    "load_pods_from_string",
    "load_runtime",
    "pod_settled",
    "pod_verdict",
    "runtimes",
]

_NAMESPACES = frozenset(
    {
        "credentials",
        "events",
        "health",
        "images",
        "labels",
        "manifest",
        "metrics",
        "objects",
        "planner",
        "plugins",
        "quantity",
        "security",
        "server",
        "sources",
        "translate",
        "volumes",
    }
)

_DEFINED_IN: dict[str, tuple[str, ...]] = {
    "kubecore._util.clock": (
        "Clock",
        "ManualClock",
        "SystemClock",
        "TimerHandle",
    ),
    "kubecore._util.ratelimit": ("TokenBucket",),
    "kubecore._contract.errors": (
        "Conflict",
        "ContainerNotFound",
        "ContainerRuntimeError",
        "CreateContainerConfigError",
        "DocumentError",
        "DuplicateRuntime",
        "FieldError",
        "ImageNeverPull",
        "ImageNotFound",
        "ImagePullError",
        "InvalidConfig",
        "InvalidKubeletConfig",
        "KubecoreError",
        "NodeNameInUse",
        "NotFound",
        "PluginError",
        "PluginWarning",
        "RegistryConfigError",
        "RootDirInUse",
        "RuntimeTimeout",
        "RuntimeUnavailable",
        "SandboxNotFound",
        "SandboxUnusable",
        "SourceUnavailable",
        "UnknownRuntime",
        "ValidationError",
    ),
    "kubecore._agent.kubelet": (
        "Kubelet",
        "KubeletConfig",
        "SyncReport",
    ),
    "kubecore._manifest": (
        "load_pods_from_file",
        "load_pods_from_string",
    ),
    "kubecore._model.v1": (
        "Container",
        "ContainerPort",
        "ContainerState",
        "ContainerStateRunning",
        "ContainerStateTerminated",
        "ContainerStateWaiting",
        "ContainerStatus",
        "EmptyDirVolumeSource",
        "EnvVar",
        "ExecAction",
        "HTTPGetAction",
        "HTTPHeader",
        "HostPathVolumeSource",
        "Lifecycle",
        "LifecycleHandler",
        "LocalObjectReference",
        "ObjectMeta",
        "Pod",
        "PodCondition",
        "PodSpec",
        "PodStatus",
        "Probe",
        "ResourceRequirements",
        "SecurityContext",
        "TCPSocketAction",
        "Volume",
        "VolumeMount",
    ),
    "kubecore._plugins.registry": (
        "RuntimeBundle",
        "RuntimeInfo",
        "RuntimeRegistry",
        "hookimpl",
        "load_runtime",
        "runtimes",
    ),
    "kubecore._contract.runtime": (
        "ContainerConfig",
        "ContainerRuntime",
        "ContainerStats",
        "DNSConfig",
        "ExecResult",
        "HealthChecker",
        "Image",
        "ImageFsUsage",
        "Mount",
        "NodeClaim",
        "NodeClaims",
        "NodeHolder",
        "NodeLease",
        "PortMapping",
        "ProbeOutcome",
        "ProbeResult",
        "ProbeTarget",
        "PullProgress",
        "Puller",
        "PullerWrapper",
        "RegistryAuth",
        "RuntimeBase",
        "RuntimeContainer",
        "RuntimeEvent",
        "RuntimeEventType",
        "RuntimeSandbox",
        "RuntimeSnapshot",
        "RuntimeState",
        "RuntimeVersion",
        "SandboxConfig",
        "SandboxState",
        "Subscription",
    ),
    "kubecore._config.base": ("PodSource",),
    "kubecore._config.file": ("FileSource",),
    "kubecore._config.http": ("HTTPSource",),
    "kubecore._config.static": ("StaticSource",),
    "kubecore._status.compute": (
        "pod_settled",
        "pod_verdict",
    ),
    "kubecore._config.updates": (
        "Operation",
        "PodUpdate",
    ),
}
_HOME = {name: module for module, names in _DEFINED_IN.items() for name in names}


def __getattr__(name: str) -> _typing.Any:
    """A namespace or a top-level name, imported on first use. A top-level object is published
    as ``kubecore.<name>`` (its ``__module__``) when it is first reached, whichever way."""
    if name in _NAMESPACES:
        return _importlib.import_module(f"{__name__}.{name}")
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from kubecore._util.exports import publish  # loads inspect: only once a name is used

    value = getattr(_importlib.import_module(module), name)
    publish((name,), {name: value}, __name__)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_NAMESPACES})
