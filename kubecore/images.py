"""Image references as Docker reads them: the one parser every runtime and the credentials use.

``parse_image_ref("busybox").canonical() == "docker.io/library/busybox:latest"``; ``familiar()``
gives the short form Docker lists (``busybox:latest``). A runtime that stores images under
``familiar()`` (or ``canonical()``) treats a short and a fully-qualified name as one image, as the
conformance suite checks.
"""

from kubecore._model.imageref import (
    DEFAULT_TAG,
    DOCKER_HUB,
    ImageRef,
    parse_image_ref,
    registry_host,
    same_image,
)
from kubecore._util.exports import publish as _publish

__all__ = [
    "DEFAULT_TAG",
    "DOCKER_HUB",
    "ImageRef",
    "parse_image_ref",
    "registry_host",
    "same_image",
]

_publish(__all__, globals(), __name__)
