"""Options and the lazily opened gRPC channels of a CRI runtime (runtime and image service)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

import attrs

from kubecore.runtime import InvalidConfig, RuntimeUnavailable
from kubecore_cri._errors import RETRIED_CODES, Subject, raise_translated, status_code_name
from kubecore_cri._lease import DEFAULT_LEASE_DIR
from kubecore_cri._stubs import IMAGE_SERVICE, RUNTIME_SERVICE, service_stub

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "unix:///run/containerd/containerd.sock"
DEFAULT_LOG_ROOT = "/var/log/pods"
RETRY_DELAYS = (0.1, 0.3, 1.0)
"""Seconds between the tries of a call the runtime answered UNAVAILABLE (then it is raised)."""


def _positive(name: str, value: Any) -> float:
    """Numbers and numeric strings (from a command line); a bad value names its option."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidConfig(f"cri runtime option {name} must be a number: {value!r}") from None
    if number <= 0:
        raise InvalidConfig(f"cri runtime option {name} must be positive: {value!r}")
    return number


def _timeout(value: Any) -> float:
    return _positive("timeout", value)


def _pull_timeout(value: Any) -> float:
    return _positive("pull_timeout", value)


def grpc_target(endpoint: str) -> str:
    """A CRI endpoint as gRPC dials it: a bare socket path is a ``unix://`` one."""
    if endpoint.startswith("/"):
        return "unix://" + endpoint
    return endpoint


@attrs.frozen
class CriOptions:
    """How to reach the CRI runtime. Every value also works as a string (from a command line)."""

    endpoint: str = DEFAULT_ENDPOINT
    """The runtime service (``unix:///path``, a bare socket path, or ``host:port``)."""
    image_endpoint: str = ""
    """The image service; empty: the runtime service's endpoint."""
    timeout: float = attrs.field(default=30.0, converter=_timeout)
    """Seconds every call may take (pulls and execs excepted)."""
    pull_timeout: float = attrs.field(default=600.0, converter=_pull_timeout)
    """Seconds a ``PullImage`` may take."""
    log_root: str = DEFAULT_LOG_ROOT
    """Where each sandbox's log directory is made (``<root>/<ns>_<pod>_<uid>``), as the kubelet's
    ``/var/log/pods``."""
    cgroup_parent: str = ""
    """The cgroup parent of every sandbox (``LinuxPodSandboxConfig.cgroup_parent``); empty: the
    runtime's."""
    runtime_handler: str = ""
    """The runtime handler (RuntimeClass) sandboxes run with; empty: the runtime's default."""
    lease_dir: str = DEFAULT_LEASE_DIR
    """Where the node names' leases are kept on the runtime's host (one agent a node name:
    ``kubecore_cri._lease``)."""

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> CriOptions:
        """Options from ``--runtime-option`` style keys. Raises ``InvalidConfig`` naming an unknown
        key (and the known ones) or a bad value."""
        known = {a.name for a in attrs.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise InvalidConfig(
                f"unknown cri runtime option(s): {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        try:
            return cls(**options)
        except (TypeError, ValueError) as error:
            raise InvalidConfig(f"bad cri runtime option: {error}") from error


class CriConnection:
    """The two service stubs, each over a channel opened on first use (an engine that is down at
    start-up is reported by the first call, as ``RuntimeUnavailable``); one channel when both
    services share an endpoint. Calls are retried while the runtime answers UNAVAILABLE."""

    def __init__(
        self,
        options: CriOptions | None = None,
        *,
        stubs: Mapping[str, Any] | None = None,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
    ) -> None:
        """``stubs`` (``runtime``, ``image``) stand in for the generated ones (tests)."""
        self.options = options or CriOptions()
        self._lock = threading.Lock()
        self._channels: dict[str, Any] = {}
        self._stubs: dict[str, Any] = dict(stubs or {})
        self._retry_delays = retry_delays
        self._closed = False

    def _channel(self, endpoint: str) -> Any:
        import grpc

        channel = self._channels.get(endpoint)
        if channel is None:
            channel = grpc.insecure_channel(
                grpc_target(endpoint),
                options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)],
            )
            self._channels[endpoint] = channel
        return channel

    def stub(self, service: str) -> Any:
        """``runtime`` or ``image``: that service's stub."""
        with self._lock:
            if self._closed:
                raise RuntimeUnavailable("the cri runtime is closed")
            stub = self._stubs.get(service)
            if stub is None:
                if service == "image":
                    endpoint = self.options.image_endpoint or self.options.endpoint
                    stub = service_stub(self._channel(endpoint), IMAGE_SERVICE)
                else:
                    stub = service_stub(self._channel(self.options.endpoint), RUNTIME_SERVICE)
                self._stubs[service] = stub
            return stub

    def call(
        self,
        method: str,
        request: Any,
        subject: Subject = Subject.RUNTIME,
        *,
        timeout: float | None = None,
        service: str = "runtime",
    ) -> Any:
        """One unary CRI call, errors translated; retried on UNAVAILABLE (``RETRY_DELAYS``)."""
        budget = timeout if timeout is not None else self.options.timeout
        delays = iter(self._retry_delays)
        while True:
            stub = self.stub(service)
            try:
                return getattr(stub, method)(request, timeout=budget)
            except Exception as error:
                delay = next(delays, None)
                if status_code_name(error) in RETRIED_CODES and delay is not None:
                    if self._closed:
                        raise RuntimeUnavailable("the cri runtime is closed") from error
                    log.debug("CRI %s unavailable, trying again in %.1fs", method, delay)
                    time.sleep(delay)
                    continue
                raise_translated(error, subject, method)

    def stream(self, method: str, request: Any) -> Any:
        """A server-streaming call of the runtime service (no deadline: it runs until closed)."""
        return getattr(self.stub("runtime"), method)(request)

    def is_local(self) -> bool:
        """Whether the runtime is reached over a local socket (its bind mounts are this host's
        paths)."""
        return grpc_target(self.options.endpoint).startswith("unix:")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            channels, self._channels = self._channels, {}
        for channel in channels.values():
            try:
                channel.close()
            except Exception:
                log.debug("closing a CRI channel failed", exc_info=True)
