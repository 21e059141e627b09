"""The public surface in one table: every public namespace, each of its names, and the private
module that defines the name. A namespace's ``__all__``, its lazy ``__getattr__`` and the
``__module__`` its objects show are all made from ``SURFACE`` (each public module's
type-checking imports are written from it by ``scripts/gen_exports.py``, and
tests/test_public_api.py checks that they agree).

A name a user reaches in several namespaces (``Pod`` in ``kubecore`` and ``kubecore.v1``) shows
the first of them as its home, as httpx and trio show theirs.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def _homes(table: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """``{module: names}`` turned into ``{name: module}``, names sorted."""
    pairs = {name: module for module, names in table.items() for name in names}
    return dict(sorted(pairs.items()))


_V1_MODELS = (
    "Affinity",
    "AppArmorProfile",
    "Capabilities",
    "ConfigMap",
    "ConfigMapEnvSource",
    "ConfigMapKeySelector",
    "ConfigMapProjection",
    "ConfigMapVolumeSource",
    "Container",
    "ContainerPort",
    "ContainerResizePolicy",
    "ContainerRestartRule",
    "ContainerRestartRuleOnExitCodes",
    "ContainerState",
    "ContainerStateRunning",
    "ContainerStateTerminated",
    "ContainerStateWaiting",
    "ContainerStatus",
    "DownwardAPIProjection",
    "DownwardAPIVolumeFile",
    "DownwardAPIVolumeSource",
    "EmptyDirVolumeSource",
    "EnvFromSource",
    "EphemeralContainer",
    "EnvVar",
    "EnvVarSource",
    "ExecAction",
    "FileKeySelector",
    "GRPCAction",
    "HTTPGetAction",
    "HTTPHeader",
    "HostAlias",
    "HostIP",
    "HostPathVolumeSource",
    "ImageVolumeSource",
    "KeyToPath",
    "KubeObject",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Lifecycle",
    "LifecycleHandler",
    "LocalObjectReference",
    "NodeAffinity",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectFieldSelector",
    "ObjectMeta",
    "PersistentVolumeClaimVolumeSource",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodCondition",
    "PodDNSConfig",
    "PodDNSConfigOption",
    "PodIP",
    "PodOS",
    "PodReadinessGate",
    "PodSchedulingGate",
    "PodSecurityContext",
    "PodSpec",
    "PodStatus",
    "PreferredSchedulingTerm",
    "Probe",
    "ProjectedVolumeSource",
    "ResourceFieldSelector",
    "ResourceRequirements",
    "SELinuxOptions",
    "SeccompProfile",
    "Secret",
    "SecretEnvSource",
    "SecretKeySelector",
    "SecretProjection",
    "SecretVolumeSource",
    "SecurityContext",
    "ServiceAccountTokenProjection",
    "SleepAction",
    "Sysctl",
    "TCPSocketAction",
    "Toleration",
    "TopologySpreadConstraint",
    "Volume",
    "VolumeMount",
    "VolumeProjection",
    "WeightedPodAffinityTerm",
    "WindowsSecurityContextOptions",
)
"""Every model of ``kubecore._model.v1`` (the classes and the ``KubeObject`` union)."""

_PROTOCOLS = ("ContainerRuntime", "HealthChecker", "Puller")
_RUNTIME_ERRORS = (
    "Conflict",
    "ContainerNotFound",
    "ContainerRuntimeError",
    "CreateContainerConfigError",
    "ImageNeverPull",
    "ImageNotFound",
    "ImagePullError",
    "InvalidConfig",
    "MountFailed",
    "NameOwnedByAnotherNode",
    "NotFound",
    "RuntimeTimeout",
    "RuntimeUnavailable",
    "SandboxNotFound",
    "SandboxUnusable",
    "StillStarting",
)
_PLUGIN_ERRORS = ("DuplicateRuntime", "PluginError", "PluginWarning", "UnknownRuntime")

SURFACE: dict[str, dict[str, str]] = {
    "kubecore": _homes(
        {
            "kubecore._agent.kubelet": ("Kubelet",),
            "kubecore._agent.changes": (
                "ChangeSubscription",
                "EventChange",
                "FellBehind",
                "PodChange",
            ),
            "kubecore._agent.config": ("KubeletConfig",),
            "kubecore._agent.sync_pass": ("SyncReport",),
            "kubecore._agent.desired": ("PodReport",),
            "kubecore._config.base": ("PodSource", "SourceProblem"),
            "kubecore._config.file": ("FileSource",),
            "kubecore._config.http": ("HTTPSource",),
            "kubecore._config.poller": ("SourcePoller",),
            "kubecore._config.static": ("StaticSource",),
            "kubecore._config.podconfig": ("PodConfig",),
            "kubecore._config.updates": ("Operation", "PodUpdate"),
            "kubecore._manifest": ("load_pods_from_file", "load_pods_from_string"),
            "kubecore._plugins.registry": (
                "RuntimeRegistry",
                "hookimpl",
                "load_runtime",
                "runtimes",
            ),
            "kubecore._model.v1": ("Pod",),
            "kubecore._status.compute": ("pod_settled", "pod_verdict"),
            "kubecore._contract.errors": (
                "ContainerRuntimeError",
                "FieldError",
                "InvalidKubeletConfig",
                "KubecoreError",
                "NodeNameInUse",
                "PluginError",
                "RootDirInUse",
                "SourceUnavailable",
                "SubscriptionClosed",
                "ValidationError",
            ),
            "kubecore._contract.protocols": (*_PROTOCOLS, "EventRecorder"),
        }
    ),
    "kubecore.v1": _homes(
        {
            "kubecore._model.v1": _V1_MODELS,
            "kubecore._model.quantity": ("cpu_millis", "memory_bytes", "parse_quantity"),
            "kubecore._model.qos": ("qos_class",),
        }
    ),
    "kubecore.runtime": _homes(
        {
            "kubecore._contract.protocols": (
                *_PROTOCOLS,
                "ContainerManager",
                "ContainerStatsManager",
                "PodSandboxManager",
                "RuntimeEventSource",
                "RuntimeVersioner",
                "Subscription",
            ),
            "kubecore._agent.outage": ("Outage", "OutageEnd"),
            "kubecore._contract.capabilities": (
                "OPTIONAL_CAPABILITIES",
                "ContainerLogReopener",
                "HostMemoryVolumes",
                "InProcessMounts",
                "NodeClaim",
                "NodeClaims",
                "NodeHolder",
                "NodeLease",
                "ResourceUpdater",
                "capabilities",
            ),
            "kubecore._contract.streaming": (
                "OutputStream",
                "PortForwarder",
                "StreamSession",
                "StreamingRuntime",
                "TerminalSize",
            ),
            "kubecore._contract.bases": ("PullerWrapper", "RuntimeBase"),
            "kubecore._observability.cri_logs": (
                "container_log_path",
                "log_files",
                "pod_log_directory",
                "previous_log_path",
                "read_cri_log",
            ),
            "kubecore._observability.cri_log_format": (
                "LogRecord",
                "encode_output",
                "parse_record",
            ),
            "kubecore._util.timefmt": ("epoch_nanos", "format_timestamp", "parse_rfc3339"),
            "kubecore._util.files": ("replace_file",),
            "kubecore._planner.backoff": ("backoff_delay",),
            "kubecore._contract.values": (
                "Capability",
                "ContainerConfig",
                "ContainerResources",
                "ContainerStats",
                "DNSConfig",
                "ExecResult",
                "Image",
                "ImageFsUsage",
                "LinuxContainerSecurityContext",
                "Mount",
                "MountPropagation",
                "NamespaceMode",
                "NamespaceOption",
                "PortMapping",
                "ProbeOutcome",
                "ProbeResult",
                "ProbeTarget",
                "ProfileType",
                "PullProgress",
                "RegistryAuth",
                "RuntimeContainer",
                "RuntimeEvent",
                "RuntimeEventType",
                "RuntimeSandbox",
                "RuntimeSnapshot",
                "RuntimeState",
                "RuntimeVersion",
                "SELinuxOption",
                "SandboxConfig",
                "SandboxState",
                "SecurityProfile",
            ),
            "kubecore._contract.labels": (
                "CONTAINER_NAME_LABEL",
                "EPHEMERAL_CONTAINER_ANNOTATION",
                "GRACE_PERIOD_ANNOTATION",
                "HASH_ANNOTATION",
                "INIT_CONTAINER_ANNOTATION",
                "MANAGED_LABEL",
                "NODE_LABEL",
                "POD_NAMESPACE_LABEL",
                "POD_NAME_LABEL",
                "POD_UID_LABEL",
                "RESOURCES_ANNOTATION",
                "RESTART_COUNT_ANNOTATION",
                "SANDBOX_CONTAINER_NAME",
                "SANDBOX_HASH_ANNOTATION",
                "SIDECAR_ANNOTATION",
                "TERMINATION_MESSAGE_PATH_ANNOTATION",
                "container_annotations",
                "container_labels",
                "container_name",
                "grace_period",
                "init_flag",
                "is_ephemeral",
                "is_sidecar",
                "node_of",
                "owned_by",
                "pod_identity",
                "recorded_hash",
                "restart_count",
                "sandbox_annotations",
                "sandbox_labels",
            ),
            "kubecore._manifest.identity": ("SOURCE_ANNOTATION",),
            "kubecore._contract.errors": (*_RUNTIME_ERRORS, *_PLUGIN_ERRORS),
            "kubecore._model.imageref": (
                "DEFAULT_TAG",
                "DOCKER_HUB",
                "ImageRef",
                "parse_image_ref",
                "registry_host",
                "same_image",
            ),
            "kubecore._kuberuntime.security": ("parse_image_user",),
            "kubecore._kuberuntime.cgroups": ("milli_cpu_to_shares",),
            "kubecore._volumes.pod_dirs": ("EMPTY_DIR_PLUGIN",),
            "kubecore._prober.health": ("DefaultHealthChecker",),
            "kubecore._plugins.registry": (
                "BrokenPlugin",
                "KubecoreHookspecs",
                "RuntimeBundle",
                "RuntimeInfo",
                "RuntimeRegistry",
                "broken_plugins",
                "hookimpl",
                "hookspec",
            ),
            "kubecore._util.clock": (
                "Clock",
                "SystemClock",
                "TimerHandle",
                "missing_clock_members",
            ),
        }
    ),
    "kubecore.manifest": _homes(
        {
            "kubecore._manifest": (
                "assign_uid",
                "dump_pod_json",
                "dump_pod_yaml",
                "dump_pods_yaml",
                "load_manifest_from_dict",
                "load_manifest_lenient",
                "load_pods_from_dict",
                "load_pods_from_file",
                "load_pods_from_string",
                "load_pods_lenient",
                "object_to_dict",
                "parse_document",
                "pod_from_dict",
                "pod_to_dict",
                "stamp_source",
                "validate_pod",
            ),
            "kubecore._manifest.decoding": ("pod_status_to_dict",),
            "kubecore._config.memory": ("LAST_GOOD_DIR", "SourceMemory"),
            "kubecore._model.v1": ("default_pull_policy",),
            "kubecore._contract.errors": ("DocumentError", "FieldError", "ValidationError"),
            "kubecore._util.timefmt": ("rfc3339",),
        }
    ),
    "kubecore.events": _homes(
        {
            "kubecore._contract.protocols": ("EventRecorder",),
            "kubecore._contract.values": ("Event", "EventType", "ObjectReference"),
            "kubecore._observability.event_log": (
                "AggregatedEvent",
                "EventCorrelator",
                "EventLog",
            ),
            "kubecore._observability.events": (
                "EVENT_COMPONENT",
                "EventReason",
                "FanoutRecorder",
                "LoggingRecorder",
                "MemoryRecorder",
                "aggregated_v1_event",
                "v1_event",
            ),
        }
    ),
    "kubecore.server": _homes(
        {
            "kubecore._http.server": ("KubeletServer", "ServerConfig", "serve"),
            "kubecore._agent.facets": ("KubeletStreams", "KubeletViews"),
            "kubecore._observability.metrics": ("Metrics",),
            "kubecore._agent.admission.node_fit": (
                "machine_arch",
                "node_labels",
                "parse_node_labels",
            ),
            "kubecore._kuberuntime.env": ("host_capacity",),
            "kubecore._api.nodes": ("node_document",),
            "kubecore._util.ratelimit": ("TokenBucket",),
        }
    ),
    "kubecore.streaming": _homes(
        {
            "kubecore._streaming.spdy": (
                "DataFrame",
                "Frame",
                "FrameReader",
                "FrameWriter",
                "GoAway",
                "GoAwayStatus",
                "Headers",
                "HeadersFrame",
                "Ping",
                "RstStatus",
                "RstStream",
                "SettingsFrame",
                "SynReply",
                "SynStream",
                "WindowUpdate",
            ),
            "kubecore._contract.errors": ("SpdyClosed", "SpdyProtocolError"),
            "kubecore._streaming.spdy_connection": (
                "SpdyConnection",
                "SpdyStream",
                "Transport",
            ),
        }
    ),
    "kubecore.credentials": _homes(
        {
            "kubecore._kuberuntime.credentials": (
                "ChainKeyring",
                "DockerKeyring",
                "Keyring",
                "KeyringPuller",
                "PullSecrets",
                "pod_registry_auth",
                "secret_keyring",
            ),
            "kubecore._contract.errors": ("RegistryConfigError",),
        }
    ),
    "kubecore.cli": _homes(
        {
            "kubecore._plugins.commands": (
                "EXIT_FAILED",
                "EXIT_OK",
                "EXIT_USAGE",
                "CommandHandler",
                "CommandSet",
            ),
            "kubecore._util.tables": ("ready_and_restarts", "text_table"),
            "kubecore._util.timefmt": ("age",),
        }
    ),
    "kubecore.aio": _homes({"kubecore._agent.aio": ("AsyncKubelet",)}),
    "kubecore.testing": _homes(
        {
            "kubecore.testing._node": ("FakeNode", "NotReached"),
            "kubecore._util.clock": ("ManualClock",),
        }
    ),
}
"""Each public namespace, and each of its names with the private module that defines it."""


def public_home(name: str) -> str:
    """The namespace ``name`` shows as its home: the first in ``SURFACE`` that exports it."""
    return next(namespace for namespace, names in SURFACE.items() if name in names)


def submodules(namespace: str) -> frozenset[str]:
    """The public namespaces right below ``namespace`` (``v1`` below ``kubecore``)."""
    prefix = f"{namespace}."
    return frozenset(
        public.removeprefix(prefix)
        for public in SURFACE
        if public.startswith(prefix) and "." not in public.removeprefix(prefix)
    )


def lazy_namespace(
    namespace: str,
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` for the public module ``namespace``: each
    name is imported from its home on first use (and kept in the module), so importing a
    namespace costs nothing until a name is used; the public namespaces below it (``kubecore.v1``
    below ``kubecore``) are imported on first use too."""
    homes = SURFACE[namespace]
    names = list(homes)
    below = submodules(namespace)

    def __getattr__(name: str) -> Any:
        if name in below:
            return importlib.import_module(f"{namespace}.{name}")
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {namespace!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        publish(value, public_home(name))
        vars(sys.modules[namespace])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[namespace]), *names, *below})

    return names, __getattr__, __dir__


def publish(value: object, home: str) -> None:
    """Set ``__module__`` to ``home`` on a class or function a private module defines, so
    reprs, docs and pickles name the public home."""
    import inspect  # only once a name is used

    if not (inspect.isclass(value) or inspect.isfunction(value)):
        return
    if not any(part.startswith("_") for part in value.__module__.split(".")):
        return
    if inspect.isclass(value):
        _resolve_own_annotations(value)
    value.__module__ = home


def _resolve_own_annotations(cls: type) -> None:
    """Evaluate the class's string annotations while ``__module__`` still names the module they
    were written in: ``typing.get_type_hints`` looks names up in ``sys.modules[cls.__module__]``,
    which after publishing is a namespace that lacks private aliases such as ``PullPolicy``.
    A name imported only for type checking cannot be evaluated: those annotations stay strings
    (tests/test_public_api.py reports the class)."""
    import inspect
    import typing

    own = inspect.get_annotations(cls)
    if not own:
        return
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except NameError:
        return
    cls.__annotations__ = {name: hints[name] for name in own}
