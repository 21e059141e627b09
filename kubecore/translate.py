"""How a pod becomes runtime configs: the sandbox and container configs, their DNS settings, the
namespace modes (CRI's ``NamespaceOption``) a runtime applies, the pod's managed hosts file and
the hash that tells a changed container spec."""

from kubecore._runtime import NamespaceMode, NamespaceOption
from kubecore._translate import (
    ResolvConf,
    container_config,
    container_hash,
    dns_config,
    managed_hosts_file,
    parse_resolv_conf,
    sandbox_config,
)

__all__ = [
    "NamespaceMode",
    "NamespaceOption",
    "ResolvConf",
    "container_config",
    "container_hash",
    "dns_config",
    "managed_hosts_file",
    "parse_resolv_conf",
    "sandbox_config",
]
