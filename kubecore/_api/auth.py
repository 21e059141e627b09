"""Who may use the agent's HTTP port, the one home of that rule for both the node's Kubernetes
API and the kubelet endpoints (``/pods``, ``/containerLogs``, ``/logs/``, ``/stats``,
``/metrics``).

* With a token (``ApiServerConfig.token_file``) every request needs it, reads too, on loopback
  too: only ``/healthz``, ``/livez`` and ``/readyz`` stay open (the kubelet's healthz port). An
  explicit ``anonymous_reads`` (``--anonymous-reads``) lets reads of the read-only endpoints pass
  without it; writes, and exec, attach and port-forward, always need a token. No token or a
  wrong one is a 401 (v1 ``Status``), as the API server answers
  (``kubecore._apimachinery.rules.require_bearer``). The check runs before anything of the
  request is parsed (its query, its body).
* Without a token (loopback only: ``attach_api`` refuses another address) reads pass and writes
  are refused.
* ``host_allowed``: a plain-HTTP agent answers only requests whose ``Host`` names the node
  (its address, its name, ``localhost``, a loopback address), so that a web page cannot reach
  it through a name it rebinds to 127.0.0.1 (DNS rebinding). TLS agents are exempt: the
  rebound name does not match their certificate, and they require a token.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from kubecore._apimachinery.rules import Credentials, check_bearer, require_bearer

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
OPEN_PATHS = frozenset({"healthz", "livez", "readyz"})
"""The first path segments anyone may read, token or not."""
OWN_TOKEN_PATHS = frozenset({"run", "exec", "attach", "portForward"})
"""The kubelet endpoints that check the exec token themselves (``--exec-token-file``)."""


def read_token_file(path: str) -> str:
    """The token in ``path`` (surrounding whitespace removed); a ``ValueError`` if empty."""
    with open(path, encoding="utf-8") as handle:
        token = handle.read().strip()
    if not token:
        raise ValueError(f"the token file {path} is empty")
    return token


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The host of a ``Host`` header, without its port or an IPv6 literal's brackets,
    lowercased."""
    host = header.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def host_allowed(header: str, names: Iterable[str]) -> bool:
    """Whether a request's ``Host`` names the node: one of ``names`` (its addresses, its node
    name), ``localhost`` or a loopback address. A missing ``Host`` (HTTP/1.0) passes: a browser
    always sends one."""
    if not header:
        return True
    host = host_name(header)
    return is_loopback(host) or host in {host_name(name) for name in names if name}


def unauthorized_message(method: str, has_token: bool, tls: bool) -> str:
    what = "writes" if method in WRITE_METHODS else "reads"
    message = f"Unauthorized: {what} need a bearer token"
    if not has_token:
        return message + "; start the agent with --api-token-file"
    if not tls:
        # client-go sends no bearer token over plain HTTP: the node must serve HTTPS.
        return message + (
            "; kubectl sends its token only over HTTPS: start the agent with --tls-cert-file "
            "and --tls-private-key-file and use a kubeconfig with the CA and the token"
            " (or --anonymous-reads, for reads)"
        )
    if method not in WRITE_METHODS:
        return message + " (or start the agent with --anonymous-reads)"
    return message


class Gate:
    """The token check of every endpoint: reads pass without the token when ``anonymous_reads``
    (no token configured, or ``--anonymous-reads``)."""

    def __init__(self, token: str | None, *, anonymous_reads: bool) -> None:
        self._token = token
        self._anonymous_reads = anonymous_reads or token is None

    @property
    def has_token(self) -> bool:
        """Whether a token is configured at all."""
        return self._token is not None

    @property
    def anonymous_reads(self) -> bool:
        """Whether reads pass without a token."""
        return self._anonymous_reads

    def _open(self, head: str, method: str) -> bool:
        if head in OPEN_PATHS or head in OWN_TOKEN_PATHS:
            return True
        return method not in WRITE_METHODS and self._anonymous_reads

    def authenticated(self, header: str, method: str, head: str = "") -> bool:
        """Whether a request for ``/<head>/...`` with this ``Authorization`` header passes
        ``authenticate``."""
        return self._open(head, method) or check_bearer(header, self._token) is Credentials.VALID

    def require_token(self, header: str, missing: str) -> None:
        """The 401 unless ``header`` carries the token (``missing``: why one is needed)."""
        require_bearer(header, self._token, missing)

    def authenticate(self, header: str, method: str, tls: bool, head: str = "") -> None:
        """The 401 for a request for ``/<head>/...`` that needs the token and does not carry
        it."""
        if self._open(head, method):
            return
        self.require_token(header, unauthorized_message(method, self._token is not None, tls))


OPEN_GATE = Gate(None, anonymous_reads=True)
"""The gate of a kubelet server without the Kubernetes API: no token, reads open (writes there
check their own token)."""
