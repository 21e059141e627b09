"""kubecore's Docker Engine adapter, over docker-py's low-level ``APIClient``.

Importing this package does not import ``docker``: the client is built on first use.
"""

import logging

from kubecore_docker._client import DEFAULT_SANDBOX_IMAGE, DockerConnection, DockerOptions
from kubecore_docker._errors import engine_errors
from kubecore_docker._events import EventWatcher
from kubecore_docker._images import DockerPuller
from kubecore_docker._names import (
    ANNOTATION_PREFIX,
    DOCKER_TYPE_LABEL,
    SANDBOX_ID_LABEL,
    container_name,
    sandbox_name,
)
from kubecore_docker._runtime import DockerRuntime

__all__ = [
    "ANNOTATION_PREFIX",
    "DEFAULT_SANDBOX_IMAGE",
    "DOCKER_TYPE_LABEL",
    "SANDBOX_ID_LABEL",
    "DockerConnection",
    "DockerOptions",
    "DockerPuller",
    "DockerRuntime",
    "EventWatcher",
    "container_name",
    "engine_errors",
    "sandbox_name",
]

# A library prints nothing unless its host configures logging (see ``kubecore``).
logging.getLogger(__name__).addHandler(logging.NullHandler())
