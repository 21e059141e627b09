"""The security rules of admission: privileged containers and host namespaces on a node that
does not allow them, and the node's pod-security policy (``pod_security``: the Pod Security
Standards' levels). The security context the node can honour (sysctls, AppArmor, SELinux, user
namespaces) is checked by ``kubecore._kuberuntime.security``, which knows the host."""

from __future__ import annotations

from kubecore._agent.admission.pod_security import (
    POD_SECURITY,
    PodSecurityPolicy,
    forbidden_message,
    violations,
)
from kubecore._model.rejection import Rejection
from kubecore._model.v1 import Pod

PRIVILEGED_NOT_ALLOWED = "PrivilegedNotAllowed"
HOST_NAMESPACES_NOT_ALLOWED = "HostNamespacesNotAllowed"


def privileged_rejection(pod: Pod) -> Rejection | None:
    """A node that does not allow privileged containers refuses a pod that asks for one."""
    spec = pod.spec
    for container in (*spec.init_containers, *spec.containers, *spec.ephemeral_containers):
        if container.privileged:
            return Rejection(
                PRIVILEGED_NOT_ALLOWED,
                f"Pod was rejected: container {container.name} asks to run privileged, and this"
                " node does not allow privileged containers (KubeletConfig.allow_privileged is"
                " False)",
            )
    return None


def pod_security_rejection(pod: Pod, policy: PodSecurityPolicy) -> Rejection | None:
    """A pod that breaks the node's pod-security policy, with every violation."""
    found = violations(pod, policy)
    if not found:
        return None
    return Rejection(POD_SECURITY, f"Pod was rejected: {forbidden_message(found, policy.level)}")


def host_namespaces_rejection(pod: Pod) -> Rejection | None:
    """hostPID and hostIPC give a pod the node's processes and IPC: gated like privileged."""
    asked = [
        name for name, on in (("hostPID", pod.spec.host_pid), ("hostIPC", pod.spec.host_ipc)) if on
    ]
    if not asked:
        return None
    return Rejection(
        HOST_NAMESPACES_NOT_ALLOWED,
        f"Pod was rejected: the pod asks for {' and '.join(asked)}, and this node does not allow"
        " host namespaces (KubeletConfig.allow_privileged is False)",
    )
