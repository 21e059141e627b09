"""The failures the node's Kubernetes API answers with: a v1 ``Status`` given Kubernetes' reason
(``NotFound``, ``AlreadyExists``, ...) and the details kubectl reads from it."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from kubecore._apimachinery.rules import HTTPError


class ApiError(HTTPError):
    """An ``HTTPError`` given Kubernetes' reason first (``NotFound``, ``AlreadyExists``)."""

    def __init__(
        self,
        code: HTTPStatus,
        reason: str,
        message: str,
        *,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(code, message, headers, reason=reason, details=details)


def bad_request(message: str) -> ApiError:
    return ApiError(HTTPStatus.BAD_REQUEST, "BadRequest", message)


def not_found(resource: str, name: str) -> ApiError:
    return ApiError(
        HTTPStatus.NOT_FOUND,
        "NotFound",
        f'{resource} "{name}" not found',
        details={"name": name, "kind": resource},
    )


def not_allowed(message: str) -> ApiError:
    return ApiError(HTTPStatus.METHOD_NOT_ALLOWED, "MethodNotAllowed", message)


def already_exists(resource: str, name: str) -> ApiError:
    return ApiError(
        HTTPStatus.CONFLICT,
        "AlreadyExists",
        f'{resource} "{name}" already exists',
        details={"name": name, "kind": resource},
    )


def forbidden(resource: str, name: str, why: str) -> ApiError:
    """A write the API does not make (``why`` follows the object's name)."""
    return ApiError(
        HTTPStatus.FORBIDDEN,
        "Forbidden",
        f'{resource} "{name}" is forbidden: {why}',
        details={"name": name, "kind": resource},
    )


def not_stored(kind: str, name: str, error: OSError | ValueError) -> ApiError:
    """A change the API's store could not keep: it is not applied either."""
    why = (error.strerror if isinstance(error, OSError) else None) or str(error)
    return ApiError(
        HTTPStatus.INTERNAL_SERVER_ERROR,
        "InternalError",
        f'{kind} "{name}" was not changed: the API\'s store {why}',
        details={"name": name, "kind": kind},
    )
