"""The pure planner: what one sync does to a pod (``compute_pod_actions``), the status it reports
(``compute_pod_status``) and the crash and image-pull back-off they follow."""

from kubecore._planner.actions import (
    BackoffEntry,
    ContainerToKill,
    KillReason,
    ObservedPod,
    PodActions,
    PodHistory,
    ProbeState,
    Waiting,
)
from kubecore._planner.backoff import in_backoff, next_backoff
from kubecore._planner.plan import compute_pod_actions
from kubecore._status.compute import compute_pod_status
from kubecore._util.exports import publish as _publish

__all__ = [
    "BackoffEntry",
    "ContainerToKill",
    "KillReason",
    "ObservedPod",
    "PodActions",
    "PodHistory",
    "ProbeState",
    "Waiting",
    "compute_pod_actions",
    "compute_pod_status",
    "in_backoff",
    "next_backoff",
]

_publish(__all__, globals(), __name__)
