"""The labels and annotations kubecore puts on sandboxes and containers.

State lives only in these, so a runtime must store them as given and return them unchanged; a
runtime selects its own objects by ``MANAGED_LABEL``, and an agent the objects of its own node
by ``NODE_LABEL`` (``owned_by``: an object without one is nobody's).
"""

from kubecore._exports import publish as _publish
from kubecore._runtime import (
    CONTAINER_NAME_LABEL,
    GRACE_PERIOD_ANNOTATION,
    HASH_ANNOTATION,
    INIT_CONTAINER_ANNOTATION,
    MANAGED_LABEL,
    NODE_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    RESTART_COUNT_ANNOTATION,
    SANDBOX_CONTAINER_NAME,
    SIDECAR_ANNOTATION,
    TERMINATION_MESSAGE_PATH_ANNOTATION,
    node_of,
    owned_by,
)
from kubecore._updates import SOURCE_ANNOTATION

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
    "RESTART_COUNT_ANNOTATION",
    "SANDBOX_CONTAINER_NAME",
    "SIDECAR_ANNOTATION",
    "SOURCE_ANNOTATION",
    "TERMINATION_MESSAGE_PATH_ANNOTATION",
    "node_of",
    "owned_by",
]

_publish(__all__, globals(), __name__)
