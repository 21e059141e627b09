"""The one place where gRPC status codes of a CRI runtime become kubecore errors."""

from __future__ import annotations

import enum
import re
from typing import Any, NoReturn

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

NOT_SUPPORTED = "not supported by the cri runtime yet"
"""What a call the ``cri`` runtime does not offer yet says (the error names the call)."""


class Subject(enum.Enum):
    """What a call is about: decides which ``NotFound`` a NOT_FOUND becomes."""

    CONTAINER = "container"
    SANDBOX = "sandbox"
    IMAGE = "image"
    PULL = "pull"
    RUNTIME = "runtime"


_NOT_FOUND: dict[Subject, type[ContainerRuntimeError]] = {
    Subject.CONTAINER: ContainerNotFound,
    Subject.SANDBOX: SandboxNotFound,
    Subject.IMAGE: ImageNotFound,
    Subject.PULL: ImagePullError,
    Subject.RUNTIME: NotFound,
}

# gRPC status code names (``grpc.StatusCode.X.name``) and the kubecore error each becomes.
_BY_CODE: dict[str, type[ContainerRuntimeError]] = {
    "ALREADY_EXISTS": Conflict,
    "FAILED_PRECONDITION": Conflict,
    "ABORTED": Conflict,
    "INVALID_ARGUMENT": InvalidConfig,
    "OUT_OF_RANGE": InvalidConfig,
    "UNAVAILABLE": RuntimeUnavailable,
    "DEADLINE_EXCEEDED": RuntimeTimeout,
    "CANCELLED": RuntimeUnavailable,
}

RETRIED_CODES = frozenset({"UNAVAILABLE"})
"""Codes a call is retried on (the runtime restarting, a connection being made)."""


def status_code_name(error: BaseException) -> str:
    """The gRPC status code's name of an ``RpcError`` ('' for anything else)."""
    code = getattr(error, "code", None)
    if not callable(code):
        return ""
    try:
        value: Any = code()
    except Exception:
        return ""
    return str(getattr(value, "name", "") or "")


def _details(error: BaseException) -> str:
    details = getattr(error, "details", None)
    if callable(details):
        try:
            text = details()
        except Exception:
            text = None
        if text:
            return str(text)
    return str(error)


def translate(
    error: BaseException, subject: Subject, call: str = ""
) -> ContainerRuntimeError | None:
    """The kubecore error for a gRPC error of a CRI call, or None if it is not one."""
    if isinstance(error, ContainerRuntimeError):
        return error
    code = status_code_name(error)
    if not code:
        return None
    where = f"{call}: " if call else ""
    message = f"{where}{_details(error)}"
    if code == "NOT_FOUND":
        return _NOT_FOUND[subject](message)
    if subject is Subject.PULL and code != "UNAVAILABLE" and code != "DEADLINE_EXCEEDED":
        return ImagePullError(message)
    if code == "UNIMPLEMENTED":
        return ContainerRuntimeError(f"{where}the CRI runtime does not implement this call")
    if code == "UNAVAILABLE":
        return RuntimeUnavailable(f"cannot reach the CRI runtime: {message}")
    if code == "DEADLINE_EXCEEDED":
        return RuntimeTimeout(f"the CRI runtime did not answer in time: {message}")
    kind = _BY_CODE.get(code, ContainerRuntimeError)
    if kind is ContainerRuntimeError:
        return ContainerRuntimeError(f"CRI error {code}: {message}")
    return kind(message)


def raise_translated(error: BaseException, subject: Subject, call: str = "") -> NoReturn:
    mapped = translate(error, subject, call)
    if mapped is None or mapped is error:
        raise error
    raise mapped from error


def config_not_supported(what: str) -> InvalidConfig:
    """The refusal of a config the ``cri`` runtime cannot apply yet (never run without it)."""
    return InvalidConfig(f"{what} is {NOT_SUPPORTED}")


# How containerd says a call could not use what it names (pkg/cri/server): an image reference
# that resolves to nothing, and a sandbox whose task (its namespaces' process) is gone.
_IMAGE_MISSING = ("failed to resolve image", "failed to get image")
_SANDBOX_GONE = ("sandbox container task", "no running task found", "is not running")


def image_missing(message: str) -> bool:
    """True if a NOT_FOUND of ``CreateContainer`` is about its image, not its sandbox."""
    lowered = message.lower()
    return any(phrase in lowered for phrase in _IMAGE_MISSING)


def sandbox_gone(message: str) -> bool:
    """True if a call failed because the container's sandbox is not running (stopped, or its
    process lost across a runtime restart): the agent then makes a new sandbox."""
    lowered = message.lower()
    return "sandbox" in lowered and any(phrase in lowered for phrase in _SANDBOX_GONE)


_RESERVED_FOR = re.compile(
    r'failed to reserve (?:sandbox|container) name .* is reserved for "([0-9a-f]+)"'
)


def reserved_for(message: str) -> str:
    """The id of the object that holds the name a ``RunPodSandbox`` or ``CreateContainer`` was
    refused for (containerd: ``failed to reserve ... name "x": name "x" is reserved for "id"``),
    '' when the refusal is about something else."""
    found = _RESERVED_FOR.search(message)
    return found.group(1) if found else ""
