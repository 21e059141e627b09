"""Container stats from the engine: CPU, memory, the writable layer and the log file of each
running managed container."""

from __future__ import annotations

import logging
import os
from typing import Any

import attrs

from kubecore import ContainerRuntimeError
from kubecore.runtime import (
    MANAGED_LABEL,
    Clock,
    Conflict,
    ContainerNotFound,
    ContainerStats,
    RuntimeTimeout,
    RuntimeUnavailable,
)
from kubecore_docker._client import DockerConnection
from kubecore_docker._convert import stats_from
from kubecore_docker._errors import Subject, engine_errors
from kubecore_docker._names import CONTAINER_TYPE, DOCKER_TYPE_LABEL

log = logging.getLogger(__name__)


class StatsReader:
    """Reads the stats; keeps where each running container's log file is (read once, by
    inspect)."""

    def __init__(self, connection: DockerConnection, clock: Clock) -> None:
        self._connection = connection
        self._clock = clock
        self._log_paths: dict[str, str] = {}
        """Container id -> its log file on this host."""

    def read(self, api: Any) -> list[ContainerStats]:
        """The figures of every running managed container (one that ends while read is left
        out)."""
        with engine_errors():
            # size: the writable layer's bytes (SizeRw), for ephemeral-storage accounting
            running = api.containers(
                filters={
                    "label": [MANAGED_LABEL, f"{DOCKER_TYPE_LABEL}={CONTAINER_TYPE}"],
                    "status": "running",
                },
                size=True,
            )
        # one_shot skips the engine's second sample (about 1 s per container); API 1.41 and later.
        one_shot = self._connection.api_version_at_least("1.41")
        result: list[ContainerStats] = []
        for entry in running:
            try:
                with engine_errors(Subject.CONTAINER):
                    if one_shot:
                        data = api.stats(entry["Id"], stream=False, one_shot=True)
                    else:
                        data = api.stats(entry["Id"], stream=False)
            except (ContainerNotFound, Conflict):
                continue
            except (RuntimeUnavailable, RuntimeTimeout):
                raise
            except ContainerRuntimeError as error:
                # A container ending while it is read answers garbage, not a 404: one
                # container's figures missing must not fail the whole summary.
                log.debug("stats of %s could not be read: %s", entry["Id"], error)
                continue
            size_rw = entry.get("SizeRw", 0)  # left out when 0
            stats = stats_from(
                entry["Id"], data, self._clock.now(), size_rw if isinstance(size_rw, int) else None
            )
            log_bytes = self._log_bytes(api, entry["Id"])
            if log_bytes is not None:
                stats = attrs.evolve(stats, log_used_bytes=log_bytes, log_inodes_used=1)
            result.append(stats)
        running_ids = {entry["Id"] for entry in running}
        self._log_paths = {k: v for k, v in self._log_paths.items() if k in running_ids}
        return result

    def _log_bytes(self, api: Any, container_id: str) -> int | None:
        """The size of the container's log file, when the engine runs on this host and keeps
        one (the json-file and local drivers do)."""
        if not self._connection.is_local():
            return None
        path = self._log_paths.get(container_id)
        if path is None:
            try:
                with engine_errors(Subject.CONTAINER):
                    path = str(api.inspect_container(container_id).get("LogPath") or "")
            except ContainerRuntimeError:
                return None
            self._log_paths[container_id] = path
        try:
            return os.stat(path).st_size if path else None
        except OSError:
            return None
