"""The rules every HTTP endpoint of the agent shares: the kubelet API (``kubecore._http.server``),
the Kubernetes API (``kubecore._api``) and the bounded server under both
(``kubecore._http.serving``).

* ``HTTPError`` and ``status_object``: the one v1 ``Status`` failure body, with Kubernetes' reason
  for its code (``reason_for``); ``error_for`` is the one mapping from kubecore's errors to an
  HTTP status and reason.
* ``check_bearer`` / ``require_bearer``: the one bearer-token check (one header parsing, a
  constant-time comparison); a missing token and a wrong one are both 401, as the API server and
  the kubelet answer them (403 is for a request the credentials do not allow).
* ``query_flag``, ``query_int``, ``query_seconds``: query-string parameters read as the API server
  reads them; a value outside what it accepts is a ``BadParameter`` (400) naming the parameter.
"""

from __future__ import annotations

import enum
import hmac
import json
import re
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from kubecore._contract.errors import (
    BadParameter,
    KubecoreError,
    LogRequestError,
    NotFound,
    RuntimeTimeout,
    ValidationError,
)

# --- v1 Status ------------------------------------------------------------------------------

_REASONS = {
    HTTPStatus.BAD_REQUEST: "BadRequest",
    HTTPStatus.UNAUTHORIZED: "Unauthorized",
    HTTPStatus.FORBIDDEN: "Forbidden",
    HTTPStatus.NOT_FOUND: "NotFound",
    HTTPStatus.METHOD_NOT_ALLOWED: "MethodNotAllowed",
    HTTPStatus.NOT_ACCEPTABLE: "NotAcceptable",
    HTTPStatus.CONFLICT: "Conflict",
    HTTPStatus.GONE: "Gone",
    HTTPStatus.REQUEST_ENTITY_TOO_LARGE: "RequestEntityTooLarge",
    HTTPStatus.UNSUPPORTED_MEDIA_TYPE: "UnsupportedMediaType",
    HTTPStatus.UNPROCESSABLE_ENTITY: "Invalid",
    HTTPStatus.TOO_MANY_REQUESTS: "TooManyRequests",
    HTTPStatus.SERVICE_UNAVAILABLE: "ServiceUnavailable",
    HTTPStatus.GATEWAY_TIMEOUT: "Timeout",
}
"""apimachinery's ``StatusReason`` for each code it names one for."""


def reason_for(code: HTTPStatus) -> str:
    """Kubernetes' reason for ``code`` (``metav1.StatusReason``): ``InternalError`` for any other
    5xx, as client-go reads one; else the code's phrase in one word (``LengthRequired``)."""
    known = _REASONS.get(code)
    if known is not None:
        return known
    if code >= 500:
        return "InternalError"
    return "".join(part.capitalize() for part in code.phrase.split())


def status_object(
    code: HTTPStatus,
    message: str,
    reason: str | None = None,
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A v1 ``Status`` failure, as Kubernetes answers errors."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason or reason_for(code),
        "code": int(code),
    }
    if details:
        body["details"] = dict(details)
    return body


def status_body(code: HTTPStatus, message: str, reason: str | None = None) -> bytes:
    """``status_object`` as the JSON bytes of a response body."""
    return json.dumps(status_object(code, message, reason)).encode() + b"\n"


class HTTPError(Exception):
    """An answer other than success: a v1 ``Status`` with ``code`` and ``reason`` (by default
    ``reason_for(code)``), ``details`` (``StatusDetails``) and extra response headers."""

    def __init__(
        self,
        code: HTTPStatus,
        message: str,
        headers: Mapping[str, str] | None = None,
        *,
        reason: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or reason_for(code)
        self.details = dict(details or {})
        self.headers = dict(headers or {})

    def status(self) -> dict[str, Any]:
        return status_object(self.code, self.message, self.reason, self.details)

    def body(self) -> bytes:
        return json.dumps(self.status()).encode() + b"\n"


def invalid(kind: str, name: str, error: ValidationError) -> HTTPError:
    """A 422 ``Invalid`` naming every problem of ``error``, as the API server refuses an object."""
    causes = [{"field": p.path, "message": p.message} for p in error.problems]
    problems = "; ".join(str(p) for p in error.problems)
    return HTTPError(
        HTTPStatus.UNPROCESSABLE_ENTITY,
        f'{kind} "{name}" is invalid: {problems}',
        details={"name": name, "kind": kind, "causes": causes},
    )


def error_for(error: KubecoreError, *, kind: str = "", name: str = "") -> HTTPError:
    """The answer to a kubecore error raised while serving a request: a bad parameter or a log
    query the node cannot answer is 400, a manifest's problems 422 (``kind`` and ``name`` name
    the object), a missing object 404, a runtime call that timed out 504, any other failure of
    the runtime behind the agent 502."""
    message = str(error)
    if isinstance(error, BadParameter | LogRequestError):
        return HTTPError(HTTPStatus.BAD_REQUEST, message)
    if isinstance(error, ValidationError):
        return invalid(kind, name, error)
    if isinstance(error, NotFound):
        return HTTPError(HTTPStatus.NOT_FOUND, message)
    if isinstance(error, RuntimeTimeout):
        return HTTPError(HTTPStatus.GATEWAY_TIMEOUT, message)
    return HTTPError(HTTPStatus.BAD_GATEWAY, message)


# --- bearer tokens --------------------------------------------------------------------------

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="kubecore"'}
"""The header every 401 carries."""


class Credentials(enum.Enum):
    MISSING = "a bearer token is required"
    INVALID = "the bearer token is not valid"
    VALID = ""


def check_bearer(header: str, token: str | None) -> Credentials:
    """What an ``Authorization`` header carries against ``token`` (None or "": no token is
    valid): no bearer token at all (no header, another scheme, an empty token), a wrong one or
    the right one. The comparison takes the same time wherever the tokens differ."""
    scheme, _, given = header.partition(" ")
    given = given.strip()
    if scheme.lower() != "bearer" or not given:
        return Credentials.MISSING
    if not token or not hmac.compare_digest(given.encode(), token.encode()):
        return Credentials.INVALID
    return Credentials.VALID


def require_bearer(header: str, token: str | None, missing: str = "") -> None:
    """Raise the 401 (with the ``Bearer`` challenge) unless ``header`` carries ``token``;
    ``missing`` says what the request needs a token for, when it has none."""
    found = check_bearer(header, token)
    if found is Credentials.VALID:
        return
    message = missing if found is Credentials.MISSING and missing else found.value
    raise HTTPError(HTTPStatus.UNAUTHORIZED, message, CHALLENGE)


# --- query-string parameters ----------------------------------------------------------------

Query = Mapping[str, Sequence[str]]

_TRUE = frozenset({"", "1", "true"})
_FALSE = frozenset({"0", "false"})
_INTEGER = re.compile(r"[+-]?0*[0-9]{1,19}")
_INT64 = 2**63


def query_value(query: Query, name: str) -> str | None:
    """The value of parameter ``name`` (the last one, when it is repeated), or None."""
    values = query.get(name)
    return values[-1] if values else None


def query_flag(query: Query, name: str) -> bool:
    """A boolean parameter: absent, ``0`` or ``false`` is false; present bare (``?follow``),
    ``1`` or ``true`` is true (any case, as apimachinery reads them). The API server reads any
    other value as true; it is refused here rather than guessed at."""
    raw = query_value(query, name)
    if raw is None:
        return False
    value = raw.lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise BadParameter(f"{name}: must be true or false, got {raw!r}")


def query_int(query: Query, name: str, minimum: int = 0) -> int | None:
    """An integer parameter, as Go's ``strconv.ParseInt`` reads it (an optional sign, decimal
    digits, 64 bits), at least ``minimum``; None when absent or empty."""
    raw = query_value(query, name)
    if not raw:
        return None
    if not _INTEGER.fullmatch(raw) or not -_INT64 <= int(raw) < _INT64:
        raise BadParameter(f"{name}: must be an integer, got {raw!r}")
    value = int(raw)
    if value < minimum:
        raise BadParameter(f"{name}: must be >= {minimum}, got {value}")
    return value


def query_seconds(query: Query, name: str, default: float, maximum: float) -> float:
    """A duration in seconds (a decimal number, ``2.5``), more than 0 and at most ``maximum``;
    ``default`` when absent."""
    raw = query_value(query, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise BadParameter(f"{name}: must be a number of seconds, got {raw!r}") from None
    if not 0 < value <= maximum:
        raise BadParameter(f"{name}: must be in (0, {maximum:g}]")
    return value
