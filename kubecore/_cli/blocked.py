"""What ends ``--once`` before its deadline: pods blocked on an engine error a retry will not fix.

The agent retries a pod whose sandbox could not be created at every sync, and only says why in a
``FailedCreatePodSandBox`` event (a message). ``--once`` wraps the runtime and the puller to
keep the errors themselves, so that it can tell a refused request or a missing image (the next
attempt meets it again) from an engine that is slow, restarting or busy (the next may pass).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kubecore._contract.bases import PullerWrapper
from kubecore._contract.errors import (
    ContainerRuntimeError,
    ImageNotFound,
    ImagePullError,
    InvalidConfig,
)
from kubecore._contract.protocols import ContainerRuntime, Puller
from kubecore._contract.values import Event, EventType, PullProgress, RegistryAuth, SandboxConfig
from kubecore._observability.events import EventReason

SANDBOX_FAILED = EventReason.FAILED_CREATE_POD_SANDBOX
_SANDBOX_PREFIX = "Failed to create pod sandbox: "

_PERMANENT = (InvalidConfig, ImageNotFound, ImagePullError)


def retry_cannot_fix(error: BaseException) -> bool:
    """An error the next attempt meets again: the engine refused the request as invalid, or an
    image is missing and cannot be pulled. An unreachable, slow or conflicting engine, and any
    other engine error, may pass."""
    return isinstance(error, _PERMANENT)


class PermanentErrors:
    """The errors a retry will not fix that the runtime or the puller raised, by their message
    (as the agent's events quote them). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_message: dict[str, ContainerRuntimeError] = {}

    def saw(self, error: ContainerRuntimeError) -> None:
        if retry_cannot_fix(error):
            with self._lock:
                self._by_message[str(error)] = error

    def get(self, message: str) -> ContainerRuntimeError | None:
        with self._lock:
            return self._by_message.get(message)

    def runtime(self, inner: ContainerRuntime) -> ContainerRuntime:
        """``inner``, keeping the errors its ``run_sandbox`` raises."""
        return _WatchedRuntime(inner, self)

    def puller(self, inner: Puller) -> Puller:
        """``inner``, keeping the errors its pulls raise."""
        return _WatchedPuller(inner, self)


class _WatchedRuntime:
    """Every call goes to ``inner``; the errors of ``run_sandbox`` are kept on the way."""

    def __init__(self, inner: ContainerRuntime, errors: PermanentErrors) -> None:
        self._inner = inner
        self._errors = errors

    def run_sandbox(self, config: SandboxConfig) -> str:
        try:
            return self._inner.run_sandbox(config)
        except ContainerRuntimeError as error:
            self._errors.saw(error)
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _WatchedPuller(PullerWrapper):
    def __init__(self, inner: Puller, errors: PermanentErrors) -> None:
        super().__init__(inner)
        self._errors = errors

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        try:
            return self.inner.pull(image, auth, progress)
        except ContainerRuntimeError as error:
            self._errors.saw(error)
            raise


def blocked_reason(events: Sequence[Event], errors: PermanentErrors) -> str:
    """Why a pod cannot start until something outside changes ('' if it may still): its newest
    event (oldest first in ``events``) says its sandbox could not be created, for an error a
    retry will not fix."""
    if not events or events[-1].reason != SANDBOX_FAILED:
        return ""
    newest = events[-1]
    error = errors.get(newest.message.removeprefix(_SANDBOX_PREFIX))
    if error is None:
        return ""
    return f"{SANDBOX_FAILED}: {newest.message}"


def newest_warning(events: Iterable[Event]) -> str:
    """The newest Warning event as ``Reason: message`` ('' if there is none): the cause a pod
    that did not settle is reported with."""
    warnings = [e for e in events if e.type is EventType.WARNING]
    return f"{warnings[-1].reason}: {warnings[-1].message}" if warnings else ""
