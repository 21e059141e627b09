"""What kubecore says about the Pod fields it refuses: the reason per field.

Fields are keyed by their JSON path with list indexes dropped (``spec.containers[].volumeDevices``);
an init container's field is read as the app container's. The decoding tables
(``decoding.py``, ``unsupported=frozenset({...})``) say which fields are refused; this module only
explains them, so that a field becoming supported needs no change here.
"""

from __future__ import annotations

import re

DEFAULT_REASON = "not supported by kubecore"
"""The message for a refused field without a reason of its own."""

REASONS: dict[str, str] = {
    "spec.containers[].volumeDevices": "raw block devices need persistent volumes in block mode",
    "spec.containers[].resources.claims": "dynamic resource allocation needs a DRA driver",
    "spec.resourceClaims": "dynamic resource allocation needs a DRA driver",
    "spec.runtimeClassName": "kubecore runs one runtime, chosen with --runtime",
    "spec.volumes[].gitRepo": "deprecated in Kubernetes; clone in an init container instead",
    "spec.volumes[].csi": "CSI drivers are not available on a kubecore node",
    "spec.volumes[].ephemeral": "generic ephemeral volumes need a PersistentVolumeClaim controller",
}
"""Why kubecore refuses a field, where it is more than ``DEFAULT_REASON``."""

SCHEDULER_ONLY = frozenset(
    {
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
        "spec.affinity.podAffinity",
        "spec.affinity.podAntiAffinity",
        "spec.automountServiceAccountToken",
        "spec.overhead",
        "spec.preemptionPolicy",
        "spec.priority",
        "spec.priorityClassName",
        "spec.schedulerName",
        "spec.schedulingGates",
        "spec.serviceAccount",
        "spec.serviceAccountName",
        "spec.tolerations",
        "spec.topologySpreadConstraints",
    }
)
"""Fields (and everything under them) that mean something to a scheduler and nothing to a
node's agent: the field table shows them as scheduler-only once the decoding tables accept them."""

_INDEX = re.compile(r"\[[^\]]*\]")
_ROOT = re.compile(r"(?:^|\.)((?:metadata|spec|status)(?:[.\[].*)?)$")


def field_pattern(path: str) -> str:
    """``documents[1].spec.initContainers[0].env[2].valueFrom`` ->
    ``spec.containers[].env[].valueFrom``: the key of ``REASONS``."""
    pattern = _INDEX.sub("[]", path)
    found = _ROOT.search(pattern)
    if found is not None:
        pattern = found.group(1)
    return pattern.replace("spec.initContainers[]", "spec.containers[]", 1)


def refusal_reason(pattern: str) -> str:
    return REASONS.get(pattern, DEFAULT_REASON)


def refusal_message(path: str) -> str:
    """The problem message for a refused field at ``path``."""
    reason = refusal_reason(field_pattern(path))
    return DEFAULT_REASON if reason == DEFAULT_REASON else f"{DEFAULT_REASON}: {reason}"


REFUSED_BY_VALIDATION = {
    "spec.containers[].securityContext.windowsOptions": "this is a Linux node",
    "spec.securityContext.windowsOptions": "this is a Linux node",
    "spec.volumes[].image": "image volumes need an engine that mounts images",
    "spec.volumes[].projected.sources[].serviceAccountToken": "there is no API server to issue"
    " tokens",
    **{
        f"spec.ephemeralContainers[].{name}": "not for an ephemeral container (as the API server)"
        for name in (
            "ports",
            "resources",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "lifecycle",
            "restartPolicy",
            "restartPolicyRules",
            "resizePolicy",
        )
    },
}
"""Fields the decoding tables read (so that their content is checked) but validation always
refuses, with the reason (the field table shows them refused)."""

CONDITIONS = {
    "spec.containers[].securityContext.appArmorProfile": "where the host has AppArmor, else"
    " refused at admission",
    "spec.securityContext.appArmorProfile": "where the host has AppArmor, else refused at"
    " admission",
    "spec.containers[].securityContext.seLinuxOptions": "where the host has SELinux, else"
    " refused at admission",
    "spec.securityContext.seLinuxOptions": "where the host has SELinux, else refused at admission",
    "spec.containers[].securityContext.procMount": "Default only (Unmasked needs user namespaces)",
    "spec.hostUsers": "true only (no runtime here gives a pod its own user namespace)",
    "spec.securityContext.sysctls": "the kubelet's safe set, and those --allowed-unsafe-sysctls"
    " allows",
    "spec.hostPID": "with --allow-privileged",
    "spec.hostIPC": "with --allow-privileged",
    "spec.containers[].securityContext.privileged": "with --allow-privileged",
    "spec.volumes[].persistentVolumeClaim": "with --pvc-dir (DIR/<namespace>/<claimName>)",
    "spec.volumes[].emptyDir.medium": '"" and Memory (HugePages refused)',
    "spec.volumes[].emptyDir.mode": "0 to 01777 (the pod's fsGroup decides instead when set)",
    "spec.containers[].env[].valueFrom.fileKeyRef": "from an emptyDir on disk (not medium Memory)",
    "spec.containers[].livenessProbe.grpc": "with the grpc extra installed",
    "spec.containers[].volumeMounts[].mountPropagation": "Bidirectional only in a privileged"
    " container",
    "spec.os.name": "linux only",
    # The action's row first: the rules' row below covers the rest of the rule.
    "spec.containers[].restartPolicyRules[].action": "Restart only (RestartAllContainers is"
    " refused: alpha, KEP-5532)",
    "spec.containers[].restartPolicyRules": "with the container's own restartPolicy, not on"
    " sidecars",
}
"""Honoured fields with a condition the field table states."""
