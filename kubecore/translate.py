"""How a pod becomes runtime configs: the sandbox and container configs, their DNS settings, the
namespace modes (CRI's ``NamespaceOption``) a runtime applies, the pod's managed hosts file, the
hash that tells a changed container spec, and the resources a runtime that resizes containers in
place (``ResourceUpdater``) is given."""

from kubecore._contract.capabilities import ResourceUpdater
from kubecore._contract.values import ContainerResources, NamespaceMode, NamespaceOption
from kubecore._kuberuntime.translate import (
    ResolvConf,
    container_config,
    container_hash,
    container_resources,
    dns_config,
    managed_hosts_file,
    parse_resolv_conf,
    sandbox_config,
)
from kubecore._util.exports import publish as _publish

__all__ = [
    "ContainerResources",
    "NamespaceMode",
    "NamespaceOption",
    "ResolvConf",
    "ResourceUpdater",
    "container_config",
    "container_hash",
    "container_resources",
    "dns_config",
    "managed_hosts_file",
    "parse_resolv_conf",
    "sandbox_config",
]

_publish(__all__, globals(), __name__)
