"""The in-memory image service: the images present, the references that may be pulled (with
their sizes, users and credentials), pulls with progress, removal and the image filesystem."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Mapping

import attrs

from kubecore.runtime import (
    Clock,
    Conflict,
    Image,
    ImageFsUsage,
    ImagePullError,
    PullProgress,
    RegistryAuth,
    parse_image_ref,
    parse_image_user,
)


def normalize_image(ref: str) -> str:
    """The name an image is stored under, as Docker lists it: ``busybox`` and
    ``docker.io/library/busybox:latest`` -> ``busybox:latest``
    (``kubecore.runtime.parse_image_ref``)."""
    return parse_image_ref(ref).familiar()


def image_id_for(ref: str) -> str:
    """The fake image id of a reference: ``sha256:`` and a digest of the normalised reference,
    the same every run."""
    return "sha256:" + hashlib.sha256(normalize_image(ref).encode()).hexdigest()


@attrs.define(eq=False)
class ImageRecord:
    """A present image: its id, tags, size, when it was stored and the user it runs as."""

    id: str
    tags: list[str]
    size: int
    created_at: float
    user: str = ""


def sized(images: Iterable[str] | Mapping[str, int]) -> list[tuple[str, int | None]]:
    """References with their sizes (None: the default size), from a reference, an iterable of
    them or a mapping of reference to size."""
    if isinstance(images, str):
        return [(images, None)]
    if isinstance(images, Mapping):
        return [(ref, int(size)) for ref, size in images.items()]
    return [(ref, None) for ref in images]


class ImageService:
    """The images, under the runtime's lock. ``pullable`` None lets every pull succeed; a set
    of normalised references allows only those."""

    def __init__(
        self,
        clock: Clock,
        lock: threading.RLock,
        *,
        capacity: int,
        default_size: int,
        pullable: set[str] | None,
    ) -> None:
        self._clock = clock
        self._lock = lock
        self._images: dict[str, ImageRecord] = {}
        self._sizes: dict[str, int] = {}
        self._users: dict[str, str] = {}
        self._pullable = pullable
        self._aliases: dict[str, str] = {}
        self._auth: dict[str, RegistryAuth] = {}
        self._capacity = capacity
        self._default_size = default_size

    def add(self, ref: str, size: int | None, *, pulled: bool, image_id: str, user: str) -> str:
        """Make ``ref`` pullable, and present with ``pulled``; its image id."""
        norm = normalize_image(ref)
        with self._lock:
            if user:
                self._users[norm] = user
            if self._pullable is not None:
                self._pullable.add(norm)
            if size is not None:
                self._sizes[norm] = size
            if image_id:
                self._aliases[norm] = image_id
            if pulled:
                return self._store(norm)
            return self._aliases.get(norm) or image_id_for(norm)

    def require_auth(self, ref: str, auth: RegistryAuth) -> None:
        with self._lock:
            self._auth[normalize_image(ref)] = auth

    def set_capacity(self, capacity_bytes: int) -> None:
        with self._lock:
            self._capacity = capacity_bytes

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None,
        progress: Callable[[PullProgress], None] | None,
    ) -> str:
        norm = normalize_image(image)
        with self._lock:
            if self._pullable is not None and norm not in self._pullable:
                raise ImagePullError(
                    f"pull access denied for {image}: repository does not exist"
                    " or may require authorization"
                )
            required = self._auth.get(norm)
            if required is not None and (
                auth is None
                or (auth.username, auth.password) != (required.username, required.password)
            ):
                raise ImagePullError(f"pull {image}: unauthorized: authentication required")
            image_id = self._store(norm)
            size = self._images[image_id].size
        if progress is not None:
            for status, current in (
                ("Pulling fs layer", 0),
                ("Downloading", size),
                ("Pull complete", size),
            ):
                progress(PullProgress(image, status, current, size, layer=image_id[7:19]))
        return image_id

    def status(self, image: str) -> Image | None:
        with self._lock:
            found = self.find(image)
            return None if found is None else _image_view(found)

    def list_images(self) -> list[Image]:
        with self._lock:
            return [_image_view(img) for img in self._images.values()]

    def remove(self, image: str, users_of: Callable[[str], list[str]]) -> None:
        """Remove (or untag) ``image``; ``users_of(image_id)`` names the containers using it."""
        with self._lock:
            found = self.find(image)
            if found is None:
                return
            users = users_of(found.id)
            by_tag = normalize_image(image) in found.tags and image != found.id
            if users and (not by_tag or len(found.tags) == 1):
                raise Conflict(f"image {image} is used by container(s) {', '.join(users)}")
            if by_tag:
                found.tags.remove(normalize_image(image))
                if found.tags:
                    return
            del self._images[found.id]

    def fs_usage(self) -> ImageFsUsage:
        with self._lock:
            used = sum(img.size for img in self._images.values())
            return ImageFsUsage(used, self._capacity)

    def find(self, ref: str) -> ImageRecord | None:
        """The present image ``ref`` names (an id, a tag or a digest); the lock is held."""
        if ref in self._images:
            return self._images[ref]
        norm = normalize_image(ref)
        for img in self._images.values():
            if norm in img.tags or img.id == f"sha256:{ref}":
                return img
        return None

    def _store(self, norm: str) -> str:
        image_id = self._aliases.get(norm) or image_id_for(norm)
        existing = self._images.get(image_id)
        if existing is None:
            size = self._sizes.get(norm, self._default_size)
            user = self._users.get(norm, "")
            self._images[image_id] = ImageRecord(image_id, [norm], size, self._clock.now(), user)
        elif norm not in existing.tags:
            existing.tags.append(norm)
        return image_id


def _image_view(img: ImageRecord) -> Image:
    uid, username = parse_image_user(img.user)
    return Image(
        id=img.id,
        tags=tuple(img.tags),
        size=img.size,
        created_at=img.created_at,
        uid=uid,
        username=username,
    )
