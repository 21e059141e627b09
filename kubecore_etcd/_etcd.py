"""Pods bound to nodes in etcd, their status written back: ``EtcdSource`` and ``EtcdStatusSink``.

The key layout is the interface (any etcd client, ``etcdctl put`` included, can bind a pod):

* ``<prefix>/pods/<node>/<namespace>/<name>``: a desired pod, the v1 Pod as JSON or YAML. One
  node watches one prefix and never sees other nodes' traffic.
* ``<prefix>/status/<node>/<namespace>/<name>``: the pod as the agent sees it (v1 Pod JSON with
  ``status``), written by the agent only, apart from the spec so a writer of specs and the agent
  never race.
* ``<prefix>/nodes/<node>``: the node (v1 Node JSON: addresses, capacity, the ``Ready``
  condition, versions) on a lease the agent keeps alive, so a dead agent's key disappears.
* ``<prefix>/events/<namespace>/<name>.<id>``: the agent's events (v1 Event JSON) on a lease
  giving them a TTL (``EtcdEventRecorder``).

The client is PyPI ``aetcd`` (the ``kubecore[etcd]`` extra), imported only when an etcd object is
made: ``import kubecore`` never loads it. It was chosen because it speaks etcd's v3 gRPC API on
today's protobuf (``etcd3`` 0.12 no longer imports with protobuf 4 and later) and has what a node
agent needs: watches from a given revision with compaction reported, leases with keep-alive,
transactions and user/password auth. Its client talks to one endpoint over a plain channel, so
``EtcdClient`` adds the rest around it: several endpoints with failover (a call that finds its
member unreachable moves to the next one), TLS (``https://`` endpoints with a CA, client
certificate and key), the ``hasleader`` requirement (a member cut off from the quorum refuses
instead of serving a stale view) and gRPC keep-alives (a watch on a member that vanished without
closing its socket fails within seconds instead of hanging).

aetcd is asyncio; the rest of kubecore is threads. One ``EtcdClient`` owns one event loop on its
own daemon thread; sources, sinks and command-line functions hand it coroutines and wait on the
results. One client may be shared by several agents in a process (the many-node simulator).
"""

from __future__ import annotations

import abc
import asyncio
import collections
import concurrent.futures
import hashlib
import itertools
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import attrs
import yaml

import kubecore
from kubecore import (
    FieldError,
    Kubelet,
    Operation,
    Pod,
    PodReport,
    PodUpdate,
    SourceProblem,
    ValidationError,
)
from kubecore.events import EVENT_COMPONENT, Event, v1_event
from kubecore.manifest import (
    assign_uid,
    load_manifest_lenient,
    load_pods_from_dict,
    pod_status_to_dict,
    pod_to_dict,
    rfc3339,
    stamp_source,
)
from kubecore.runtime import SystemClock
from kubecore.server import (
    TokenBucket,
    machine_arch,
    memory_total_bytes,
    node_labels,
    parse_node_labels,
)
from kubecore.v1 import KubeObject, PodStatus

logger = logging.getLogger(__name__)

T = TypeVar("T")
Item = TypeVar("Item")

DEFAULT_PREFIX = "/kubecore"
ETCD_SOURCE = "etcd"
DEFAULT_LEASE_TTL = 40
DEFAULT_LEASE_REFRESH = 10.0
MAX_TXN_OPS = 128
"""etcd's default ``--max-txn-ops``."""


_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class EtcdUnavailable(Exception):
    """No endpoint of the etcd cluster answered."""


# --- the key layout ---------------------------------------------------------------------------


def _clean_prefix(prefix: str) -> str:
    return "/" + prefix.strip("/") if prefix.strip("/") else ""


def pods_prefix(prefix: str, node: str) -> str:
    """The keys of the pods bound to ``node`` start with this (slash included)."""
    return f"{_clean_prefix(prefix)}/pods/{node}/"


def pod_key(prefix: str, node: str, namespace: str, name: str) -> str:
    return f"{pods_prefix(prefix, node)}{namespace}/{name}"


def status_prefix(prefix: str, node: str | None = None) -> str:
    base = f"{_clean_prefix(prefix)}/status/"
    return base if node is None else f"{base}{node}/"


def status_key(prefix: str, node: str, namespace: str, name: str) -> str:
    return f"{status_prefix(prefix, node)}{namespace}/{name}"


def nodes_prefix(prefix: str) -> str:
    return f"{_clean_prefix(prefix)}/nodes/"


def node_key(prefix: str, node: str) -> str:
    return f"{nodes_prefix(prefix)}{node}"


def split_key(key: str, key_prefix: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of ``<key_prefix><namespace>/<name>``; None for any other shape."""
    if not key.startswith(key_prefix):
        return None
    parts = key[len(key_prefix) :].split("/")
    if len(parts) != 2 or not all(parts):
        return None
    return parts[0], parts[1]


def load_document(value: bytes) -> object:
    """A stored value, JSON or YAML. A JSON object (what ``kubecore etcd apply`` and most
    writers store) is read by the JSON parser, twenty times faster than a YAML one; anything
    else, or what it refuses, by YAML. Raises ``UnicodeDecodeError`` or ``yaml.YAMLError``."""
    text = value.decode("utf-8")
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            pass  # a YAML flow mapping, or not a document at all: YAML says which
    return yaml.load(text, Loader=_SAFE_LOADER)


def _named_by_key(data: object, kind: str, namespace: str, name: str) -> dict[str, Any]:
    """A decoded ``kind`` document with its namespace and name taken from its key: they may be
    left out, and must match the key when given. Raises ``ValidationError``."""
    if not isinstance(data, dict):
        raise ValidationError((FieldError("", f"the value must be one v1 {kind} object"),))
    if data.get("kind", kind) != kind:
        raise ValidationError((FieldError("kind", f"must be {kind}, got {data.get('kind')!r}"),))
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValidationError((FieldError("metadata", "must be a mapping"),))
    errors = [
        FieldError(f"metadata.{field}", f"is {metadata[field]!r} but the key says {wanted!r}")
        for field, wanted in (("namespace", namespace), ("name", name))
        if metadata.get(field) not in (None, "", wanted)
    ]
    if errors:
        raise ValidationError(tuple(errors))
    return {**data, "metadata": {**metadata, "namespace": namespace, "name": name}}


def decode_pod(value: bytes, key: str, namespace: str, name: str) -> Pod:
    """The pod stored at ``key`` (v1 Pod, JSON or YAML). Its namespace and name come from the key
    when the document leaves them out and must match it otherwise. Raises ``ValidationError``."""
    try:
        data = load_document(value)
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise ValidationError((FieldError("", f"not a YAML or JSON document: {error}"),)) from None
    data = _named_by_key(data, "Pod", namespace, name)
    pods = load_pods_from_dict(data, source_name=key)
    return pods[0]


OBJECT_RESOURCES = {"ConfigMap": "configmaps", "Secret": "secrets"}
"""The kinds stored under ``<prefix>/<resource>/<namespace>/<name>`` (not per node: every node
reads them), by kind."""


def objects_prefix(prefix: str, kind: str) -> str:
    """The keys of the ConfigMaps (``kind="ConfigMap"``) or Secrets start with this."""
    return f"{_clean_prefix(prefix)}/{OBJECT_RESOURCES[kind]}/"


def object_key(prefix: str, kind: str, namespace: str, name: str) -> str:
    return f"{objects_prefix(prefix, kind)}{namespace}/{name}"


def decode_object(value: bytes, key: str, kind: str, namespace: str, name: str) -> KubeObject:
    """The ConfigMap or Secret stored at ``key`` (JSON or YAML), named by the key as a pod is.
    Raises ``ValidationError``; no message quotes the value (it may be a Secret's)."""
    try:
        data = load_document(value)
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ValidationError((FieldError("", f"not a YAML or JSON document{where}"),)) from None
    data = {"apiVersion": "v1", **_named_by_key(data, kind, namespace, name), "kind": kind}
    _, objects, problems = load_manifest_lenient(json.dumps(data, default=str), source_name=key)
    if problems:
        raise ValidationError(tuple(p for e in problems for p in e.problems))
    return objects[0]


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
"""One encoder for every document (``json.dumps`` with options builds one per call)."""


def encode_json(document: Mapping[str, Any]) -> bytes:
    return _ENCODER.encode(document).encode()


# --- the client ---------------------------------------------------------------------------------


@attrs.frozen
class EtcdConfig:
    """How to reach the cluster."""

    endpoints: tuple[str, ...] = ("http://127.0.0.1:2379",)
    """``http://host:port`` or ``https://host:port`` (TLS) URLs, tried in order on failure."""
    cafile: str = ""
    certfile: str = ""
    keyfile: str = ""
    user: str = ""
    """``name`` or ``name:password`` (etcdctl's ``--user``)."""
    timeout: float = 5.0
    """Seconds for one request."""


def parse_endpoints(text: str) -> tuple[str, ...]:
    """``http://a:2379,https://b:2379`` (a bare ``host:port`` means ``http://``)."""
    endpoints = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if "://" not in item:
            item = "http://" + item
        scheme, _, rest = item.partition("://")
        host, sep, port = rest.rstrip("/").rpartition(":")
        if scheme not in ("http", "https") or not sep or not host or not port.isdigit():
            raise ValueError(f"etcd endpoint must be http(s)://host:port, got {item!r}")
        endpoints.append(f"{scheme}://{host}:{port}")
    if not endpoints:
        raise ValueError("no etcd endpoint given")
    return tuple(endpoints)


def _client_class() -> Any:
    """aetcd's client with TLS, required leader and keep-alives (imported here: lazily)."""
    import aetcd
    import grpc
    from aetcd import rpc, watcher

    class Client(aetcd.Client):  # type: ignore[misc]
        def __init__(self, endpoint: str, config: EtcdConfig) -> None:
            scheme, _, address = endpoint.partition("://")
            host, _, port = address.rpartition(":")
            user, _, password = config.user.partition(":")
            super().__init__(
                host=host,
                port=int(port),
                username=user or None,
                password=password if user else None,
                timeout=config.timeout,
                options={
                    "grpc.keepalive_time_ms": 10_000,
                    "grpc.keepalive_timeout_ms": 5_000,
                    "grpc.keepalive_permit_without_calls": 1,
                    "grpc.max_receive_message_length": 64 * 1024 * 1024,
                },
            )
            self._tls = scheme == "https"
            self._config = config

        async def connect(self) -> None:
            if self._connected.is_set():
                return
            target = f"{self._host}:{self._port}"
            options = list(self._options.items())
            channel: Any = (
                rpc.secure_channel(target, _credentials(self._config), options)
                if self._tls
                else rpc.insecure_channel(target, options=options)
            )
            # A member without a leader refuses (UNAVAILABLE) instead of answering stale data.
            metadata: tuple[tuple[str, str], ...] = (("hasleader", "true"),)
            if self._username is not None:
                stub = rpc.AuthStub(channel)
                request = rpc.AuthenticateRequest(name=self._username, password=self._password)
                try:
                    reply = await stub.Authenticate(request, timeout=self._timeout)
                except rpc.AioRpcError as error:
                    await channel.close()
                    aetcd.exceptions._handle_exception(error)
                metadata += (("token", reply.token),)
            self.channel = channel
            self.metadata = metadata
            self.kvstub = rpc.KVStub(channel)
            self.clusterstub = rpc.ClusterStub(channel)
            self.leasestub = rpc.LeaseStub(channel)
            self.maintenancestub = rpc.MaintenanceStub(channel)
            self._watcher = watcher.Watcher(
                rpc.WatchStub(channel), timeout=self._timeout, metadata=metadata
            )
            self._connected.set()

    def _credentials(config: EtcdConfig) -> Any:
        def read(path: str) -> bytes | None:
            if not path:
                return None
            with open(path, "rb") as file:
                return file.read()

        return grpc.ssl_channel_credentials(
            read(config.cafile), read(config.keyfile), read(config.certfile)
        )

    return Client


class EtcdClient:
    """A thread-safe handle on an etcd cluster: one aetcd client on an event loop of its own.

    ``run(op)`` runs ``await op(client)`` on the loop with failover: when the member in use does
    not answer (unavailable, timed out, no leader), the call moves on to the next endpoint, and
    raises ``EtcdUnavailable`` once every endpoint failed in a row. ``spawn(coroutine)`` runs a
    long-lived task there (a watch, a keep-alive).
    """

    def __init__(self, config: EtcdConfig | None = None) -> None:
        import aetcd.exceptions

        self.config = config or EtcdConfig()
        if not self.config.endpoints:
            raise ValueError("no etcd endpoint given")
        self._client_type = _client_class()
        self._unreachable: tuple[type[BaseException], ...] = (
            aetcd.exceptions.ConnectionFailedError,
            aetcd.exceptions.ConnectionTimeoutError,
            asyncio.TimeoutError,
        )
        self._unauthenticated = aetcd.exceptions.UnauthenticatedError
        self._index = 0
        self._client: Any = None
        self.requests = 0
        """Requests made (each try counts)."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="kubecore-etcd", daemon=True
        )
        self._thread.start()
        self._closed = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def endpoint(self) -> str:
        """The endpoint in use."""
        return self.config.endpoints[self._index]

    def run(self, op: Callable[[Any], Awaitable[T]], timeout: float | None = None) -> T:
        """``await op(client)`` on the loop, with failover; waits for the result."""
        wait = (
            timeout
            if timeout is not None
            else self.config.timeout * (2 * len(self.config.endpoints) + 2)
        )
        future = asyncio.run_coroutine_threadsafe(self.call(op), self._loop)
        try:
            return future.result(wait)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise EtcdUnavailable(f"etcd did not answer within {wait:.0f}s") from None

    def spawn(self, coroutine: Awaitable[Any]) -> concurrent.futures.Future[Any]:
        async def wrapper() -> Any:
            return await coroutine

        return asyncio.run_coroutine_threadsafe(wrapper(), self._loop)

    async def current(self) -> Any:
        """The aetcd client of the endpoint in use (on the loop)."""
        if self._client is None:
            self._client = self._client_type(self.endpoint, self.config)
        return self._client

    async def fail_over(self, client: Any) -> None:
        """``client`` did not answer: drop it and move to the next endpoint (on the loop)."""
        if client is not self._client:
            return  # someone else moved on already
        self._client = None
        self._index = (self._index + 1) % len(self.config.endpoints)
        try:
            await client.close()
        except Exception:  # closing a broken channel may fail too; it is gone either way
            logger.debug("closing the etcd client failed", exc_info=True)
        logger.info("etcd: moving to endpoint %s", self.endpoint)

    async def call(self, op: Callable[[Any], Awaitable[T]]) -> T:
        """``await op(client)`` with failover (on the loop): every endpoint in turn, passes
        over them with a growing pause, for ``timeout`` seconds (a leader election leaves every
        member without a leader for a second or two)."""
        last: BaseException | None = None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.timeout
        pause = 0.05
        for attempt in itertools.count():
            if attempt and attempt % len(self.config.endpoints) == 0:
                if loop.time() + pause > deadline:
                    break
                await asyncio.sleep(pause)
                pause = min(pause * 2, 1.0)
            client = await self.current()
            self.requests += 1
            try:
                return await asyncio.wait_for(op(client), self.config.timeout * 2)
            except self._unreachable as error:
                last = error
                await self.fail_over(client)
            except self._unauthenticated as error:
                # An expired auth token: a new connection authenticates again.
                last = error
                await self.fail_over(client)
            except asyncio.CancelledError as error:
                task = asyncio.current_task()
                if (task is not None and task.cancelling()) or client is self._client:
                    raise
                # Another caller failed over and closed this client under the request: retry.
                last = error
        raise EtcdUnavailable(
            f"no etcd endpoint answered ({', '.join(self.config.endpoints)}): {last}"
        ) from last

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        async def shutdown() -> None:
            # Watches and keep-alives still running end here, not as tasks destroyed pending.
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)
            if self._client is not None:
                client, self._client = self._client, None
                try:
                    await client.close()
                except Exception:
                    logger.debug("closing the etcd client failed", exc_info=True)

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(self.config.timeout)
        except Exception:
            logger.debug("etcd client shutdown failed", exc_info=True)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self.config.timeout)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> EtcdClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- plain operations (thread-side) ---------------------------------------------------

    def put(self, key: str, value: bytes | str, lease: int | None = None) -> int:
        """Write ``key``; return the store's revision after the write."""
        data = value.encode() if isinstance(value, str) else value

        async def op(client: Any) -> int:
            reply = await client.put(key.encode(), data, lease=lease)
            return int(reply.header.revision)

        return self.run(op)

    def get(self, key: str) -> bytes | None:
        async def op(client: Any) -> bytes | None:
            reply = await client.get(key.encode())
            return None if reply is None else bytes(reply.value)

        return self.run(op)

    def get_prefix(self, prefix: str) -> tuple[dict[str, bytes], int]:
        """Every key under ``prefix`` with its value, and the store's revision of that read."""

        async def op(client: Any) -> tuple[dict[str, bytes], int]:
            reply = await client.get_prefix(prefix.encode())
            values = {kv.key.decode(): bytes(kv.value) for kv in reply.kvs}
            return values, int(reply.header.revision)

        return self.run(op)

    def delete(self, key: str) -> bool:
        async def op(client: Any) -> bool:
            return bool(await client.delete(key.encode()))

        return self.run(op)

    def delete_prefix(self, prefix: str) -> int:
        async def op(client: Any) -> int:
            reply = await client.delete_prefix(prefix.encode())
            return int(reply.deleted)

        return self.run(op)

    def compact(self, revision: int) -> None:
        async def op(client: Any) -> None:
            await client.compact(revision, physical=True)

        self.run(op)

    def revision(self) -> int:
        """The store's current revision."""

        async def op(client: Any) -> int:
            # An empty range read: its header carries the revision.
            reply = await client.get_prefix(b"\0kubecore-revision")
            return int(reply.header.revision)

        return self.run(op)


# --- the pod source -----------------------------------------------------------------------------


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
    the pod it held before, if any, stays; the other keys go on. ``poll`` never blocks.
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
    ) -> None:
        self._client = client
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
            self._pods = {}
            self._problems = {}
            for kv in reply.kvs:
                key = kv.key.decode("utf-8", "replace")
                item = self._decode(key, bytes(kv.value)) or previous.get(key)
                if item is not None:
                    self._pods[key] = item
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
        return item


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
    ) -> None:
        super().__init__(
            client,
            node,
            pods_prefix(prefix, node),
            name=name,
            backoff=backoff,
            max_backoff=max_backoff,
        )

    @property
    def pods(self) -> tuple[Pod, ...]:
        return self._items()

    def _update(self, op: Operation, items: tuple[Pod, ...]) -> PodUpdate:
        return PodUpdate(op, items, self._name)

    def _decode_value(self, key: str, value: bytes, namespace: str, name: str) -> Pod:
        pod = decode_pod(value, key, namespace, name)
        return stamp_source(assign_uid(pod, self._name), self._name)


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
        )

    @property
    def objects(self) -> tuple[KubeObject, ...]:
        return self._items()

    def _update(self, op: Operation, items: tuple[KubeObject, ...]) -> PodUpdate:
        return PodUpdate(op, (), self._name, items)

    def _decode_value(self, key: str, value: bytes, namespace: str, name: str) -> KubeObject:
        return decode_object(value, key, self.kind, namespace, name)


# --- the status sink ----------------------------------------------------------------------------


def document_digest(document: bytes) -> bytes:
    """A short fingerprint of a status document, to tell whether it changed."""
    return hashlib.blake2b(document, digest_size=16).digest()


def status_document(pod: Pod) -> bytes:
    """What the status key of ``pod`` holds: the v1 Pod JSON with its status."""
    if pod.status is None:
        return encode_json(pod_to_dict(pod))
    return with_status(document_head(pod), pod.status)


def document_head(pod: Pod) -> bytes:
    """The status document of ``pod`` up to its status: the JSON object of its ``apiVersion``,
    ``kind``, ``metadata`` and ``spec`` (sorted before ``status``) without its closing brace."""
    return encode_json(pod_to_dict(attrs.evolve(pod, status=None)))[:-1]


def with_status(head: bytes, status: PodStatus) -> bytes:
    """A status document from its head (``document_head``) and the pod's status."""
    return b"".join((head, b',"status":', encode_json(pod_status_to_dict(status)), b"}"))


def node_document(kubelet: Kubelet, node: str, *, ready: bool, reason: str) -> dict[str, Any]:
    """The v1 Node the agent publishes under ``<prefix>/nodes/<node>``."""
    capacity = {"cpu": str(os.cpu_count() or 1), "pods": str(kubelet.config.max_pods)}
    memory = memory_total_bytes()
    if memory:
        capacity["memory"] = f"{memory // 1024}Ki"
    addresses = [{"type": "Hostname", "address": socket.gethostname()}]
    if kubelet.config.host_ip:
        addresses.insert(0, {"type": "InternalIP", "address": kubelet.config.host_ip})
    runtime_version = ""
    try:
        version = kubelet.runtime.version()
        runtime_version = f"{version.runtime_name}://{version.runtime_version}"
    except Exception:  # a runtime that is down: the Ready condition says so
        pass
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node,
            "labels": node_labels(node, parse_node_labels(kubelet.config.node_labels)),
        },
        "status": {
            "addresses": addresses,
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": reason or ("kubelet is ready" if ready else ""),
                }
            ],
            "nodeInfo": {
                "kubeletVersion": f"kubecore/{kubecore.__version__}",
                "containerRuntimeVersion": runtime_version,
                "operatingSystem": "linux",
                "architecture": machine_arch(),
            },
        },
    }


@attrs.define
class SinkStats:
    puts: int = 0
    deletes: int = 0
    transactions: int = 0
    failures: int = 0
    keepalives: int = 0


class EtcdStatusSink:
    """Writes what the agent sees back to etcd, on a thread of its own.

    Every ``interval`` seconds it reads ``kubelet.pods()`` and queues the status document of each
    pod whose document changed since it was last written (one pending write per pod: the latest),
    and a delete of the status key of each pod that is gone (once the agent's sources have all
    reported, so a starting agent does not wipe statuses it has not rebuilt yet). Pending writes
    go out in transactions of up to ``batch`` operations, at most ``qps`` transactions a second
    with bursts of ``burst``. A failed transaction stays pending and is retried: while etcd is
    down nothing is lost but intermediate states, and the latest status lands when it is back.

    It also keeps ``<prefix>/nodes/<node>`` on a lease of ``lease_ttl`` seconds refreshed every
    ``lease_refresh`` seconds (a new lease and a rewrite when the old one expired), and rewrites
    the node document when it changes (readiness from ``kubelet.healthz()``).
    """

    def __init__(
        self,
        kubelet: Kubelet,
        client: EtcdClient,
        node: str | None = None,
        *,
        prefix: str = DEFAULT_PREFIX,
        interval: float = 1.0,
        qps: float = 5.0,
        burst: int = 10,
        batch: int = MAX_TXN_OPS,
        lease_ttl: int = DEFAULT_LEASE_TTL,
        lease_refresh: float = DEFAULT_LEASE_REFRESH,
        revoke_on_close: bool = True,
    ) -> None:
        self._kubelet = kubelet
        self._client = client
        self._node = node or kubelet.config.node_name
        self._prefix = prefix
        self._status_prefix = status_prefix(prefix, self._node)
        self._interval = interval
        self._limiter = TokenBucket(qps, burst, SystemClock())
        self._batch = max(1, min(batch, MAX_TXN_OPS))
        self._lease_ttl = lease_ttl
        self._lease_refresh = lease_refresh
        self._revoke_on_close = revoke_on_close
        self._seen: dict[str, tuple[Pod, PodStatus | None]] = {}
        """Status key -> the desired pod and status object (the agent's own, not copies) last
        turned into a document: while both are the same objects the document is not made
        again."""
        self._written: dict[str, bytes] | None = None
        """Status key -> the digest (``document_digest``) of the document it holds; None until
        the existing keys were read. Digests, not documents: a node holds one per pod."""
        self._heads: dict[str, tuple[Pod, float, bytes]] = {}
        """Status key -> the desired pod, its first-seen time and the head of its document
        (``document_head``), kept while the pod is Pending: its status is about to change
        again, and only the status is encoded then."""
        self._pending: dict[str, bytes | None] = {}
        """Status key -> the document to write (None: delete), latest only."""
        self._lease_id = 0
        self._lease_due = 0.0
        self._node_written = b""
        self._node_health: tuple[bool, str] | None = None
        """The (ready, reason) the last node document was made from."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stats = SinkStats()

    @property
    def node(self) -> str:
        return self._node

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    @property
    def lease_id(self) -> int:
        return self._lease_id

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the etcd status sink is already running")
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="kubecore-etcd-status", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self._client.config.timeout * 2)
        if self._revoke_on_close and self._lease_id:
            lease, self._lease_id = self._lease_id, 0
            try:
                self._client.run(lambda client: client.revoke_lease(lease))
            except Exception:
                logger.debug("revoking the node lease failed", exc_info=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync_once()
            except Exception:
                logger.exception("writing status to etcd failed")
            self._stop.wait(self._interval)

    def sync_once(self) -> bool:
        """One round: node lease, status diff, as many transactions as the rate allows.
        True when nothing is left pending."""
        try:
            self._keep_node()
        except EtcdUnavailable as error:
            self.stats.failures += 1
            logger.warning("etcd: keeping the node key failed: %s", error)
        self._queue_changes()
        return self._flush()

    # --- status ---------------------------------------------------------------------------

    def _queue_changes(self) -> None:
        if self._written is None:
            try:
                existing, _ = self._client.get_prefix(self._status_prefix)
            except EtcdUnavailable as error:
                self.stats.failures += 1
                logger.warning("etcd: reading the status keys failed: %s", error)
                return
            self._written = {key: document_digest(value) for key, value in existing.items()}
        reports = self._kubelet.pod_reports()
        ready = self._kubelet.sources_ready()
        current: set[str] = set()
        with self._lock:
            for report in reports:
                meta = report.pod.metadata
                key = status_key(self._prefix, self._node, meta.namespace, meta.name)
                current.add(key)
                seen = self._seen.get(key)
                if (
                    seen is not None
                    and seen[0] is report.pod
                    and seen[1] is report.status
                    and key in self._written
                ):
                    continue
                document = self._document(key, report)
                self._seen[key] = (report.pod, report.status)
                if self._written.get(key) == document_digest(document):
                    self._pending.pop(key, None)
                else:
                    self._pending[key] = document
            for key in self._seen.keys() - current:
                del self._seen[key]
                self._heads.pop(key, None)
            if ready:
                for key in self._written.keys() - current:
                    self._pending[key] = None

    def _document(self, key: str, report: PodReport) -> bytes:
        head = self._heads.get(key)
        if head is None or head[0] is not report.pod or head[1] != report.first_seen:
            head = (report.pod, report.first_seen, document_head(report.as_pod()))
        status = report.reported_status()
        if status.phase == "Pending":
            self._heads[key] = head
        else:
            self._heads.pop(key, None)
        return with_status(head[2], status)

    def _flush(self) -> bool:
        while True:
            with self._lock:
                if not self._pending:
                    return True
                batch = list(self._pending.items())[: self._batch]
            if not self._limiter.try_acquire():
                return False
            try:
                self._write(batch)
            except EtcdUnavailable as error:
                self.stats.failures += 1
                logger.warning("etcd: writing %d statuses failed: %s", len(batch), error)
                return False
            assert self._written is not None
            with self._lock:
                for key, document in batch:
                    if self._pending.get(key, b"") == document:
                        del self._pending[key]
                    if document is None:
                        self._written.pop(key, None)
                    else:
                        self._written[key] = document_digest(document)

    def _write(self, batch: list[tuple[str, bytes | None]]) -> None:
        async def op(client: Any) -> None:
            tx = client.transactions
            ops = [
                tx.delete(key.encode()) if document is None else tx.put(key.encode(), document)
                for key, document in batch
            ]
            await client.transaction(compare=[], success=ops, failure=[])

        self._client.run(op)
        self.stats.transactions += 1
        self.stats.puts += sum(1 for _, document in batch if document is not None)
        self.stats.deletes += sum(1 for _, document in batch if document is None)

    # --- the node and its lease -----------------------------------------------------------

    def _keep_node(self) -> None:
        health = self._kubelet.healthz()
        now = time.monotonic()
        refresh = bool(self._lease_id) and now >= self._lease_due
        if refresh:
            if self._refresh_lease():
                self._lease_due = now + self._lease_refresh
            else:
                logger.warning("etcd: the node lease of %s expired; granting a new one", self._node)
                self._lease_id = 0
        if not self._lease_id:
            self._lease_id = self._grant_lease()
            self._lease_due = now + self._lease_refresh
            self._node_written = b""
        if not refresh and self._node_written and health == self._node_health:
            return  # the rest of the document (versions, capacity) is checked at each refresh
        ready, reason = self._node_health = health
        document = encode_json(node_document(self._kubelet, self._node, ready=ready, reason=reason))
        if document != self._node_written:
            self._client.put(node_key(self._prefix, self._node), document, lease=self._lease_id)
            self._node_written = document

    def _grant_lease(self) -> int:
        async def op(client: Any) -> int:
            lease = await client.lease(self._lease_ttl)
            return int(lease.id)

        return self._client.run(op)

    def _refresh_lease(self) -> bool:
        """Keep the lease alive; False when it has expired."""
        lease_id = self._lease_id

        async def op(client: Any) -> int:
            reply = await client.refresh_lease(lease_id)
            return int(reply.TTL) if reply is not None else 0

        ttl = self._client.run(op)
        self.stats.keepalives += 1
        return ttl > 0


# --- events ---------------------------------------------------------------------------------------


DEFAULT_EVENT_TTL = 3600


def _event_stamp(event: Event) -> str:
    # The agent's clock may be virtual (a monotonic count): only a wall time is shown as one.
    return rfc3339(event.timestamp if event.timestamp > 1e9 else time.time())


def event_document(event: Event, node: str, name: str) -> dict[str, Any]:
    """A v1 Event for one of the agent's events (the one builder's)."""
    return v1_event(event, node=node, name=name, stamp=_event_stamp(event))


_quote = json.encoder.encode_basestring_ascii


def event_json(event: Event, node: str, name: str) -> bytes:
    """``encode_json(event_document(event, node, name))``, written out directly: six events
    per pod started, their dictionaries and sorting cost more than the rest of their write."""
    ref = event.involved_object
    stamp = _quote(_event_stamp(event))
    involved = ['"apiVersion":"v1"']
    if ref.field_path:
        involved.append(f'"fieldPath":{_quote(ref.field_path)}')
    involved.append(f'"kind":{_quote(ref.kind)},"name":{_quote(ref.name)}')
    involved.append(f'"namespace":{_quote(ref.namespace)}')
    if ref.uid:
        involved.append(f'"uid":{_quote(ref.uid)}')
    host = _quote(node)
    return (
        f'{{"apiVersion":"v1","count":1,"firstTimestamp":{stamp},'
        f'"involvedObject":{{{",".join(involved)}}},"kind":"Event","lastTimestamp":{stamp},'
        f'"message":{_quote(event.message)},'
        f'"metadata":{{"creationTimestamp":{stamp},"name":{_quote(name)},'
        f'"namespace":{_quote(ref.namespace or "default")}}},'
        f'"reason":{_quote(event.reason)},'
        f'"reportingComponent":"{EVENT_COMPONENT}","reportingInstance":{host},'
        f'"source":{{"component":"{EVENT_COMPONENT}","host":{host}}},'
        f'"type":{_quote(str(event.type))}}}'
    ).encode()


class EtcdEventRecorder:
    """An ``EventRecorder`` that writes the agent's events to
    ``<prefix>/events/<namespace>/<name>.<id>``, each on a lease so that it expires by itself.

    ``record`` never blocks: it queues the event, or drops it and counts it in ``dropped`` when
    ``queue_size`` events are already waiting. A thread of its own writes the queue in
    transactions of up to ``batch`` events every ``interval`` seconds. Events share a lease that
    is replaced every tenth of ``ttl``, so each event lives between 0.9 and 1 times ``ttl``
    (Kubernetes' ``--event-ttl``, default 1 h). A failed write drops its batch (counted):
    events are best effort and must never hold the agent back.
    """

    def __init__(
        self,
        client: EtcdClient,
        node: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl: int = DEFAULT_EVENT_TTL,
        queue_size: int = 1000,
        batch: int = MAX_TXN_OPS,
        interval: float = 1.0,
    ) -> None:
        self._client = client
        self._node = node
        self._prefix = _clean_prefix(prefix)
        self._ttl = ttl
        self._queue: collections.deque[Event] = collections.deque()
        self._queue_size = queue_size
        self._batch = max(1, min(batch, MAX_TXN_OPS))
        self._interval = interval
        self._lock = threading.Lock()
        self._lease_id = 0
        self._lease_until = 0.0
        self._sequence = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.written = 0
        self.dropped = 0
        """Events dropped: the queue was full, or their write failed."""

    def record(self, event: Event) -> None:
        with self._lock:
            if len(self._queue) >= self._queue_size:
                self.dropped += 1
                return
            self._queue.append(event)

    @property
    def queued(self) -> int:
        with self._lock:
            return len(self._queue)

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._loop, name="kubecore-etcd-events", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self._client.config.timeout * 2)
        self.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.flush()

    def flush(self) -> int:
        """Write what is queued now; return how many events were written."""
        done = 0
        while True:
            with self._lock:
                batch = [self._queue.popleft() for _ in range(min(self._batch, len(self._queue)))]
            if not batch:
                return done
            try:
                self._write(batch)
            except Exception as error:  # best effort: never retried, never raised
                with self._lock:
                    self.dropped += len(batch)
                logger.warning("etcd: %d event(s) dropped: %s", len(batch), error)
                return done
            self.written += len(batch)
            done += len(batch)

    def _key(self, event: Event) -> str:
        self._sequence += 1
        ref = event.involved_object
        unique = f"{time.time_ns():x}{self._sequence:04x}"
        return f"{self._prefix}/events/{ref.namespace or 'default'}/{ref.name}.{unique}"

    def _lease(self) -> int:
        now = time.monotonic()
        if not self._lease_id or now >= self._lease_until:

            async def op(client: Any) -> int:
                lease = await client.lease(self._ttl)
                return int(lease.id)

            self._lease_id = self._client.run(op)
            self._lease_until = now + self._ttl / 10
        return self._lease_id

    def _write(self, batch: list[Event]) -> None:
        lease = self._lease()
        documents = []
        for event in batch:
            key = self._key(event)
            name = key.rsplit("/", 1)[1]
            documents.append((key, event_json(event, self._node, name)))

        async def op(client: Any) -> None:
            tx = client.transactions
            ops = [tx.put(key.encode(), value, lease) for key, value in documents]
            await client.transaction(compare=[], success=ops, failure=[])

        self._client.run(op)


# --- metrics -----------------------------------------------------------------------------------


class EtcdCollector:
    """Prometheus figures of one node's etcd parts, read when scraped:
    ``kubecore_etcd_requests_total``, ``kubecore_etcd_source_ready``,
    ``kubecore_etcd_source_lists_total``, ``kubecore_etcd_status_writes_total{op}``,
    ``kubecore_etcd_status_pending``, ``kubecore_etcd_events_written_total`` and
    ``kubecore_etcd_events_dropped_total``. Register it on the agent's registry
    (``kubelet.metrics.registry.register(EtcdCollector(...))``)."""

    def __init__(
        self,
        client: EtcdClient,
        source: EtcdSource,
        sink: EtcdStatusSink,
        events: EtcdEventRecorder | None = None,
        prefix: str = "kubecore",
    ) -> None:
        self._client = client
        self._source = source
        self._sink = sink
        self._events = events
        self._prefix = prefix

    def collect(self) -> Iterable[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        p = f"{self._prefix}_etcd"
        yield CounterMetricFamily(
            f"{p}_requests", "Requests made to etcd (each try)", value=self._client.requests
        )
        yield GaugeMetricFamily(
            f"{p}_source_ready",
            "1 while the etcd source is listed and etcd answers",
            value=1 if self._source.ready else 0,
        )
        yield CounterMetricFamily(
            f"{p}_source_lists",
            "Lists of the node's pods (first, compaction, recovery)",
            value=self._source.lists,
        )
        writes = CounterMetricFamily(
            f"{p}_status_writes", "Status keys written or deleted", labels=["op"]
        )
        writes.add_metric(["put"], self._sink.stats.puts)
        writes.add_metric(["delete"], self._sink.stats.deletes)
        yield writes
        yield GaugeMetricFamily(
            f"{p}_status_pending",
            "Status writes waiting (rate limit, etcd down)",
            value=self._sink.pending,
        )
        if self._events is not None:
            yield CounterMetricFamily(
                f"{p}_events_written", "Events written to etcd", value=self._events.written
            )
            yield CounterMetricFamily(
                f"{p}_events_dropped",
                "Events dropped (queue full or write failed)",
                value=self._events.dropped,
            )


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
