"""Security context: the pod's and the containers' ``securityContext`` (model), what a runtime
receives (``LinuxContainerSecurityContext``, in the CRI's shape) and the node's rules for them."""

from kubecore._contract.values import (
    Capability,
    LinuxContainerSecurityContext,
    ProfileType,
    SecurityProfile,
    SELinuxOption,
)
from kubecore._kuberuntime.security import (
    HostSecurity,
    detect_host_security,
    effective_security_context,
    parse_image_user,
)
from kubecore._model.v1 import (
    AppArmorProfile,
    Capabilities,
    PodSecurityContext,
    SeccompProfile,
    SELinuxOptions,
    Sysctl,
    WindowsSecurityContextOptions,
)
from kubecore._util.exports import publish as _publish

__all__ = [
    "AppArmorProfile",
    "Capabilities",
    "Capability",
    "HostSecurity",
    "LinuxContainerSecurityContext",
    "PodSecurityContext",
    "ProfileType",
    "SELinuxOption",
    "SELinuxOptions",
    "SeccompProfile",
    "SecurityProfile",
    "Sysctl",
    "WindowsSecurityContextOptions",
    "detect_host_security",
    "effective_security_context",
    "parse_image_user",
]

_publish(__all__, globals(), __name__)
