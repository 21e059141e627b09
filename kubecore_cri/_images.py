"""``CriPuller``: kubecore's image service over a CRI ``runtime.v1`` ImageService."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

from kubecore.runtime import (
    Conflict,
    Image,
    ImageFsUsage,
    ImageNotFound,
    ImagePullError,
    PullProgress,
    RegistryAuth,
)
from kubecore_cri._client import CriConnection, CriOptions
from kubecore_cri._convert import auth_config, image_from
from kubecore_cri._errors import Subject
from kubecore_cri._pb import api_pb2 as pb


class CriPuller:
    """The ``Puller`` for a CRI runtime (shares the runtime's connection). A CRI pull reports no
    progress: ``progress`` is called once, when the pull is done."""

    def __init__(self, connection: CriConnection | CriOptions | None = None) -> None:
        if not isinstance(connection, CriConnection):
            connection = CriConnection(connection)
        self._connection = connection

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        request = pb.PullImageRequest(image=pb.ImageSpec(image=image))
        if auth is not None:
            request.auth.CopyFrom(auth_config(auth))
        answer = self._connection.call(
            "PullImage",
            request,
            Subject.PULL,
            timeout=self._connection.options.pull_timeout,
            service="image",
        )
        if not answer.image_ref:
            raise ImagePullError(f"pulling {image}: the runtime answered no image")
        if progress is not None:
            progress(PullProgress(image=image, status="Pulled"))
        return str(answer.image_ref)

    def image_status(self, image: str) -> Image | None:
        try:
            answer = self._connection.call(
                "ImageStatus",
                pb.ImageStatusRequest(image=pb.ImageSpec(image=image)),
                Subject.IMAGE,
                service="image",
            )
        except ImageNotFound:
            return None
        if not answer.HasField("image") or not answer.image.id:
            return None  # CRI answers a missing image with an empty status
        return image_from(answer.image)

    def list_images(self) -> list[Image]:
        answer = self._connection.call(
            "ListImages", pb.ListImagesRequest(), Subject.IMAGE, service="image"
        )
        return [image_from(item) for item in answer.images]

    def remove_image(self, image: str) -> None:
        """CRI's ``RemoveImage`` removes an image a container still uses (the kubelet checks
        first): so does this, and refuses with ``Conflict`` naming the container."""
        found = self.image_status(image)
        if found is None:
            return
        containers = self._connection.call("ListContainers", pb.ListContainersRequest()).containers
        for container in containers:
            if found.id in (container.image_ref, container.image_id):
                raise Conflict(
                    f"image {image} ({found.id}) is in use by container {container.id}"
                    f" ({container.metadata.name})"
                )
        with contextlib.suppress(ImageNotFound):
            self._connection.call(
                "RemoveImage",
                pb.RemoveImageRequest(image=pb.ImageSpec(image=image)),
                Subject.IMAGE,
                service="image",
            )

    def image_fs_usage(self) -> ImageFsUsage | None:
        """The used bytes the runtime reports for its image filesystem; the capacity from
        ``statvfs`` of its mount point when the runtime runs on this host (else None)."""
        answer = self._connection.call(
            "ImageFsInfo", pb.ImageFsInfoRequest(), Subject.IMAGE, service="image"
        )
        for fs in answer.image_filesystems:
            if not fs.HasField("used_bytes") or not self._connection.is_local():
                continue
            try:
                stat = os.statvfs(fs.fs_id.mountpoint)
            except OSError:
                continue
            return ImageFsUsage(
                used_bytes=int(fs.used_bytes.value), capacity_bytes=stat.f_blocks * stat.f_frsize
            )
        return None
