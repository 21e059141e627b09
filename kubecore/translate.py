"""How a pod becomes runtime configs: the sandbox and container configs, their DNS settings and
the hash that tells a changed container spec."""

from kubecore._exports import publish as _publish
from kubecore._translate import (
    ResolvConf,
    container_config,
    container_hash,
    dns_config,
    parse_resolv_conf,
    sandbox_config,
)

__all__ = [
    "ResolvConf",
    "container_config",
    "container_hash",
    "dns_config",
    "parse_resolv_conf",
    "sandbox_config",
]

_publish(__all__, globals(), __name__)
