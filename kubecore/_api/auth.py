"""Who may use the node's Kubernetes API: every write, and every read when the server is not
bound to a loopback address, needs the bearer token of ``ApiServerConfig.token_file``; no token or
a wrong one answers 401 (v1 ``Status``), as the API server answers a missing or invalid bearer
token (``kubecore._http.rules.require_bearer``)."""

from __future__ import annotations

import ipaddress

from kubecore._http.rules import Credentials, check_bearer, require_bearer

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


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


def unauthorized_message(method: str, has_token: bool, tls: bool) -> str:
    what = "writes" if method in WRITE_METHODS else "reads on a non-loopback address"
    message = f"Unauthorized: {what} need a bearer token"
    if not has_token:
        return message + "; start the agent with --api-token-file"
    if not tls:
        # client-go sends no bearer token over plain HTTP: the node must serve HTTPS.
        return message + (
            "; kubectl sends its token only over HTTPS: start the agent with --tls-cert-file "
            "and --tls-private-key-file and use a kubeconfig with the CA and the token"
        )
    return message


class Gate:
    """The API's token check: reads pass without one when ``anonymous_reads`` (loopback)."""

    def __init__(self, token: str | None, *, anonymous_reads: bool) -> None:
        self._token = token
        self._anonymous_reads = anonymous_reads

    @property
    def has_token(self) -> bool:
        """Whether a token is configured at all."""
        return self._token is not None

    def authenticated(self, header: str, method: str) -> bool:
        """Whether a request with this ``Authorization`` header passes ``authenticate``."""
        if method not in WRITE_METHODS and self._anonymous_reads:
            return True
        return check_bearer(header, self._token) is Credentials.VALID

    def require_token(self, header: str, missing: str) -> None:
        """The 401 unless ``header`` carries the API's token (``missing``: why one is needed)."""
        require_bearer(header, self._token, missing)

    def authenticate(self, header: str, method: str, tls: bool) -> None:
        """The 401 for a request that needs the token and does not carry it."""
        if method not in WRITE_METHODS and self._anonymous_reads:
            return
        self.require_token(header, unauthorized_message(method, self._token is not None, tls))
