"""The pod source of one node and the ConfigMap and Secret sources every node reads: lists and
watches of their key prefixes turned into ``PodUpdate`` values; and ``bind_pods``, which writes
pods under a node's prefix."""

from __future__ import annotations

import abc
import asyncio
import base64
import collections
import concurrent.futures
import logging
import os
import threading
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from kubecore import FieldError, Operation, Pod, PodUpdate, SourceProblem, ValidationError
from kubecore.manifest import SourceMemory, pod_to_dict, stamp_source
from kubecore.v1 import KubeObject
from kubecore_etcd._client import EtcdClient, EtcdUnavailable
from kubecore_etcd._documents import decode_object, decode_pod
from kubecore_etcd._encoding import encode_json
from kubecore_etcd._keys import (
    DEFAULT_PREFIX,
    OBJECT_RESOURCES,
    objects_prefix,
    pod_key,
    pods_prefix,
    split_key,
)

logger = logging.getLogger(__name__)

Item = TypeVar("Item")

ETCD_SOURCE = "etcd"
"""The name of the etcd pod source (what its pods' source annotation says)."""


class _EtcdWatch(abc.ABC, Generic[Item]):
    """The pods bound to one node: ``<prefix>/pods/<node>/<namespace>/<name>``.

    ``start()`` runs the watch on the client's loop: list the prefix and queue a ``SET`` with
    every good pod, then watch from the list's revision + 1 (nothing written in between is
    lost) and queue ``ADD`` / ``UPDATE`` / ``REMOVE`` per event. A watch that breaks (its member
    died) resumes on the next endpoint from the last revision seen + 1; when that revision was
    compacted away the source lists again (the ``SET`` reconciles whatever it missed). When no
    endpoint answers it queues ``NOT_READY`` once (the agent keeps every pod and deletes
    nothing) and retries with a back-off; when etcd answers again it queues a ``SET`` of the pods
    as they stand and the resumed watch (or the list) brings what changed meanwhile.
    A value that is not a good pod is reported (``problems``, keyed by its key, and logged) and
    the pod it held before, if any, stays; the other keys go on. With ``state_dir`` each key's
    last good value is remembered there (``SourceMemory``), so a value emptied or made garbage
    while the agent was down keeps its pod across a restart too (a blink); a key deleted, seen
    as a watch event or missing from a list, is the pod removed. ``poll`` never blocks.
    """

    what = "pod"

    def __init__(
        self,
        client: EtcdClient,
        node: str,
        key_prefix: str,
        *,
        name: str,
        backoff: float = 0.5,
        max_backoff: float = 10.0,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self._client = client
        self._memory = SourceMemory(state_dir, name) if state_dir is not None else None
        self._remembered: dict[str, bytes] | None = None
        """Each key's last good value, as remembered (None: not read yet)."""
        self._node = node
        self._prefix = key_prefix
        self._name = name
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._lock = threading.Lock()
        self._queue: collections.deque[PodUpdate] = collections.deque()
        self._pods: dict[str, Item] = {}
        self._problems: dict[str, SourceProblem] = {}
        self._listed = False
        self._not_ready = False
        self._revision = 0
        self._task: concurrent.futures.Future[Any] | None = None
        self._watch_client: Any = None
        """The aetcd client the watch runs on (failed over when its stream breaks)."""
        self.lists = 0
        """Lists made (the first one, then one per compaction or reconnection)."""

    @property
    def name(self) -> str:
        return self._name

    @property
    def node(self) -> str:
        return self._node

    @property
    def key_prefix(self) -> str:
        return self._prefix

    def _items(self) -> tuple[Item, ...]:
        with self._lock:
            return tuple(self._pods.values())

    @abc.abstractmethod
    def _update(self, op: Operation, items: tuple[Item, ...]) -> PodUpdate:
        """The update that says ``op`` of ``items``."""

    @abc.abstractmethod
    def _decode_value(self, key: str, value: bytes, namespace: str, name: str) -> Item:
        """The item stored at ``key``; raises ``ValidationError``."""

    @property
    def problems(self) -> tuple[SourceProblem, ...]:
        with self._lock:
            return tuple(self._problems.values())

    @property
    def ready(self) -> bool:
        """Listed, and etcd answered since."""
        with self._lock:
            return self._listed and not self._not_ready

    @property
    def revision(self) -> int:
        """The last revision seen (list or watch event)."""
        with self._lock:
            return self._revision

    def poll(self, now: float) -> PodUpdate | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def start(self) -> None:
        if self._task is None:
            self._task = self._client.spawn(self._run())

    def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            self._client.loop.call_soon_threadsafe(task.cancel)
            try:
                task.result(self._client.config.timeout)
            except (concurrent.futures.CancelledError, concurrent.futures.TimeoutError):
                pass
            except Exception:
                logger.debug("the etcd watch ended with an error", exc_info=True)

    # --- on the loop ------------------------------------------------------------------------

    async def _run(self) -> None:
        from aetcd.exceptions import RevisionCompactedError

        delay = self._backoff
        must_list = True
        while True:
            try:
                if must_list:
                    await self._relist()
                    must_list = False
                delay = self._backoff
                await self._watch(self.revision + 1)
                logger.info("etcd watch on %s closed; watching again", self._prefix)
            except RevisionCompactedError as error:
                logger.info(
                    "etcd watch on %s: revision compacted (%s); listing again", self._prefix, error
                )
                must_list = True
            except EtcdUnavailable as error:
                self._unreachable(error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._max_backoff)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                # The watch stream broke (its member went away): resume on the next endpoint.
                logger.info("etcd watch on %s failed (%r); watching again", self._prefix, error)
                await self._client.fail_over(self._watch_client)
                await asyncio.sleep(min(delay, 0.2))

    def _unreachable(self, error: Exception) -> None:
        with self._lock:
            if self._listed and not self._not_ready:
                self._not_ready = True
                reason = f"etcd is unreachable: {error}"
                self._queue.append(PodUpdate(Operation.NOT_READY, (), self._name, reason=reason))
                logger.warning(
                    "etcd is unreachable; keeping the pods of %s as they are: %s",
                    self._prefix,
                    error,
                )

    def _answering(self) -> None:
        """etcd answers again after ``NOT_READY``: the pods as they stand count as a report (the
        watch resumed from the last revision brings every change made meanwhile)."""
        with self._lock:
            if self._not_ready:
                self._not_ready = False
                self._queue.append(self._update(Operation.SET, tuple(self._pods.values())))
                logger.info("etcd answers again; watching %s", self._prefix)

    async def _relist(self) -> int:
        prefix = self._prefix.encode()

        async def op(client: Any) -> Any:
            return await client.get_prefix(prefix)

        reply = await self._client.call(op)
        revision = int(reply.header.revision)
        with self._lock:
            previous = self._pods
            remembered = self._recall()
            self._pods = {}
            self._problems = {}
            listed: set[str] = set()
            for kv in reply.kvs:
                key = kv.key.decode("utf-8", "replace")
                listed.add(key)
                item = self._decode(key, bytes(kv.value))
                if item is None:
                    item = previous.get(key) or self._last_good(key, remembered)
                    if item is not None:
                        logger.warning("etcd: keeping the last good %s of %s", self.what, key)
                if item is not None:
                    self._pods[key] = item
            for key in set(remembered) - listed:  # deleted: the pod goes
                self._forget(key)
            self._queue.append(self._update(Operation.SET, tuple(self._pods.values())))
            self._listed = True
            self._revision = revision
            self._not_ready = False
            self.lists += 1
        return revision

    async def _watch(self, start_revision: int) -> None:
        from aetcd.utils import prefix_range_end

        prefix = self._prefix.encode()

        async def op(client: Any) -> Any:
            self._watch_client = client
            return await client.watch(
                prefix, range_end=prefix_range_end(prefix), start_revision=start_revision
            )

        watch = await self._client.call(op)
        self._answering()
        try:
            async for event in watch:
                self._apply(
                    event.kind,
                    event.kv.key.decode("utf-8", "replace"),
                    bytes(event.kv.value),
                    int(event.kv.mod_revision),
                )
        finally:
            try:
                await watch.cancel()
            except Exception:
                logger.debug("cancelling the etcd watch failed", exc_info=True)

    def _apply(self, kind: str, key: str, value: bytes, revision: int) -> None:
        with self._lock:
            self._revision = max(self._revision, revision)
            old = self._pods.get(key)
            if kind == "DELETE":
                self._problems.pop(key, None)
                self._forget(key)
                if old is not None:
                    del self._pods[key]
                    self._queue.append(self._update(Operation.REMOVE, (old,)))
                return
            item = self._decode(key, value)
            if item is None or item == old:
                return
            self._pods[key] = item
            op = Operation.ADD if old is None else Operation.UPDATE
            self._queue.append(self._update(op, (item,)))

    def _decode(self, key: str, value: bytes) -> Item | None:
        """The item at ``key``, or None with the problem recorded (under the lock)."""
        where = split_key(key, self._prefix)
        try:
            if where is None:
                shape = f"{self._prefix}<namespace>/<name>"
                raise ValidationError((FieldError("", f"a {self.what} key is {shape}"),))
            item = self._decode_value(key, value, *where)
        except ValidationError as error:
            problem = SourceProblem(key, error.problems)
            self._problems[key] = problem
            logger.warning("etcd: bad %s at %s", self.what, problem)
            return None
        except Exception as error:  # anything the loader did not expect: this key only
            problem = SourceProblem(key, (FieldError("", str(error) or type(error).__name__),))
            self._problems[key] = problem
            logger.warning("etcd: bad %s at %s", self.what, problem)
            return None
        self._problems.pop(key, None)
        self._remember(key, value)
        return item

    # --- the memory (under the lock) -----------------------------------------------------------

    def _recall(self) -> dict[str, bytes]:
        if self._remembered is None:
            self._remembered = {}
            for record in self._memory.records("key") if self._memory is not None else ():
                key, value = record.get("path"), record.get("value")
                if isinstance(key, str) and isinstance(value, str):
                    self._remembered[key] = base64.b64decode(value)
        return self._remembered

    def _last_good(self, key: str, remembered: dict[str, bytes]) -> Item | None:
        value = remembered.get(key)
        where = split_key(key, self._prefix)
        if value is None or where is None:
            return None
        try:
            return self._decode_value(key, value, *where)
        except Exception:  # it was good when it was remembered: a decoder changed since
            logger.debug("etcd: the remembered value of %s no longer decodes", key, exc_info=True)
            return None

    def _remember(self, key: str, value: bytes) -> None:
        remembered = self._recall()
        if self._memory is None or remembered.get(key) == value:
            return
        remembered[key] = value
        self._memory.put("key", key, value=base64.b64encode(value).decode("ascii"))

    def _forget(self, key: str) -> None:
        remembered = self._recall()
        if self._memory is not None and remembered.pop(key, None) is not None:
            self._memory.drop("key", key)


class EtcdSource(_EtcdWatch[Pod]):
    __doc__ = _EtcdWatch.__doc__

    def __init__(
        self,
        client: EtcdClient,
        node: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        name: str = ETCD_SOURCE,
        backoff: float = 0.5,
        max_backoff: float = 10.0,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(
            client,
            node,
            pods_prefix(prefix, node),
            name=name,
            backoff=backoff,
            max_backoff=max_backoff,
            state_dir=state_dir,
        )

    @property
    def pods(self) -> tuple[Pod, ...]:
        """The pods bound to the node, as last read."""
        return self._items()

    def _update(self, op: Operation, items: tuple[Pod, ...]) -> PodUpdate:
        return PodUpdate(op, items, self._name)

    def _decode_value(self, key: str, value: bytes, namespace: str, name: str) -> Pod:
        pod = decode_pod(value, key, namespace, name)
        return stamp_source(pod, self._name)  # PodConfig gives it the node's uid


class EtcdObjectSource(_EtcdWatch[KubeObject]):
    """The ConfigMaps (``kind="ConfigMap"``) or Secrets (``kind="Secret"``) every node reads:
    ``<prefix>/configmaps/<namespace>/<name>`` and ``<prefix>/secrets/<namespace>/<name>``,
    listed and watched as ``EtcdSource`` does with pods (source ``etcd-configmaps`` /
    ``etcd-secrets``); its updates carry objects and no pods."""

    def __init__(
        self,
        client: EtcdClient,
        node: str,
        kind: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        backoff: float = 0.5,
        max_backoff: float = 10.0,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.kind = kind
        self.what = kind
        super().__init__(
            client,
            node,
            objects_prefix(prefix, kind),
            name=f"{ETCD_SOURCE}-{OBJECT_RESOURCES[kind]}",
            backoff=backoff,
            max_backoff=max_backoff,
            state_dir=state_dir,
        )

    @property
    def objects(self) -> tuple[KubeObject, ...]:
        """The ConfigMaps and Secrets read so far."""
        return self._items()

    def _update(self, op: Operation, items: tuple[KubeObject, ...]) -> PodUpdate:
        return PodUpdate(op, (), self._name, items)

    def _decode_value(self, key: str, value: bytes, namespace: str, name: str) -> KubeObject:
        return decode_object(value, key, self.kind, namespace, name)


def bind_pods(
    client: EtcdClient, pods: Iterable[Pod], node: str, prefix: str = DEFAULT_PREFIX
) -> list[str]:
    """Write each pod (v1 JSON) under its key for ``node``; return the keys written."""
    keys = []
    for pod in pods:
        key = pod_key(prefix, node, pod.metadata.namespace, pod.metadata.name)
        client.put(key, encode_json(pod_to_dict(pod)))
        keys.append(key)
    return keys
