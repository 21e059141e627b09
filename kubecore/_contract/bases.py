"""Bases a plugin builds on: ``RuntimeBase`` derives six of ``ContainerRuntime``'s calls from
``snapshot``, ``PullerWrapper`` forwards every ``Puller`` call to the puller it wraps.

Each of their methods carries the contract text of the protocol's method of the same name, so
that ``help()`` on a plugin's class (whose methods inherit these docstrings) says what each
method must do; the API reference shows the same text (``scripts/docgen/griffe_contract.py``)."""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator
from typing import Any

from kubecore._contract.errors import ContainerNotFound, SandboxNotFound
from kubecore._contract.protocols import ContainerRuntime, Puller, Subscription
from kubecore._contract.values import (
    ContainerConfig,
    ContainerStats,
    ExecResult,
    Image,
    ImageFsUsage,
    PullProgress,
    RegistryAuth,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeVersion,
    SandboxConfig,
)


class RuntimeBase(abc.ABC):
    """A base for a ``ContainerRuntime`` plugin: write 12 methods, inherit the other 6.

    A plugin must write these 12 methods (abstract here, so a subclass that misses one cannot be
    instantiated, and the error names it):

    ``version``, ``run_sandbox``, ``stop_sandbox``, ``remove_sandbox``, ``create_container``,
    ``start_container``, ``stop_container``, ``remove_container``, ``snapshot``, ``exec_sync``,
    ``logs``, ``close``.

    Derived, and overridden only where the engine answers faster or knows more:

    * ``list_sandboxes``, ``list_containers``: the ``snapshot``'s objects;
    * ``sandbox_status``, ``container_status``: the object with that id in the ``snapshot``, else
      ``SandboxNotFound`` / ``ContainerNotFound`` (so an id that ``snapshot`` does not show, being
      unmanaged, is not found either);
    * ``watch_events``: None, "no event stream" (the agent then relies on its relists);
    * ``container_stats``: empty (the runtime cannot tell).

    The image service (``Puller``: ``pull``, ``image_status``, ``list_images``, ``remove_image``,
    ``image_fs_usage``) is a separate object; a plugin writes its 5 methods too.
    """

    # -- what a plugin writes (see ``ContainerRuntime`` for each contract) ----------------

    @abc.abstractmethod
    def version(self) -> RuntimeVersion: ...

    @abc.abstractmethod
    def run_sandbox(self, config: SandboxConfig) -> str: ...

    @abc.abstractmethod
    def stop_sandbox(self, sandbox_id: str) -> None: ...

    @abc.abstractmethod
    def remove_sandbox(self, sandbox_id: str) -> None: ...

    @abc.abstractmethod
    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str: ...

    @abc.abstractmethod
    def start_container(self, container_id: str) -> None: ...

    @abc.abstractmethod
    def stop_container(self, container_id: str, timeout: float) -> None: ...

    @abc.abstractmethod
    def remove_container(self, container_id: str) -> None: ...

    @abc.abstractmethod
    def snapshot(self) -> RuntimeSnapshot: ...

    @abc.abstractmethod
    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult: ...

    @abc.abstractmethod
    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    # -- derived ---------------------------------------------------------------------------

    def list_sandboxes(self) -> list[RuntimeSandbox]:
        return list(self.snapshot().sandboxes)

    def list_containers(self) -> list[RuntimeContainer]:
        return list(self.snapshot().containers)

    def sandbox_status(self, sandbox_id: str) -> RuntimeSandbox:
        found = next((s for s in self.snapshot().sandboxes if s.id == sandbox_id), None)
        if found is None:
            raise SandboxNotFound(sandbox_id)
        return found

    def container_status(self, container_id: str) -> RuntimeContainer:
        found = next((c for c in self.snapshot().containers if c.id == container_id), None)
        if found is None:
            raise ContainerNotFound(container_id)
        return found

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> Subscription | None:
        return None

    def container_stats(self) -> list[ContainerStats]:
        return []


class PullerWrapper:
    """Base for a ``Puller`` that wraps another: every call goes to ``inner`` unless a subclass
    overrides it (credentials, progress reporting, ...)."""

    def __init__(self, inner: Puller) -> None:
        self.inner = inner

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        return self.inner.pull(image, auth, progress)

    def image_status(self, image: str) -> Image | None:
        return self.inner.image_status(image)

    def list_images(self) -> list[Image]:
        return self.inner.list_images()

    def remove_image(self, image: str) -> None:
        self.inner.remove_image(image)

    def image_fs_usage(self) -> ImageFsUsage | None:
        return self.inner.image_fs_usage()


CONTRACTS: dict[type, Any] = {RuntimeBase: ContainerRuntime, PullerWrapper: Puller}
"""Each base and the protocol whose contract its methods carry."""


def _take_the_contract_docs() -> None:
    for base, protocol in CONTRACTS.items():
        for name, member in vars(base).items():
            contract = getattr(protocol, name, None)
            if callable(member) and not member.__doc__ and contract is not None:
                member.__doc__ = contract.__doc__


_take_the_contract_docs()
