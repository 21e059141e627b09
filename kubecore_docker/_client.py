"""Options and the lazily built docker-py clients shared by the runtime and the puller."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

import attrs

from kubecore.runtime import InvalidConfig, RuntimeUnavailable
from kubecore_docker._errors import Subject, engine_errors, root_cause

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "unix:///var/run/docker.sock"
DEFAULT_SANDBOX_IMAGE = "registry.k8s.io/pause:3.9"
"""The image sandboxes run unless the ``sandbox_image`` option names another (the kubelet's)."""


def _number(kind: type[float] | type[int], name: str, value: Any) -> Any:
    """Numbers and numeric strings (from a command line); a bad value names its option."""
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise InvalidConfig(f"docker runtime option {name} must be a number: {value!r}") from None
    if number <= 0:
        raise InvalidConfig(f"docker runtime option {name} must be positive: {value!r}")
    return number


def _timeout(value: Any) -> float:
    return float(_number(float, "timeout", value))


def _pool_size(value: Any) -> int:
    return int(_number(int, "max_pool_size", value))


def _stop_timeout(value: Any) -> float:
    return float(_number(float, "sandbox_stop_timeout", value))


@attrs.frozen
class DockerOptions:
    """How to reach the engine. Every value also works as a string (from a command line)."""

    base_url: str = ""
    """The engine's address; empty means ``$DOCKER_HOST`` or the default unix socket."""
    timeout: float = attrs.field(default=60.0, converter=_timeout)
    """Seconds every engine call may take (streams excepted)."""
    max_pool_size: int = attrs.field(default=16, converter=_pool_size)
    """Connections kept to the engine: size it to the agent's worker pool."""
    api_version: str = "auto"
    """The API version to speak; ``auto`` asks the engine once, on first use."""
    sandbox_image: str = DEFAULT_SANDBOX_IMAGE
    sandbox_stop_timeout: float = attrs.field(default=10.0, converter=_stop_timeout)
    """Seconds a sandbox (pause) container gets to exit on TERM before it is killed."""

    def resolved_base_url(self) -> str:
        """The engine's URL: ``base_url``, else ``DOCKER_HOST``, else the default socket."""
        return self.base_url or os.environ.get("DOCKER_HOST") or DEFAULT_BASE_URL

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> DockerOptions:
        """Options from ``--runtime-option`` style keys. Raises ``InvalidConfig`` naming an unknown
        key (and the known ones) or a bad value."""
        known = {a.name for a in attrs.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise InvalidConfig(
                f"unknown docker runtime option(s): {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        try:
            return cls(**options)
        except (TypeError, ValueError) as error:
            raise InvalidConfig(f"bad docker runtime option: {error}") from error


class DockerConnection:
    """Owns the docker-py ``APIClient``: built on first use (so an engine that is down at start-up
    is reported by the first call, as ``RuntimeUnavailable``), shared by runtime and puller.

    Streaming calls (events, followed logs) hold a connection for as long as they run, so each gets
    a client of its own from ``stream_client``.
    """

    def __init__(self, options: DockerOptions | None = None, *, client: Any = None) -> None:
        self.options = options or DockerOptions()
        self._client = client
        self._lock = threading.Lock()

    def api(self) -> Any:
        """The docker-py ``APIClient``, built on first use (so an engine down at start-up is an
        error of the first call, not of the load)."""
        with self._lock:
            if self._client is None:
                self._client = self._build(self.options.api_version, self.options.timeout)
            return self._client

    def stream_client(self, timeout: float | None = None) -> Any:
        """A new client for one long-lived stream; the caller closes it."""
        version = getattr(self.api(), "api_version", None) or self.options.api_version
        return self._build(version, timeout, pool=1)

    def _build(self, version: str, timeout: float | None, pool: int | None = None) -> Any:
        import docker

        url = self.options.resolved_base_url()
        try:
            with engine_errors(Subject.ENGINE):
                return docker.APIClient(
                    base_url=url,
                    version=version,
                    timeout=timeout,
                    max_pool_size=pool or self.options.max_pool_size,
                )
        except RuntimeUnavailable as error:
            # The first call of an engine that is not there: say where it was looked for.
            raise RuntimeUnavailable(
                f"cannot reach the Docker engine at {url}: {root_cause(error)}"
            ) from error

    def api_version_at_least(self, version: str) -> bool:
        """Whether the engine's API version is ``version`` or later."""
        import docker.utils

        return bool(docker.utils.version_gte(self.api().api_version, version))

    def is_local(self) -> bool:
        """Whether the engine is reached over a local socket (its bind mounts are this host's
        paths)."""
        return self.options.resolved_base_url().startswith(("unix://", "/"))

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:
                log.debug("closing the docker client failed", exc_info=True)
