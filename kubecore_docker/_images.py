"""``DockerPuller``: kubecore's image service over docker-py's low-level ``APIClient``."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from kubecore.runtime import (
    Image,
    ImageFsUsage,
    ImageNotFound,
    ImagePullError,
    NotFound,
    PullProgress,
    RegistryAuth,
)
from kubecore_docker._client import DockerConnection, DockerOptions
from kubecore_docker._convert import image_from, image_matches, progress_from, pull_error
from kubecore_docker._errors import Subject, engine_errors

log = logging.getLogger(__name__)


def auth_config(auth: RegistryAuth) -> dict[str, str]:
    """A ``RegistryAuth`` as the engine's ``X-Registry-Auth`` fields."""
    fields = {
        "username": auth.username,
        "password": auth.password,
        "serveraddress": auth.server,
        "identitytoken": auth.identity_token,
    }
    return {key: value for key, value in fields.items() if value}


class DockerPuller:
    """The ``Puller`` for a Docker Engine (shares the runtime's connection).

    Without ``auth`` a pull uses what docker-py finds in the Docker config file
    (``~/.docker/config.json`` or ``$DOCKER_CONFIG``), like the ``docker`` command does.
    """

    def __init__(self, connection: DockerConnection | DockerOptions | None = None) -> None:
        if not isinstance(connection, DockerConnection):
            connection = DockerConnection(connection)
        self._connection = connection
        self._fs_root: str | None = None

    def _api(self) -> Any:
        return self._connection.api()

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        api = self._api()
        credentials = auth_config(auth) if auth is not None else None
        with engine_errors(Subject.PULL):
            for message in api.pull(image, stream=True, decode=True, auth_config=credentials):
                error = pull_error(message)
                if error is not None:
                    raise ImagePullError(f"pulling {image}: {error}")
                if progress is not None:
                    _report(progress, progress_from(image, message))
        found = self.image_status(image)
        if found is None:
            raise ImagePullError(f"pulling {image}: the engine reported success but has no image")
        return found.id

    def image_status(self, image: str) -> Image | None:
        try:
            with engine_errors(Subject.IMAGE):
                data = self._api().inspect_image(image)
        except NotFound:
            return None
        found = image_from(data)
        return found if image_matches(image, found) else None

    def list_images(self) -> list[Image]:
        with engine_errors(Subject.IMAGE):
            return [image_from(entry) for entry in self._api().images()]

    def remove_image(self, image: str) -> None:
        try:
            with engine_errors(Subject.IMAGE):
                self._api().remove_image(image)
        except ImageNotFound:
            pass

    def image_fs_usage(self) -> ImageFsUsage | None:
        """The filesystem holding the engine's data, when the engine runs on this host.

        Read with ``statvfs`` on the engine's root directory (one ``info`` call, once): cheaper
        than ``df``, which sizes every layer and container.
        """
        if not self._connection.is_local():
            return None
        if self._fs_root is None:
            with engine_errors():
                self._fs_root = str(self._api().info().get("DockerRootDir") or "")
        if not self._fs_root:
            return None
        usage = statvfs_usage(self._fs_root)
        if usage is None:
            return None
        return ImageFsUsage(used_bytes=usage[0], capacity_bytes=usage[1])


def _report(progress: Callable[[PullProgress], None], value: PullProgress) -> None:
    try:
        progress(value)
    except Exception:
        log.exception("pull progress callback failed")


def statvfs_usage(path: str) -> tuple[int, int] | None:
    """(used, capacity) bytes of the filesystem holding ``path``."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize, stat.f_blocks * stat.f_frsize
