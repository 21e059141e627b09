"""The Prometheus figures of one node's etcd parts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubecore_etcd._client import EtcdClient
from kubecore_etcd._events import EtcdEventRecorder
from kubecore_etcd._sink import EtcdStatusSink
from kubecore_etcd._source import EtcdSource


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
        """The etcd figures as Prometheus metrics, read when scraped: requests, the source's
        readiness and lists, status writes and what is pending, events written and dropped."""
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
