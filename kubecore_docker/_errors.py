"""The one place where docker-py and requests exceptions become kubecore errors."""

from __future__ import annotations

import enum
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from kubecore import ContainerRuntimeError
from kubecore.runtime import (
    Conflict,
    ContainerNotFound,
    ImageNotFound,
    ImagePullError,
    InvalidConfig,
    NotFound,
    RuntimeTimeout,
    RuntimeUnavailable,
    SandboxNotFound,
)


class Subject(enum.Enum):
    """What a call is about: decides which ``NotFound`` a 404 becomes."""

    CONTAINER = "container"
    SANDBOX = "sandbox"
    IMAGE = "image"
    PULL = "pull"
    ENGINE = "engine"


_NOT_FOUND: dict[Subject, type[ContainerRuntimeError]] = {
    Subject.CONTAINER: ContainerNotFound,
    Subject.SANDBOX: SandboxNotFound,
    Subject.IMAGE: ImageNotFound,
    Subject.PULL: ImagePullError,
    Subject.ENGINE: NotFound,
}


def _api_error_message(error: BaseException) -> str:
    explanation = getattr(error, "explanation", None)
    if explanation:
        return str(explanation)
    return str(error)


def translate(error: BaseException, subject: Subject) -> ContainerRuntimeError | None:
    """The kubecore error for an engine-library exception, or None if it is not one."""
    import docker.errors
    import requests.exceptions
    import urllib3.exceptions

    if isinstance(error, ContainerRuntimeError):
        return error
    if isinstance(error, docker.errors.APIError):
        status = error.status_code
        message = _api_error_message(error)
        if subject is Subject.PULL:
            return ImagePullError(message)
        if isinstance(error, docker.errors.ImageNotFound):
            return ImageNotFound(message)
        if status == 404:
            return _NOT_FOUND[subject](message)
        if status == 409:
            return Conflict(message)
        if status == 400:
            return InvalidConfig(message)
        return ContainerRuntimeError(f"engine error {status}: {message}")
    # A connect timeout means the engine is not there; a read timeout means it is slow.
    if isinstance(error, requests.exceptions.ConnectTimeout):
        return RuntimeUnavailable(f"cannot reach the Docker engine: {error}")
    if isinstance(
        error,
        requests.exceptions.Timeout | urllib3.exceptions.TimeoutError | socket.timeout,
    ):
        return RuntimeTimeout(f"the Docker engine did not answer in time: {error}")
    if isinstance(
        error,
        requests.exceptions.ConnectionError
        | urllib3.exceptions.ProtocolError
        | urllib3.exceptions.HTTPError
        | ConnectionError,
    ):
        return RuntimeUnavailable(f"cannot reach the Docker engine: {error}")
    if isinstance(error, requests.exceptions.RequestException):
        return ContainerRuntimeError(f"request to the Docker engine failed: {error}")
    if isinstance(error, docker.errors.DockerException):
        text = str(error)
        if "Error while fetching server API version" in text or "Connection" in text:
            return RuntimeUnavailable(text)
        if subject is Subject.PULL:
            return ImagePullError(text)
        return ContainerRuntimeError(text)
    if isinstance(error, OSError):
        return RuntimeUnavailable(f"Docker engine connection failed: {error}")
    return None


def root_cause(error: BaseException) -> str:
    """The innermost OS error under a library exception (``No such file or directory``,
    ``Connection refused``), else the exception's own text."""
    seen: set[int] = set()
    found: OSError | None = None
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            found = current
        pending.extend(
            e
            for e in (current.__cause__, current.__context__, *current.args)
            if isinstance(e, BaseException)
        )
    if found is not None:
        return str(found.strerror)
    return str(error)


def raise_translated(error: BaseException, subject: Subject) -> NoReturn:
    mapped = translate(error, subject)
    if mapped is None:
        raise error
    if mapped is error:
        raise error
    raise mapped from error


@contextmanager
def engine_errors(subject: Subject = Subject.ENGINE) -> Iterator[None]:
    """Run a block of engine calls; any docker-py / requests / socket error leaves it translated."""
    try:
        yield
    except ContainerRuntimeError:
        raise
    except Exception as error:
        raise_translated(error, subject)


# How the engine refuses to start a container whose sandbox's namespaces are gone (moby's
# daemon/container_operations_unix.go): a stopped sandbox, or one whose /dev/shm mount was lost
# although it is listed as running (seen after the engine was killed and restarted).
_SANDBOX_JOIN_REFUSALS = (
    "can't join ipc of container",
    "cannot join network of a non running container",
    "cannot join pid of a non running container",
)


def cannot_join_sandbox(message: str) -> bool:
    """True if a start failed because the container could not join its sandbox's namespaces."""
    lowered = message.lower()
    return any(refusal in lowered for refusal in _SANDBOX_JOIN_REFUSALS)
