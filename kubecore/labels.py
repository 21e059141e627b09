"""The labels and annotations kubecore puts on sandboxes and containers, and how they are read.

State lives only in these, so a runtime must store them as given and return them unchanged; a
runtime selects its own objects by ``MANAGED_LABEL``, and an agent the objects of its own node
by ``NODE_LABEL`` (``owned_by``: an object without one is nobody's). The core writes them into
every ``SandboxConfig`` / ``ContainerConfig`` (``sandbox_labels``, ``container_labels``,
``*_annotations``); an adapter stores them and adds only its engine's own names.
"""

from kubecore._config.updates import SOURCE_ANNOTATION
from kubecore._contract.labels import (
    CONTAINER_NAME_LABEL,
    GRACE_PERIOD_ANNOTATION,
    HASH_ANNOTATION,
    INIT_CONTAINER_ANNOTATION,
    MANAGED_LABEL,
    NODE_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    RESOURCES_ANNOTATION,
    RESTART_COUNT_ANNOTATION,
    SANDBOX_CONTAINER_NAME,
    SANDBOX_HASH_ANNOTATION,
    SIDECAR_ANNOTATION,
    TERMINATION_MESSAGE_PATH_ANNOTATION,
    container_annotations,
    container_labels,
    container_name,
    grace_period,
    init_flag,
    is_sidecar,
    node_of,
    owned_by,
    pod_identity,
    recorded_hash,
    restart_count,
    sandbox_annotations,
    sandbox_labels,
)
from kubecore._util.exports import publish as _publish

__all__ = [
    "CONTAINER_NAME_LABEL",
    "GRACE_PERIOD_ANNOTATION",
    "HASH_ANNOTATION",
    "INIT_CONTAINER_ANNOTATION",
    "MANAGED_LABEL",
    "NODE_LABEL",
    "POD_NAMESPACE_LABEL",
    "POD_NAME_LABEL",
    "POD_UID_LABEL",
    "RESOURCES_ANNOTATION",
    "RESTART_COUNT_ANNOTATION",
    "SANDBOX_CONTAINER_NAME",
    "SANDBOX_HASH_ANNOTATION",
    "SIDECAR_ANNOTATION",
    "SOURCE_ANNOTATION",
    "TERMINATION_MESSAGE_PATH_ANNOTATION",
    "container_annotations",
    "container_labels",
    "container_name",
    "grace_period",
    "init_flag",
    "is_sidecar",
    "node_of",
    "owned_by",
    "pod_identity",
    "recorded_hash",
    "restart_count",
    "sandbox_annotations",
    "sandbox_labels",
]

_publish(__all__, globals(), __name__)
