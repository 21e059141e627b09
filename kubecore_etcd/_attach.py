"""What ``kubecore run --etcd-endpoints ...`` adds to the agent (``attach``): the source of the
node's pods in etcd, the ConfigMaps and Secrets every node reads, the status sink and the event
recorder, on one client (``etcd_config`` makes its settings from the command line's)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from kubecore.manifest import LAST_GOOD_DIR
from kubecore_etcd._client import EtcdClient, EtcdConfig, parse_endpoints
from kubecore_etcd._events import DEFAULT_EVENT_TTL, EtcdEventRecorder
from kubecore_etcd._keys import DEFAULT_PREFIX, OBJECT_RESOURCES
from kubecore_etcd._metrics import EtcdCollector
from kubecore_etcd._sink import DEFAULT_LEASE_REFRESH, DEFAULT_LEASE_TTL, EtcdStatusSink
from kubecore_etcd._source import EtcdObjectSource, EtcdSource

if TYPE_CHECKING:
    from kubecore import Kubelet

DEFAULT_ENDPOINTS = "http://127.0.0.1:2379"

Endpoints = str | Sequence[str]
"""``http://a:2379,http://b:2379`` or a sequence of URLs."""


def etcd_config(
    endpoints: Endpoints,
    *,
    cafile: str = "",
    certfile: str = "",
    keyfile: str = "",
    user: str = "",
    timeout: float = 5.0,
) -> EtcdConfig:
    """The client's settings from the command line's: the endpoints (``a,b`` or a sequence of
    URLs; ``ValueError`` for a bad one), the TLS files, the user and the timeout."""
    urls = parse_endpoints(endpoints if isinstance(endpoints, str) else ",".join(endpoints))
    return EtcdConfig(
        urls, cafile=cafile, certfile=certfile, keyfile=keyfile, user=user, timeout=timeout
    )


@attrs.define
class EtcdAttachment:
    """What ``kubecore run`` adds for etcd: a client, the source of the node's pods (poll it with
    the other sources) and the status sink (``start`` it with the agent, ``close`` at exit)."""

    client: EtcdClient
    source: EtcdSource
    sink: EtcdStatusSink
    events: EtcdEventRecorder
    object_sources: tuple[EtcdObjectSource, ...] = ()
    """The ConfigMaps and Secrets every node reads."""

    @property
    def sources(self) -> tuple[EtcdSource | EtcdObjectSource, ...]:
        """Every source to poll: the node's pods, then the ConfigMaps and Secrets."""
        return (self.source, *self.object_sources)

    @property
    def ready(self) -> bool:
        """Every source has listed etcd once."""
        return all(source.ready for source in self.sources)

    def start(self) -> None:
        """Start writing the pods' status and the agent's events."""
        self.sink.start()
        self.events.start()

    def close(self) -> None:
        """Stop the writers, close the sources, then the client."""
        self.sink.close()
        self.events.close()
        for source in self.sources:
            source.close()
        self.client.close()


def attach(
    kubelet: Kubelet,
    endpoints: Endpoints,
    prefix: str = DEFAULT_PREFIX,
    *,
    qps: float = 5.0,
    burst: int = 10,
    lease_ttl: int = DEFAULT_LEASE_TTL,
    lease_refresh: float = DEFAULT_LEASE_REFRESH,
    event_ttl: int = DEFAULT_EVENT_TTL,
    **options: Any,
) -> EtcdAttachment:
    """The etcd source, status sink and event recorder of ``kubelet``'s node
    (``kubelet.config.node_name``). The source is registered with the agent, so nothing is
    deleted before etcd was listed; the event recorder joins the agent's recorders
    (``Kubelet.add_recorder``) and their figures join its metrics (``EtcdCollector``)."""
    client = EtcdClient(etcd_config(endpoints, **options))
    node = kubelet.config.node_name
    state_dir = os.path.join(kubelet.root_dir, LAST_GOOD_DIR)  # last good values, per key
    source = EtcdSource(client, node, prefix=prefix, state_dir=state_dir)
    kubelet.register_source(source.name)
    # Not registered: they hold no pods, so deleting a pod need not wait for them.
    object_sources = tuple(
        EtcdObjectSource(client, node, kind, prefix=prefix, state_dir=state_dir)
        for kind in OBJECT_RESOURCES
    )
    events = EtcdEventRecorder(client, node, prefix=prefix, ttl=event_ttl)
    kubelet.add_recorder(events)
    sink = EtcdStatusSink(
        kubelet,
        client,
        node,
        prefix=prefix,
        qps=qps,
        burst=burst,
        lease_ttl=lease_ttl,
        lease_refresh=lease_refresh,
    )
    kubelet.metrics.registry.register(EtcdCollector(client, source, sink, events))
    return EtcdAttachment(client, source, sink, events, object_sources)
