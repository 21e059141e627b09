"""Container log rotation, as the kubelet's container log manager does it for runtimes that
write their containers' logs to files (``RuntimeContainer.log_path``) and can reopen them
(``ContainerLogReopener``, CRI ``ReopenContainerLog``).

For each running container whose live log has reached ``max_size`` bytes: temporary files
and rotated files whose compressed copy exists are removed; the oldest rotated files are
removed until ``max_files - 2`` are left (with the live file and the one about to be rotated,
``max_files`` in all); those left are compressed (``<name>.gz``, written as ``.tmp`` first);
the live file is renamed ``<log>.<YYYYMMDD-hhmmss>`` (UTC here, so that the names sort in time
order across clock changes); and the runtime is asked to reopen the log. If that fails the file
is renamed back, to be tried again next time. The newest rotated file is left uncompressed, as
upstream leaves it, for readers still on it. A live log that is missing (a reopen failed
before) is reopened.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence

import attrs

from kubecore._contract.capabilities import ContainerLogReopener
from kubecore._contract.errors import ContainerRuntimeError
from kubecore._contract.values import RuntimeContainer, RuntimeState
from kubecore._observability.cri_logs import COMPRESSED_SUFFIX, TEMPORARY_SUFFIX

logger = logging.getLogger(__name__)

ROTATED_TIME_FORMAT = "%Y%m%d-%H%M%S"
DEFAULT_MAX_SIZE = 10 * 1024 * 1024
DEFAULT_MAX_FILES = 5
MONITOR_INTERVAL = 10.0
"""Seconds between rotation passes (the kubelet's ``--container-log-monitor-interval``)."""


@attrs.frozen
class LogRotationPolicy:
    max_size: int = DEFAULT_MAX_SIZE
    """Bytes of the live file at which it is rotated."""
    max_files: int = DEFAULT_MAX_FILES
    """Files of one container's log at most, the live one included (at least 2)."""

    def __attrs_post_init__(self) -> None:
        if self.max_size < 1:
            raise ValueError(f"max_size must be positive, not {self.max_size}")
        if self.max_files < 2:
            raise ValueError(f"max_files must be at least 2, not {self.max_files}")


def rotated_name(path: str, now: float) -> str:
    """The name ``path`` is rotated to at ``now``: ``0.log.20261201-150405``."""
    return f"{path}.{time.strftime(ROTATED_TIME_FORMAT, time.gmtime(now))}"


def _rotated_files(path: str) -> list[str]:
    directory, name = os.path.split(path)
    prefix = name + "."
    try:
        names = os.listdir(directory or ".")
    except FileNotFoundError:
        return []
    return sorted(os.path.join(directory, n) for n in names if n.startswith(prefix))


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def _compress(path: str) -> None:
    """``path`` replaced by ``path.gz`` (complete before it has that name; Go's default
    compression level, as upstream)."""
    temporary = path + TEMPORARY_SUFFIX
    with open(path, "rb") as source, gzip.open(temporary, "wb", compresslevel=6) as target:
        shutil.copyfileobj(source, target)
    os.replace(temporary, path + COMPRESSED_SUFFIX)
    _remove(path)


def prune_and_compress(path: str, policy: LogRotationPolicy) -> list[str]:
    """The rotated files of ``path`` tidied before a rotation (the module docstring); returns
    those left, oldest first."""
    files = _rotated_files(path)
    present = set(files)
    kept = []
    for name in files:
        if name.endswith(TEMPORARY_SUFFIX) or name + COMPRESSED_SUFFIX in present:
            _remove(name)
        else:
            kept.append(name)
    excess = max(0, len(kept) - max(0, policy.max_files - 2))
    for name in kept[:excess]:
        _remove(name)
    left = []
    for name in kept[excess:]:
        if not name.endswith(COMPRESSED_SUFFIX):
            _compress(name)
            name += COMPRESSED_SUFFIX
        left.append(name)
    return left


def rotate_log(
    path: str, policy: LogRotationPolicy, now: float, reopen: Callable[[], None]
) -> bool:
    """Rotate the live log ``path`` if it has reached the policy's size; whether it was.
    ``reopen`` asks the runtime to write to a new file at ``path``; what it raises is raised
    after the file has been renamed back."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        reopen()  # lost by an earlier failed reopen: get it back
        return False
    if size < policy.max_size:
        return False
    target = rotated_name(path, now)
    if os.path.exists(target) or os.path.exists(target + COMPRESSED_SUFFIX):
        return False  # rotated within this second already: next time
    prune_and_compress(path, policy)
    os.rename(path, target)
    try:
        reopen()
    except BaseException:
        try:
            os.rename(target, path)
        except OSError:
            logger.error("renaming rotated log %s back to %s failed", target, path)
        raise
    return True


class ContainerLogRotation:
    """The rotation pass of the housekeeping: every ``interval`` seconds, each running
    container with a log file on a runtime that can reopen logs."""

    def __init__(
        self,
        runtime: object,
        policy: LogRotationPolicy,
        *,
        interval: float = MONITOR_INTERVAL,
    ) -> None:
        self._reopener = runtime if isinstance(runtime, ContainerLogReopener) else None
        self._policy = policy
        self._interval = interval
        self._last = -float("inf")

    def run(self, containers: Sequence[RuntimeContainer], *, now: float, mono: float) -> int:
        """Rotate the logs that are due, if the pass is; how many were rotated."""
        reopener = self._reopener
        if reopener is None or mono - self._last < self._interval:
            return 0
        self._last = mono
        rotated = 0
        for container in containers:
            if container.state is not RuntimeState.RUNNING or not container.log_path:
                continue
            container_id = container.id
            try:
                if rotate_log(
                    container.log_path,
                    self._policy,
                    now,
                    functools.partial(reopener.reopen_container_log, container_id),
                ):
                    rotated += 1
            except (OSError, ContainerRuntimeError) as error:
                logger.warning("rotating the log of container %s failed: %s", container_id, error)
        return rotated
