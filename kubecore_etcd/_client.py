"""A thread-safe handle on an etcd cluster (``EtcdClient``) and how to reach it (``EtcdConfig``).

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
results. One client may be shared by several agents in a process (the many-node simulator)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs

from kubecore.runtime import Outage

logger = logging.getLogger(__name__)

T = TypeVar("T")

RETRY_PAUSE_INITIAL = 0.05
RETRY_PAUSE_MAX = 10.0
"""The pause after a full round of endpoints failed in a row: 0.05 s, doubling up to 10 s (as
the sources' relist), shared by every caller of the client."""

MAX_TXN_OPS = 128
"""etcd's default ``--max-txn-ops``."""


class EtcdUnavailable(Exception):
    """No endpoint of the etcd cluster answered."""


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
        self._failed_in_row = 0
        self._outage = Outage(initial=RETRY_PAUSE_INITIAL, cap=RETRY_PAUSE_MAX)
        self._retry_at = 0.0
        """Loop time before which no call tries again (after a full round failed)."""
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
        """The event loop (on its own thread) that every etcd call runs on."""
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
        """Run ``coroutine`` on the client's loop without waiting; returns its future."""

        async def wrapper() -> Any:
            return await coroutine

        return asyncio.run_coroutine_threadsafe(wrapper(), self._loop)

    async def current(self) -> Any:
        """The aetcd client of the endpoint in use (on the loop)."""
        if self._client is None:
            self._client = self._client_type(self.endpoint, self.config)
        return self._client

    async def fail_over(self, client: Any) -> None:
        """``client`` did not answer: drop it and move to the next endpoint (on the loop). After
        a full round of endpoints failed in a row, every caller waits the outage's growing pause
        before the next try; the outage is logged when it starts and when it ends."""
        if client is not self._client:
            return  # someone else moved on already
        self._client = None
        self._index = (self._index + 1) % len(self.config.endpoints)
        try:
            await client.close()
        except Exception:  # closing a broken channel may fail too; it is gone either way
            logger.debug("closing the etcd client failed", exc_info=True)
        logger.debug("etcd: moving to endpoint %s", self.endpoint)
        self._failed_in_row += 1
        if self._failed_in_row % len(self.config.endpoints):
            return
        now = asyncio.get_running_loop().time()
        self._outage.fail(now)
        self._retry_at = now + self._outage.delay
        if self._outage.failures == 1:
            logger.warning(
                "etcd: no endpoint answers (%s); trying again with a pause growing to %.0fs",
                ", ".join(self.config.endpoints),
                self._outage.cap,
            )

    def _answered(self) -> None:
        if not self._failed_in_row and not self._outage.failures:
            return
        self._failed_in_row = 0
        self._retry_at = 0.0
        ended = self._outage.answer(asyncio.get_running_loop().time())
        if ended is not None:
            logger.warning("etcd: %s answers again, %s", self.endpoint, ended.describe())

    async def call(self, op: Callable[[Any], Awaitable[T]]) -> T:
        """``await op(client)`` with failover (on the loop): every endpoint in turn, passes
        over them with the client's growing pause (``fail_over``), for ``timeout`` seconds (a
        leader election leaves every member without a leader for a second or two)."""
        last: BaseException | None = None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.timeout
        while True:
            if self._retry_at > loop.time():
                await asyncio.sleep(max(0.0, min(self._retry_at, deadline) - loop.time()))
                if self._retry_at > loop.time():
                    break
            client = await self.current()
            self.requests += 1
            try:
                result = await asyncio.wait_for(op(client), self.config.timeout * 2)
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
            else:
                self._answered()
                return result
        raise EtcdUnavailable(
            f"no etcd endpoint answered ({', '.join(self.config.endpoints)}): "
            f"{last or 'none answered the last tries; waiting before the next'}"
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
        """The value of ``key`` (None when there is none), with failover."""

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
        """Delete ``key``; whether it was there."""

        async def op(client: Any) -> bool:
            return bool(await client.delete(key.encode()))

        return self.run(op)

    def delete_prefix(self, prefix: str) -> int:
        """Delete every key under ``prefix``; how many there were."""

        async def op(client: Any) -> int:
            reply = await client.delete_prefix(prefix.encode())
            return int(reply.deleted)

        return self.run(op)

    def compact(self, revision: int) -> None:
        """Compact the history up to ``revision`` (physically: the space is freed)."""

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
