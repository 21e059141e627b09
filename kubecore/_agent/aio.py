"""The agent's async face (``kubecore.aio``): the same ``Kubelet``, awaited from asyncio or trio.

Nothing here decides anything: every call is the ``Kubelet``'s own, run on a worker thread where
it may block (start, stop, a pass), called directly where it only touches memory (``set_pods``,
``pods``). Changes come from the same subscriptions (``Kubelet.subscribe``), read on a worker
thread a batch at a time, so an ``async for`` costs one thread hop per batch, not per change.
It runs on anyio, so asyncio and trio programs use it alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import anyio
import anyio.to_thread

from kubecore._agent.changes import DEFAULT_QUEUE, Change, ChangeSubscription
from kubecore._agent.kubelet import Kubelet
from kubecore._agent.sync_pass import SyncReport
from kubecore._contract.errors import SubscriptionClosed
from kubecore._model.v1 import Pod

_WAIT_SECONDS = 0.5
"""How long one worker-thread read of a subscription waits (a cancelled read lingers no more)."""
_BATCH = 256


def _next_batch(subscription: ChangeSubscription) -> list[Change] | None:
    """The changes waiting now, or the first to come within ``_WAIT_SECONDS`` with the rest
    queued behind it: [] when none came, None once the subscription is closed."""
    try:
        first = subscription.get(_WAIT_SECONDS)
        if first is None:
            return []
        batch = [first]
        while len(batch) < _BATCH and (more := subscription.get(0)) is not None:
            batch.append(more)
        return batch
    except SubscriptionClosed:
        return None


class AsyncKubelet:
    """A ``Kubelet`` for async programs: ``async with AsyncKubelet(kubelet)`` starts its loop
    and stops it at the end (containers keep running, as ``Kubelet.stop`` leaves them)."""

    def __init__(self, kubelet: Kubelet) -> None:
        self.kubelet = kubelet
        """The agent itself, for everything that has no async form."""

    @classmethod
    def from_bundle(cls, bundle: Any, **kwargs: Any) -> AsyncKubelet:
        """An agent on a loaded runtime plugin (``Kubelet.from_bundle``)."""
        return cls(Kubelet.from_bundle(bundle, **kwargs))

    async def start(self) -> None:
        """Start the agent's background loop (``Kubelet.start``)."""
        await anyio.to_thread.run_sync(self.kubelet.start)

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop (``Kubelet.stop``); containers keep running."""
        await anyio.to_thread.run_sync(self.kubelet.stop, timeout)

    async def sync(self) -> SyncReport:
        """One full pass (``Kubelet.sync``)."""
        return await anyio.to_thread.run_sync(self.kubelet.sync)

    def set_pods(self, pods: Iterable[Pod], source: str = "api") -> None:
        """The desired pods of ``source`` (``Kubelet.set_pods``: it only queues them)."""
        self.kubelet.set_pods(pods, source=source)

    def pods(self) -> list[Pod]:
        """The node's pods with their status (``Kubelet.pods``: a read of memory)."""
        return self.kubelet.pods()

    async def changes(
        self,
        *,
        pods: bool = True,
        events: bool = True,
        initial: bool = True,
        maxsize: int = DEFAULT_QUEUE,
    ) -> AsyncIterator[Change]:
        """The changes of ``Kubelet.subscribe``, as an async iterator; leaving the loop (or
        closing the agent) closes the subscription."""
        subscription = self.kubelet.subscribe(
            pods=pods, events=events, initial=initial, maxsize=maxsize
        )
        try:
            while (batch := await anyio.to_thread.run_sync(
                _next_batch, subscription, abandon_on_cancel=True
            )) is not None:  # fmt: skip
                for change in batch:
                    yield change
        finally:
            subscription.close()

    async def wait_for(
        self, predicate: Callable[[list[Pod]], bool], timeout: float = 60.0
    ) -> list[Pod]:
        """Wait until ``predicate(pods)`` holds for the node's pods (``Kubelet.pods``), looked
        at now and after each change of a pod; the pods it held for. Raises ``TimeoutError``
        after ``timeout`` seconds (or when the agent closes first)."""
        subscription = self.kubelet.subscribe(events=False, initial=False)
        try:
            with anyio.fail_after(timeout):
                while not predicate(current := self.pods()):
                    batch = await anyio.to_thread.run_sync(
                        _next_batch, subscription, abandon_on_cancel=True
                    )
                    if batch is None:
                        raise TimeoutError("the agent closed before the condition held")
                return current
        finally:
            subscription.close()

    async def __aenter__(self) -> AsyncKubelet:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()
