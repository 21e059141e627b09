"""A cordoned node (``kubectl cordon``: the Node's ``spec.unschedulable``) admits no new pods
created over the node's API: there is no scheduler to keep them away, so admission does what the
scheduler's ``NodeUnschedulable`` filter does (a pod that tolerates the
``node.kubernetes.io/unschedulable:NoSchedule`` taint still comes in). The API's pods that
existed when the node was cordoned stay, and pods from manifest files or a URL (static pods) are
admitted as ever, as a kubelet runs them whatever its node's spec says.

The cordon is kept in the node's record (``kubecore._model.node_record``), which the node's API
writes and admission reads."""

from __future__ import annotations

from collections.abc import Iterable

from kubecore._config.updates import SourceName
from kubecore._manifest.identity import SOURCE_ANNOTATION
from kubecore._model.node_record import NO_SCHEDULE, UNSCHEDULABLE_TAINT, CordonView
from kubecore._model.v1 import Pod, Toleration


def tolerates_unschedulable(tolerations: Iterable[Toleration]) -> bool:
    """A toleration matches the ``node.kubernetes.io/unschedulable:NoSchedule`` taint."""
    for t in tolerations:
        if t.effect not in ("", NO_SCHEDULE):
            continue
        if t.operator == "Exists" and t.key in ("", UNSCHEDULABLE_TAINT):
            return True
        if t.key == UNSCHEDULABLE_TAINT and t.operator in ("", "Equal") and t.value == "":
            return True
    return False


def cordon_refusal(pod: Pod, view: CordonView, node_name: str) -> str | None:
    """Why the cordon keeps a new pod out (None: it does not): a pod created over the API since
    the node was cordoned that does not tolerate the unschedulable taint, or one refused so
    before."""
    source = pod.metadata.annotations.get(SOURCE_ANNOTATION, "")
    if source != SourceName.KUBE_APISERVER.value:
        return None
    if pod.uid in view.refused:
        return (
            f"Pod was rejected: node {node_name} was cordoned when the pod was created, and a"
            " rejection is final: create it again to have it run"
        )
    if not view.cordoned or pod.uid in view.kept or tolerates_unschedulable(pod.spec.tolerations):
        return None
    return (
        f"Pod was rejected: node {node_name} is cordoned (spec.unschedulable is true) and"
        f" admits no new pods; `kubectl uncordon {node_name}` lets them in again"
    )
