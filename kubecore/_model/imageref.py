"""Image references, read as Docker reads them (``distribution/reference``'s normalised names).

``busybox``, ``busybox:latest``, ``library/busybox`` and ``docker.io/library/busybox:latest`` name
one image. The first path component is a registry host when it has a ``.`` or a ``:``, is
``localhost``, or has an upper-case letter; otherwise the image is on Docker Hub, whose
single-component repositories live under ``library/``. Without a tag or digest the tag is
``latest``. A digest pins the image: the tag beside it (``name:tag@sha256:...``) then names
nothing more.

Parsing is structural and lenient (it never raises): whether a name exists is the runtime's
business. The in-memory runtime, Docker and the credentials code all use this one parser.
"""

from __future__ import annotations

import attrs

DOCKER_HUB = "docker.io"
"""The registry of an image reference that names none."""
HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})
DEFAULT_TAG = "latest"
"""The tag of an image reference that names neither a tag nor a digest."""
_OFFICIAL = "library/"


@attrs.frozen
class ImageRef:
    """An image reference as Docker reads it (``parse_image_ref``): registry, repository, tag and
    digest."""

    registry: str
    """The registry host, lower-cased, Docker Hub's aliases folded to ``docker.io``."""
    repository: str
    """The path in the registry (``library/busybox`` for an official Docker Hub image)."""
    tag: str = ""
    digest: str = ""
    """``sha256:...`` when the reference pins a digest."""

    @property
    def familiar_name(self) -> str:
        """The repository as ``docker`` prints it: ``busybox``, ``user/app``, ``quay.io/x/y``."""
        if self.registry != DOCKER_HUB:
            return f"{self.registry}/{self.repository}"
        if self.repository.startswith(_OFFICIAL) and self.repository.count("/") == 1:
            return self.repository[len(_OFFICIAL) :]
        first, sep, _ = self.repository.partition("/")
        if sep and _is_registry(first):
            # ``docker.io/0.0/app``: without its registry the name would read as host ``0.0``.
            return f"{DOCKER_HUB}/{self.repository}"
        return self.repository

    def _suffix(self) -> str:
        return f"@{self.digest}" if self.digest else f":{self.tag or DEFAULT_TAG}"

    def familiar(self) -> str:
        """The short form naming the image: ``busybox:latest``, ``busybox@sha256:...``."""
        return self.familiar_name + self._suffix()

    def canonical(self) -> str:
        """The fully-qualified form: ``docker.io/library/busybox:latest``."""
        return f"{self.registry}/{self.repository}{self._suffix()}"


def _is_registry(component: str) -> bool:
    return (
        "." in component
        or ":" in component
        or component == "localhost"
        or component != component.lower()
    )


def registry_of(component: str) -> str:
    host = component.lower()
    return DOCKER_HUB if host in HUB_ALIASES else host


def parse_image_ref(reference: str) -> ImageRef:
    """Split a reference into registry, repository, tag and digest, with Docker's defaults."""
    text = reference.strip()
    name, _, digest = text.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = ""
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
    first, sep, rest = name.partition("/")
    if sep and _is_registry(first):
        registry, repository = registry_of(first), rest
    else:
        registry, repository = DOCKER_HUB, name
    if registry == DOCKER_HUB and "/" not in repository:
        repository = _OFFICIAL + repository
    if not tag and not digest:
        tag = DEFAULT_TAG
    return ImageRef(registry, repository, tag, digest)


def registry_host(image: str) -> str:
    """The registry an image reference names (``docker.io`` for Docker Hub), lower-cased."""
    return parse_image_ref(image).registry


def same_image(a: str, b: str) -> bool:
    """Whether two references name one image (``busybox`` and ``docker.io/library/busybox``)."""
    return parse_image_ref(a).familiar() == parse_image_ref(b).familiar()
