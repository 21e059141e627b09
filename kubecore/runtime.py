"""The plugin contract in one place: what a container runtime plugin implements and uses.

* the protocols, composed as CRI's services are: ``ContainerRuntime`` (``RuntimeVersioner``,
  ``PodSandboxManager``, ``ContainerManager``, ``ContainerStatsManager``, ``RuntimeEventSource``),
  the image service ``Puller`` and the ``HealthChecker``; ``RuntimeBase`` and ``PullerWrapper`` to
  build on;
* the optional capabilities, found by type: ``ResourceUpdater``, ``NodeClaims``,
  ``StreamingRuntime`` and ``PortForwarder`` (exec, attach and port-forward streams, with
  ``StreamSession``); ``capabilities(runtime)`` lists the ones a runtime has;
* the values the core hands over and gets back (``SandboxConfig``, ``ContainerConfig``,
  ``RuntimeSnapshot``, ...);
* the labels and annotations state lives in (``MANAGED_LABEL``, ``container_labels``, ...);
* the runtime errors (``ContainerRuntimeError`` and its kinds) and the plugin errors;
* image references as Docker reads them (``parse_image_ref``);
* the plugin hooks (``hookimpl``, ``RuntimeBundle``, ``RuntimeRegistry``) and the clocks a bundle
  is given.

The contract every call keeps is documented on ``ContainerRuntime`` and its parts; the shipped
conformance suite (``kubecore.testing.conformance``) checks it.
"""

import typing as _typing

from kubecore._util.exports import lazy_namespace as _lazy_namespace

if _typing.TYPE_CHECKING:  # written by scripts/gen_exports.py from kubecore._util.exports.SURFACE
    from kubecore._agent.outage import (
        Outage as Outage,
    )
    from kubecore._agent.outage import (
        OutageEnd as OutageEnd,
    )
    from kubecore._contract.bases import (
        PullerWrapper as PullerWrapper,
    )
    from kubecore._contract.bases import (
        RuntimeBase as RuntimeBase,
    )
    from kubecore._contract.capabilities import (
        OPTIONAL_CAPABILITIES as OPTIONAL_CAPABILITIES,
    )
    from kubecore._contract.capabilities import (
        ContainerLogReopener as ContainerLogReopener,
    )
    from kubecore._contract.capabilities import (
        HostMemoryVolumes as HostMemoryVolumes,
    )
    from kubecore._contract.capabilities import (
        InProcessMounts as InProcessMounts,
    )
    from kubecore._contract.capabilities import (
        NodeClaim as NodeClaim,
    )
    from kubecore._contract.capabilities import (
        NodeClaims as NodeClaims,
    )
    from kubecore._contract.capabilities import (
        NodeHolder as NodeHolder,
    )
    from kubecore._contract.capabilities import (
        NodeLease as NodeLease,
    )
    from kubecore._contract.capabilities import (
        ResourceUpdater as ResourceUpdater,
    )
    from kubecore._contract.capabilities import (
        capabilities as capabilities,
    )
    from kubecore._contract.errors import (
        Conflict as Conflict,
    )
    from kubecore._contract.errors import (
        ContainerNotFound as ContainerNotFound,
    )
    from kubecore._contract.errors import (
        ContainerRuntimeError as ContainerRuntimeError,
    )
    from kubecore._contract.errors import (
        CreateContainerConfigError as CreateContainerConfigError,
    )
    from kubecore._contract.errors import (
        DuplicateRuntime as DuplicateRuntime,
    )
    from kubecore._contract.errors import (
        ImageNeverPull as ImageNeverPull,
    )
    from kubecore._contract.errors import (
        ImageNotFound as ImageNotFound,
    )
    from kubecore._contract.errors import (
        ImagePullError as ImagePullError,
    )
    from kubecore._contract.errors import (
        InvalidConfig as InvalidConfig,
    )
    from kubecore._contract.errors import (
        MountFailed as MountFailed,
    )
    from kubecore._contract.errors import (
        NameOwnedByAnotherNode as NameOwnedByAnotherNode,
    )
    from kubecore._contract.errors import (
        NotFound as NotFound,
    )
    from kubecore._contract.errors import (
        PluginError as PluginError,
    )
    from kubecore._contract.errors import (
        PluginWarning as PluginWarning,
    )
    from kubecore._contract.errors import (
        RuntimeTimeout as RuntimeTimeout,
    )
    from kubecore._contract.errors import (
        RuntimeUnavailable as RuntimeUnavailable,
    )
    from kubecore._contract.errors import (
        SandboxNotFound as SandboxNotFound,
    )
    from kubecore._contract.errors import (
        SandboxUnusable as SandboxUnusable,
    )
    from kubecore._contract.errors import (
        StillStarting as StillStarting,
    )
    from kubecore._contract.errors import (
        UnknownRuntime as UnknownRuntime,
    )
    from kubecore._contract.labels import (
        CONTAINER_NAME_LABEL as CONTAINER_NAME_LABEL,
    )
    from kubecore._contract.labels import (
        EPHEMERAL_CONTAINER_ANNOTATION as EPHEMERAL_CONTAINER_ANNOTATION,
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
        SANDBOX_HASH_ANNOTATION as SANDBOX_HASH_ANNOTATION,
    )
    from kubecore._contract.labels import (
        SIDECAR_ANNOTATION as SIDECAR_ANNOTATION,
    )
    from kubecore._contract.labels import (
        TERMINATION_MESSAGE_PATH_ANNOTATION as TERMINATION_MESSAGE_PATH_ANNOTATION,
    )
    from kubecore._contract.labels import (
        container_annotations as container_annotations,
    )
    from kubecore._contract.labels import (
        container_labels as container_labels,
    )
    from kubecore._contract.labels import (
        container_name as container_name,
    )
    from kubecore._contract.labels import (
        grace_period as grace_period,
    )
    from kubecore._contract.labels import (
        init_flag as init_flag,
    )
    from kubecore._contract.labels import (
        is_ephemeral as is_ephemeral,
    )
    from kubecore._contract.labels import (
        is_sidecar as is_sidecar,
    )
    from kubecore._contract.labels import (
        node_of as node_of,
    )
    from kubecore._contract.labels import (
        owned_by as owned_by,
    )
    from kubecore._contract.labels import (
        pod_identity as pod_identity,
    )
    from kubecore._contract.labels import (
        recorded_hash as recorded_hash,
    )
    from kubecore._contract.labels import (
        restart_count as restart_count,
    )
    from kubecore._contract.labels import (
        sandbox_annotations as sandbox_annotations,
    )
    from kubecore._contract.labels import (
        sandbox_labels as sandbox_labels,
    )
    from kubecore._contract.protocols import (
        ContainerManager as ContainerManager,
    )
    from kubecore._contract.protocols import (
        ContainerRuntime as ContainerRuntime,
    )
    from kubecore._contract.protocols import (
        ContainerStatsManager as ContainerStatsManager,
    )
    from kubecore._contract.protocols import (
        HealthChecker as HealthChecker,
    )
    from kubecore._contract.protocols import (
        PodSandboxManager as PodSandboxManager,
    )
    from kubecore._contract.protocols import (
        Puller as Puller,
    )
    from kubecore._contract.protocols import (
        RuntimeEventSource as RuntimeEventSource,
    )
    from kubecore._contract.protocols import (
        RuntimeVersioner as RuntimeVersioner,
    )
    from kubecore._contract.protocols import (
        Subscription as Subscription,
    )
    from kubecore._contract.streaming import (
        OutputStream as OutputStream,
    )
    from kubecore._contract.streaming import (
        PortForwarder as PortForwarder,
    )
    from kubecore._contract.streaming import (
        StreamingRuntime as StreamingRuntime,
    )
    from kubecore._contract.streaming import (
        StreamSession as StreamSession,
    )
    from kubecore._contract.streaming import (
        TerminalSize as TerminalSize,
    )
    from kubecore._contract.values import (
        Capability as Capability,
    )
    from kubecore._contract.values import (
        ContainerConfig as ContainerConfig,
    )
    from kubecore._contract.values import (
        ContainerResources as ContainerResources,
    )
    from kubecore._contract.values import (
        ContainerStats as ContainerStats,
    )
    from kubecore._contract.values import (
        DNSConfig as DNSConfig,
    )
    from kubecore._contract.values import (
        ExecResult as ExecResult,
    )
    from kubecore._contract.values import (
        Image as Image,
    )
    from kubecore._contract.values import (
        ImageFsUsage as ImageFsUsage,
    )
    from kubecore._contract.values import (
        LinuxContainerSecurityContext as LinuxContainerSecurityContext,
    )
    from kubecore._contract.values import (
        Mount as Mount,
    )
    from kubecore._contract.values import (
        MountPropagation as MountPropagation,
    )
    from kubecore._contract.values import (
        NamespaceMode as NamespaceMode,
    )
    from kubecore._contract.values import (
        NamespaceOption as NamespaceOption,
    )
    from kubecore._contract.values import (
        PortMapping as PortMapping,
    )
    from kubecore._contract.values import (
        ProbeOutcome as ProbeOutcome,
    )
    from kubecore._contract.values import (
        ProbeResult as ProbeResult,
    )
    from kubecore._contract.values import (
        ProbeTarget as ProbeTarget,
    )
    from kubecore._contract.values import (
        ProfileType as ProfileType,
    )
    from kubecore._contract.values import (
        PullProgress as PullProgress,
    )
    from kubecore._contract.values import (
        RegistryAuth as RegistryAuth,
    )
    from kubecore._contract.values import (
        RuntimeContainer as RuntimeContainer,
    )
    from kubecore._contract.values import (
        RuntimeEvent as RuntimeEvent,
    )
    from kubecore._contract.values import (
        RuntimeEventType as RuntimeEventType,
    )
    from kubecore._contract.values import (
        RuntimeSandbox as RuntimeSandbox,
    )
    from kubecore._contract.values import (
        RuntimeSnapshot as RuntimeSnapshot,
    )
    from kubecore._contract.values import (
        RuntimeState as RuntimeState,
    )
    from kubecore._contract.values import (
        RuntimeVersion as RuntimeVersion,
    )
    from kubecore._contract.values import (
        SandboxConfig as SandboxConfig,
    )
    from kubecore._contract.values import (
        SandboxState as SandboxState,
    )
    from kubecore._contract.values import (
        SecurityProfile as SecurityProfile,
    )
    from kubecore._contract.values import (
        SELinuxOption as SELinuxOption,
    )
    from kubecore._kuberuntime.cgroups import (
        milli_cpu_to_shares as milli_cpu_to_shares,
    )
    from kubecore._kuberuntime.security import (
        parse_image_user as parse_image_user,
    )
    from kubecore._manifest.identity import (
        SOURCE_ANNOTATION as SOURCE_ANNOTATION,
    )
    from kubecore._model.imageref import (
        DEFAULT_TAG as DEFAULT_TAG,
    )
    from kubecore._model.imageref import (
        DOCKER_HUB as DOCKER_HUB,
    )
    from kubecore._model.imageref import (
        ImageRef as ImageRef,
    )
    from kubecore._model.imageref import (
        parse_image_ref as parse_image_ref,
    )
    from kubecore._model.imageref import (
        registry_host as registry_host,
    )
    from kubecore._model.imageref import (
        same_image as same_image,
    )
    from kubecore._observability.cri_log_format import (
        LogRecord as LogRecord,
    )
    from kubecore._observability.cri_log_format import (
        encode_output as encode_output,
    )
    from kubecore._observability.cri_log_format import (
        parse_record as parse_record,
    )
    from kubecore._observability.cri_logs import (
        container_log_path as container_log_path,
    )
    from kubecore._observability.cri_logs import (
        log_files as log_files,
    )
    from kubecore._observability.cri_logs import (
        pod_log_directory as pod_log_directory,
    )
    from kubecore._observability.cri_logs import (
        previous_log_path as previous_log_path,
    )
    from kubecore._observability.cri_logs import (
        read_cri_log as read_cri_log,
    )
    from kubecore._planner.backoff import (
        backoff_delay as backoff_delay,
    )
    from kubecore._plugins.registry import (
        BrokenPlugin as BrokenPlugin,
    )
    from kubecore._plugins.registry import (
        KubecoreHookspecs as KubecoreHookspecs,
    )
    from kubecore._plugins.registry import (
        RuntimeBundle as RuntimeBundle,
    )
    from kubecore._plugins.registry import (
        RuntimeInfo as RuntimeInfo,
    )
    from kubecore._plugins.registry import (
        RuntimeRegistry as RuntimeRegistry,
    )
    from kubecore._plugins.registry import (
        broken_plugins as broken_plugins,
    )
    from kubecore._plugins.registry import (
        hookimpl as hookimpl,
    )
    from kubecore._plugins.registry import (
        hookspec as hookspec,
    )
    from kubecore._prober.health import (
        DefaultHealthChecker as DefaultHealthChecker,
    )
    from kubecore._util.clock import (
        Clock as Clock,
    )
    from kubecore._util.clock import (
        SystemClock as SystemClock,
    )
    from kubecore._util.clock import (
        TimerHandle as TimerHandle,
    )
    from kubecore._util.clock import (
        missing_clock_members as missing_clock_members,
    )
    from kubecore._util.files import (
        replace_file as replace_file,
    )
    from kubecore._util.timefmt import (
        epoch_nanos as epoch_nanos,
    )
    from kubecore._util.timefmt import (
        format_timestamp as format_timestamp,
    )
    from kubecore._util.timefmt import (
        parse_rfc3339 as parse_rfc3339,
    )
    from kubecore._volumes.pod_dirs import (
        EMPTY_DIR_PLUGIN as EMPTY_DIR_PLUGIN,
    )

__all__, __getattr__, __dir__ = _lazy_namespace(__name__)
