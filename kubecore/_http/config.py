"""How the kubelet HTTP API is served (``ServerConfig``) and what it reads from the agent
(``ServedKubelet``)."""

from __future__ import annotations

from typing import Any, Protocol

import attrs

from kubecore._contract.values import ExecResult
from kubecore._http.serving import DEFAULT_ADDRESS, DEFAULT_PORT
from kubecore._manifest.documents import MAX_DOCUMENT_BYTES
from kubecore._model.v1 import Pod
from kubecore._observability.logs import LogReader
from kubecore._streaming.portforward_http import PortForwarding
from kubecore._streaming.remotecommand import SessionOpener


class _Metrics(Protocol):
    def render(self) -> bytes: ...

    def render_probes(self) -> bytes: ...

    def render_resource(self) -> bytes: ...


class ServedStreams(LogReader, SessionOpener, PortForwarding, Protocol):
    """The streams the server opens (``kubecore.Kubelet.streams`` has all of them)."""

    def exec(
        self, namespace: str, pod: str, container: str, command: list[str], *, timeout: float = ...
    ) -> ExecResult: ...


class ServedViews(Protocol):
    """What the server reads of the node (``kubecore.Kubelet.views`` has all of it)."""

    def stats_summary(self) -> dict[str, Any]: ...

    def health_checks(self) -> list[tuple[str, str]]:
        """(check name, "" when it passes, else why: ``failed: …`` or ``not ready: …``), in
        the order ``/healthz`` lists them."""
        ...


class ServedKubelet(Protocol):
    """What the server needs from the agent (``kubecore.Kubelet`` has all of it)."""

    def pods(self) -> list[Pod]: ...

    def get_pod(self, namespace: str, name: str) -> Pod | None: ...

    def explain(self, uid: str) -> dict[str, Any] | None: ...

    @property
    def streams(self) -> ServedStreams: ...

    @property
    def views(self) -> ServedViews: ...

    @property
    def metrics(self) -> _Metrics: ...


@attrs.frozen
class ServerConfig:
    """Where and how the agent's HTTP API listens: address and port, TLS, limits, and whether
    exec is allowed (with its token)."""

    address: str = DEFAULT_ADDRESS
    port: int = DEFAULT_PORT
    """0 picks a free port (see ``KubeletServer.port``)."""
    enable_exec: bool = False
    exec_token: str = ""
    log_dir: str | None = None
    """The directory ``/logs/`` serves; None answers 404."""
    max_body_bytes: int = MAX_DOCUMENT_BYTES
    request_timeout: float = 30.0
    """The time a client has to send a request's head (an idle keep-alive connection, its next
    request), then again to send its body, each in all rather than per read; also the socket
    timeout for writing a response."""
    workers: int = 32
    """Requests answered at once (a client that sends nothing holds no worker)."""
    max_connections: int = 1024
    """Open connections; past it the oldest idle one is closed to make room, or a new one is
    answered 503 at once (over TLS, closed)."""
    max_connections_per_client: int = 256
    """Open connections from one client address (an IPv6 /64), loopback included; past it the
    client's oldest idle one is closed to make room."""
    health_connections: int = 8
    """Of ``max_connections``, the last ones, kept for ``/healthz``, ``/readyz``, ``/livez``."""
    max_follow_streams: int = 8
    """``follow=true`` log streams open at once, in all (each holds a worker)."""
    max_anonymous_follows: int = attrs.field()
    """Of ``max_follow_streams``, those requests without a token may hold; by default half."""
    max_follow_per_container: int = 2
    """``follow=true`` log streams open at once on one container."""
    max_watches: int = attrs.field()
    """Watches (``?watch=true``) open at once (each holds a worker); by default a quarter of the
    workers."""
    max_anonymous_watches: int = attrs.field()
    """Of ``max_watches``, those requests without a token may hold; by default half."""
    max_stream_sessions: int = attrs.field()
    """``exec``/``attach``/``portforward`` sessions open at once (each holds a worker); by default
    a quarter of the workers."""
    tls_cert_file: str | None = None
    """With ``tls_private_key_file``: serve HTTPS with this certificate (chain), PEM."""
    tls_private_key_file: str | None = None

    @max_anonymous_follows.default
    def _half_of_the_follows(self) -> int:
        return self.max_follow_streams // 2

    @max_watches.default
    @max_stream_sessions.default
    def _quarter_of_the_workers(self) -> int:
        return max(1, self.workers // 4)

    @max_anonymous_watches.default
    def _half_of_the_watches(self) -> int:
        return self.max_watches // 2

    def __attrs_post_init__(self) -> None:
        if (self.tls_cert_file is None) != (self.tls_private_key_file is None):
            raise ValueError("TLS needs both tls_cert_file and tls_private_key_file")
        if self.enable_exec and not self.exec_token:
            raise ValueError("exec needs a token: set exec_token when enable_exec is true")
        if min(self.max_follow_streams, self.max_watches, self.max_stream_sessions) < 1 or (
            self.max_follow_streams + self.max_watches + self.max_stream_sessions >= self.workers
        ):
            raise ValueError(
                "max_follow_streams, max_watches and max_stream_sessions must each be at least 1"
                " and, together, leave workers free for other requests"
            )
        if not 0 <= self.max_anonymous_follows < self.max_follow_streams:
            raise ValueError("max_anonymous_follows must leave follow streams to token holders")
        if not 0 <= self.max_anonymous_watches < self.max_watches:
            raise ValueError("max_anonymous_watches must leave watches to token holders")
        if not 0 <= self.health_connections < self.max_connections:
            raise ValueError("health_connections must leave connections for other requests")
        if self.max_connections_per_client < 1:
            raise ValueError("max_connections_per_client must be at least 1")
