"""ConfigMaps and Secrets, and a container's environment: the objects sources deliver beside
pods, the store the agent reads them from, and the pure function that resolves ``env``,
``envFrom`` and ``$(VAR)`` at a container's start; and what the node offers them (``NodeInfo``, the
host's capacity and architecture)."""

from kubecore._agent.admission.node_fit import machine_arch
from kubecore._config.objects import ObjectStore, object_key
from kubecore._kuberuntime.env import (
    NodeInfo,
    ObjectReader,
    ResolvedContainer,
    container_environment,
    expand,
    host_capacity,
)
from kubecore._model.v1 import (
    ConfigMap,
    ConfigMapEnvSource,
    ConfigMapKeySelector,
    EnvFromSource,
    EnvVarSource,
    KubeObject,
    ObjectFieldSelector,
    ResourceFieldSelector,
    Secret,
    SecretEnvSource,
    SecretKeySelector,
)
from kubecore._util.exports import publish as _publish

__all__ = [
    "ConfigMap",
    "ConfigMapEnvSource",
    "ConfigMapKeySelector",
    "EnvFromSource",
    "EnvVarSource",
    "KubeObject",
    "NodeInfo",
    "ObjectFieldSelector",
    "ObjectReader",
    "ObjectStore",
    "ResolvedContainer",
    "ResourceFieldSelector",
    "Secret",
    "SecretEnvSource",
    "SecretKeySelector",
    "container_environment",
    "expand",
    "host_capacity",
    "machine_arch",
    "object_key",
]

_publish(__all__, globals(), __name__)
