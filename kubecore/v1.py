"""The Kubernetes core/v1 model kubecore reads and writes (the equivalent of
``k8s.io/api/core/v1``): ``Pod`` and every object it is made of, ``ConfigMap`` and ``Secret``, and
the resource quantities (``parse_quantity``, ``cpu_millis``, ``memory_bytes``) and QoS class
(``qos_class``) the pod spec implies. Frozen ``attrs`` classes with snake_case fields; manifests
are read and written by ``kubecore.manifest``.
"""

import typing as _typing

from kubecore._util.exports import lazy_namespace as _lazy_namespace

if _typing.TYPE_CHECKING:  # written by scripts/gen_exports.py from kubecore._util.exports.SURFACE
    from kubecore._model.qos import (
        qos_class as qos_class,
    )
    from kubecore._model.quantity import (
        cpu_millis as cpu_millis,
    )
    from kubecore._model.quantity import (
        memory_bytes as memory_bytes,
    )
    from kubecore._model.quantity import (
        parse_quantity as parse_quantity,
    )
    from kubecore._model.v1 import (
        Affinity as Affinity,
    )
    from kubecore._model.v1 import (
        AppArmorProfile as AppArmorProfile,
    )
    from kubecore._model.v1 import (
        Capabilities as Capabilities,
    )
    from kubecore._model.v1 import (
        ConfigMap as ConfigMap,
    )
    from kubecore._model.v1 import (
        ConfigMapEnvSource as ConfigMapEnvSource,
    )
    from kubecore._model.v1 import (
        ConfigMapKeySelector as ConfigMapKeySelector,
    )
    from kubecore._model.v1 import (
        ConfigMapProjection as ConfigMapProjection,
    )
    from kubecore._model.v1 import (
        ConfigMapVolumeSource as ConfigMapVolumeSource,
    )
    from kubecore._model.v1 import (
        Container as Container,
    )
    from kubecore._model.v1 import (
        ContainerPort as ContainerPort,
    )
    from kubecore._model.v1 import (
        ContainerResizePolicy as ContainerResizePolicy,
    )
    from kubecore._model.v1 import (
        ContainerRestartRule as ContainerRestartRule,
    )
    from kubecore._model.v1 import (
        ContainerRestartRuleOnExitCodes as ContainerRestartRuleOnExitCodes,
    )
    from kubecore._model.v1 import (
        ContainerState as ContainerState,
    )
    from kubecore._model.v1 import (
        ContainerStateRunning as ContainerStateRunning,
    )
    from kubecore._model.v1 import (
        ContainerStateTerminated as ContainerStateTerminated,
    )
    from kubecore._model.v1 import (
        ContainerStateWaiting as ContainerStateWaiting,
    )
    from kubecore._model.v1 import (
        ContainerStatus as ContainerStatus,
    )
    from kubecore._model.v1 import (
        DownwardAPIProjection as DownwardAPIProjection,
    )
    from kubecore._model.v1 import (
        DownwardAPIVolumeFile as DownwardAPIVolumeFile,
    )
    from kubecore._model.v1 import (
        DownwardAPIVolumeSource as DownwardAPIVolumeSource,
    )
    from kubecore._model.v1 import (
        EmptyDirVolumeSource as EmptyDirVolumeSource,
    )
    from kubecore._model.v1 import (
        EnvFromSource as EnvFromSource,
    )
    from kubecore._model.v1 import (
        EnvVar as EnvVar,
    )
    from kubecore._model.v1 import (
        EnvVarSource as EnvVarSource,
    )
    from kubecore._model.v1 import (
        EphemeralContainer as EphemeralContainer,
    )
    from kubecore._model.v1 import (
        ExecAction as ExecAction,
    )
    from kubecore._model.v1 import (
        FileKeySelector as FileKeySelector,
    )
    from kubecore._model.v1 import (
        GRPCAction as GRPCAction,
    )
    from kubecore._model.v1 import (
        HostAlias as HostAlias,
    )
    from kubecore._model.v1 import (
        HostIP as HostIP,
    )
    from kubecore._model.v1 import (
        HostPathVolumeSource as HostPathVolumeSource,
    )
    from kubecore._model.v1 import (
        HTTPGetAction as HTTPGetAction,
    )
    from kubecore._model.v1 import (
        HTTPHeader as HTTPHeader,
    )
    from kubecore._model.v1 import (
        ImageVolumeSource as ImageVolumeSource,
    )
    from kubecore._model.v1 import (
        KeyToPath as KeyToPath,
    )
    from kubecore._model.v1 import (
        KubeObject as KubeObject,
    )
    from kubecore._model.v1 import (
        LabelSelector as LabelSelector,
    )
    from kubecore._model.v1 import (
        LabelSelectorRequirement as LabelSelectorRequirement,
    )
    from kubecore._model.v1 import (
        Lifecycle as Lifecycle,
    )
    from kubecore._model.v1 import (
        LifecycleHandler as LifecycleHandler,
    )
    from kubecore._model.v1 import (
        LocalObjectReference as LocalObjectReference,
    )
    from kubecore._model.v1 import (
        NodeAffinity as NodeAffinity,
    )
    from kubecore._model.v1 import (
        NodeSelector as NodeSelector,
    )
    from kubecore._model.v1 import (
        NodeSelectorRequirement as NodeSelectorRequirement,
    )
    from kubecore._model.v1 import (
        NodeSelectorTerm as NodeSelectorTerm,
    )
    from kubecore._model.v1 import (
        ObjectFieldSelector as ObjectFieldSelector,
    )
    from kubecore._model.v1 import (
        ObjectMeta as ObjectMeta,
    )
    from kubecore._model.v1 import (
        PersistentVolumeClaimVolumeSource as PersistentVolumeClaimVolumeSource,
    )
    from kubecore._model.v1 import (
        Pod as Pod,
    )
    from kubecore._model.v1 import (
        PodAffinity as PodAffinity,
    )
    from kubecore._model.v1 import (
        PodAffinityTerm as PodAffinityTerm,
    )
    from kubecore._model.v1 import (
        PodCondition as PodCondition,
    )
    from kubecore._model.v1 import (
        PodDNSConfig as PodDNSConfig,
    )
    from kubecore._model.v1 import (
        PodDNSConfigOption as PodDNSConfigOption,
    )
    from kubecore._model.v1 import (
        PodIP as PodIP,
    )
    from kubecore._model.v1 import (
        PodOS as PodOS,
    )
    from kubecore._model.v1 import (
        PodReadinessGate as PodReadinessGate,
    )
    from kubecore._model.v1 import (
        PodSchedulingGate as PodSchedulingGate,
    )
    from kubecore._model.v1 import (
        PodSecurityContext as PodSecurityContext,
    )
    from kubecore._model.v1 import (
        PodSpec as PodSpec,
    )
    from kubecore._model.v1 import (
        PodStatus as PodStatus,
    )
    from kubecore._model.v1 import (
        PreferredSchedulingTerm as PreferredSchedulingTerm,
    )
    from kubecore._model.v1 import (
        Probe as Probe,
    )
    from kubecore._model.v1 import (
        ProjectedVolumeSource as ProjectedVolumeSource,
    )
    from kubecore._model.v1 import (
        ResourceFieldSelector as ResourceFieldSelector,
    )
    from kubecore._model.v1 import (
        ResourceRequirements as ResourceRequirements,
    )
    from kubecore._model.v1 import (
        SeccompProfile as SeccompProfile,
    )
    from kubecore._model.v1 import (
        Secret as Secret,
    )
    from kubecore._model.v1 import (
        SecretEnvSource as SecretEnvSource,
    )
    from kubecore._model.v1 import (
        SecretKeySelector as SecretKeySelector,
    )
    from kubecore._model.v1 import (
        SecretProjection as SecretProjection,
    )
    from kubecore._model.v1 import (
        SecretVolumeSource as SecretVolumeSource,
    )
    from kubecore._model.v1 import (
        SecurityContext as SecurityContext,
    )
    from kubecore._model.v1 import (
        SELinuxOptions as SELinuxOptions,
    )
    from kubecore._model.v1 import (
        ServiceAccountTokenProjection as ServiceAccountTokenProjection,
    )
    from kubecore._model.v1 import (
        SleepAction as SleepAction,
    )
    from kubecore._model.v1 import (
        Sysctl as Sysctl,
    )
    from kubecore._model.v1 import (
        TCPSocketAction as TCPSocketAction,
    )
    from kubecore._model.v1 import (
        Toleration as Toleration,
    )
    from kubecore._model.v1 import (
        TopologySpreadConstraint as TopologySpreadConstraint,
    )
    from kubecore._model.v1 import (
        Volume as Volume,
    )
    from kubecore._model.v1 import (
        VolumeMount as VolumeMount,
    )
    from kubecore._model.v1 import (
        VolumeProjection as VolumeProjection,
    )
    from kubecore._model.v1 import (
        WeightedPodAffinityTerm as WeightedPodAffinityTerm,
    )
    from kubecore._model.v1 import (
        WindowsSecurityContextOptions as WindowsSecurityContextOptions,
    )

__all__, __getattr__, __dir__ = _lazy_namespace(__name__)
