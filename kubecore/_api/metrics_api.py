"""The resource metrics API (``metrics.k8s.io/v1beta1``, as metrics-server serves it) for
``kubectl top``: ``PodMetrics`` (``/apis/metrics.k8s.io/v1beta1/[namespaces/{ns}/]pods[/name]``)
and ``NodeMetrics`` (``.../nodes[/name]``), from the agent's Summary API figures (the numbers
of ``/stats/summary`` and ``/metrics/resource``).

CPU usage is a rate over a ``window``, as metrics-server reports it: the summary's own
``usageNanoCores`` (the growth of the cumulative counter between its last two reads, timed by
the runtime's clock), over the time since this API last read that counter; where the summary
has no rate, the counter's growth between two reads of this API at least ``MIN_WINDOW`` apart.
A counter read for the first time (a new container, the first request) is read again
``FIRST_WINDOW`` later, so that its rate is measured too; only where the clock did not move
meanwhile (a virtual clock) is it the average since the container (or the node) started. It is
written as a quantity in nanocores (``12345n``, ``5m``), memory (the working set) in bytes in
the binary suffixes (``4Mi``, ``35480Ki``), both in the canonical form the API server writes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any

import attrs

from kubecore._api.discovery import METRICS_GROUP, METRICS_RESOURCES
from kubecore._api.errors import ApiError, not_allowed, not_found
from kubecore._api.kubelet import ApiKubelet
from kubecore._api.request import Exchange, Request, send_json
from kubecore._api.selectors import field_selector, label_selector
from kubecore._util.timefmt import parse_time, rfc3339

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
MIN_WINDOW = 0.5
"""Seconds two reads must be apart to make a CPU rate of them."""
FIRST_WINDOW = 0.5
"""Seconds between the two reads of a new counter's first measure."""
POD_FIELDS = ("metadata.name", "metadata.namespace")
NODE_FIELDS = ("metadata.name",)


def cpu_quantity(nanocores: int) -> str:
    """Nanocores as a canonical decimal quantity: ``2``, ``250m``, ``12u``, ``12345n``."""
    value = max(0, int(nanocores))
    for suffix, scale in (("", 10**9), ("m", 10**6), ("u", 10**3)):
        if value % scale == 0:
            return f"{value // scale}{suffix}"
    return f"{value}n"


def memory_quantity(size: int) -> str:
    """Bytes as a canonical binary quantity: ``4Mi``, ``35480Ki``, ``1000`` (not a multiple of
    1024)."""
    value = max(0, int(size))
    if value == 0:
        return "0"
    suffix = ""
    for unit in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"):
        if value % 1024:
            break
        value //= 1024
        suffix = unit
    return f"{value}{suffix}"


def _seconds(seconds: float) -> str:
    """A window as a Go duration (``10.5s``)."""
    return f"{round(seconds, 3):g}s"


@attrs.frozen
class Usage:
    """A CPU rate and the window it was measured over."""

    nanocores: int
    window: float


@attrs.frozen
class _Sample:
    at: float
    nanos: int
    usage: Usage | None = None
    """The rate measured when this sample was kept (None: the first one)."""


class CpuRates:
    """CPU rates from cumulative counters read at successive times (thread-safe)."""

    def __init__(self, min_window: float = MIN_WINDOW) -> None:
        self._min_window = min_window
        self._samples: dict[str, _Sample] = {}
        self._lock = threading.Lock()

    def usage(self, key: str, now: float, nanos: int, started: float | None) -> Usage:
        """The rate of ``key``'s counter (``nanos`` at ``now``) since the previous read kept
        (at least ``min_window`` before); before there is one, since ``started`` (when the
        counter was 0)."""
        with self._lock:
            last = self._samples.get(key)
            if last is None or nanos < last.nanos:  # new, or its counter started again
                self._samples[key] = _Sample(now, nanos)
            elif now - last.at >= self._min_window:
                usage = Usage(int((nanos - last.nanos) / (now - last.at)), now - last.at)
                self._samples[key] = _Sample(now, nanos, usage)
                return usage
            elif last.usage is not None:
                return last.usage
        since = max(self._min_window, now - started) if started is not None else self._min_window
        return Usage(int(nanos / since), since)

    def knows(self, keys: Iterable[str]) -> bool:
        """Whether every counter of ``keys`` has been read before."""
        with self._lock:
            return all(key in self._samples for key in keys)

    def retain(self, keys: Iterable[str]) -> None:
        """Forget every counter but ``keys`` (the node's and its current containers')."""
        keep = set(keys)
        with self._lock:
            self._samples = {k: v for k, v in self._samples.items() if k in keep}


def _started(document: dict[str, Any]) -> float | None:
    return parse_time(str(document.get("startTime") or ""))


@attrs.frozen
class _Counter:
    nanos: int
    """Cumulative CPU nanoseconds (``usageCoreNanoSeconds``)."""
    started: float | None
    rate: int | None
    """The summary's own rate (``usageNanoCores``), timed by the runtime's clock."""


def _counters(summary: dict[str, Any]) -> dict[str, _Counter]:
    """Each CPU counter of a resource summary: the node's, each container's as
    ``<pod uid>/<name>``."""
    documents = [("node", summary.get("node") or {})]
    for pod in summary.get("pods", []):
        documents += [(f"{pod['podRef']['uid']}/{c['name']}", c) for c in pod.get("containers", [])]
    counters = {}
    for key, document in documents:
        cpu = document.get("cpu") or {}
        rate = cpu.get("usageNanoCores")
        counters[key] = _Counter(
            int(cpu.get("usageCoreNanoSeconds") or 0),
            _started(document),
            None if rate is None else int(rate),
        )
    return counters


def _usage(cpu: Usage, memory: dict[str, Any] | None) -> dict[str, str]:
    working_set = int((memory or {}).get("workingSetBytes") or 0)
    return {"cpu": cpu_quantity(cpu.nanocores), "memory": memory_quantity(working_set)}


class MetricsApi:
    """``/apis/metrics.k8s.io/...``: the group, its resource list, PodMetrics and NodeMetrics."""

    def __init__(self, kubelet: ApiKubelet, sleep: Callable[[float], None] = time.sleep) -> None:
        self._kubelet = kubelet
        self._rates = CpuRates()
        self._sleep = sleep

    def handle(self, exchange: Exchange, request: Request, rest: tuple[str, ...]) -> None:
        """``rest``: the path after ``/apis/metrics.k8s.io``."""
        if rest == ():
            send_json(exchange, METRICS_GROUP)
            return
        if rest == (VERSION,):
            send_json(exchange, METRICS_RESOURCES)
            return
        path = rest[1:] if rest[:1] == (VERSION,) else None
        if path and request.flag("watch"):
            raise not_allowed(f"watch is not supported on {GROUP} (list again instead)")
        if path and path[0] == "nodes" and len(path) <= 2:
            self._nodes(exchange, request, path[1:])
        elif path and path[0] == "pods" and len(path) == 1:
            self._pods(exchange, request, None, ())
        elif path and path[0] == "namespaces" and len(path) in (3, 4) and path[2] == "pods":
            self._pods(exchange, request, path[1], path[3:])
        else:
            raise ApiError(
                HTTPStatus.NOT_FOUND,
                "NotFound",
                f"the server could not find /apis/{GROUP}/{'/'.join(rest)}",
            )

    # --- reading the figures

    def read(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The node's and the pods' metrics documents, now. When a counter is new (a container
        just started, or the first read since the agent started), the figures are read again
        ``FIRST_WINDOW`` later, so that its rate is measured over a window of its own, not
        guessed (metrics-server, for the same reason, needs two scrapes)."""
        now, summary = self._summary()
        counters = _counters(summary)
        if not self._rates.knows(counters):
            for key, counter in counters.items():
                self._rates.usage(key, now, counter.nanos, counter.started)
            self._sleep(FIRST_WINDOW)
            now, summary = self._summary()
            counters = _counters(summary)
        usage = {key: self._usage(key, now, counter) for key, counter in counters.items()}
        self._rates.retain(usage)
        labels = {pod.uid: dict(pod.metadata.labels) for pod in self._kubelet.pods()}
        pods: list[dict[str, Any]] = []
        for pod in summary.get("pods", []):
            ref = pod["podRef"]
            measured = [(c, usage[f"{ref['uid']}/{c['name']}"]) for c in pod.get("containers", [])]
            if not measured:  # metrics-server leaves out a pod it has no figures of
                continue
            meta = {"name": ref["name"], "namespace": ref["namespace"]}
            window = max(u.window for _, u in measured)
            containers = [
                {"name": c["name"], "usage": _usage(u, c.get("memory"))} for c, u in measured
            ]
            pods.append(
                _metrics("PodMetrics", meta, labels.get(ref["uid"], {}), now, window)
                | {"containers": containers}
            )
        return self._node(summary.get("node") or {}, usage["node"], now), pods

    def _usage(self, key: str, now: float, counter: _Counter) -> Usage:
        """The counter's rate since this API last read it; the summary's own rate when it
        has one (timed by the runtime, not by when the runtime answered)."""
        measured = self._rates.usage(key, now, counter.nanos, counter.started)
        if counter.rate is None:
            return measured
        return Usage(counter.rate, measured.window)

    def _summary(self) -> tuple[float, dict[str, Any]]:
        """The resource summary, with the time just before it was read: the runtime's
        counters are the first thing it reads, so that is when they were read."""
        now = self._kubelet.clock.now()
        return now, self._kubelet.views.resource_summary()

    def _node(self, node: dict[str, Any], usage: Usage, now: float) -> dict[str, Any]:
        config = self._kubelet.config
        meta = {"name": config.node_name}
        return _metrics("NodeMetrics", meta, config.labels(), now, usage.window) | {
            "usage": _usage(usage, node.get("memory"))
        }

    # --- the resources

    def _nodes(self, exchange: Exchange, request: Request, name: tuple[str, ...]) -> None:
        node, _ = self.read()
        if name:
            if name[0] != node["metadata"]["name"]:
                raise not_found(f"nodes.{GROUP}", name[0])
            send_json(exchange, node)
            return
        fields = field_selector(request.param("fieldSelector"), NODE_FIELDS)
        labels = label_selector(request.param("labelSelector"))
        shown = [node] if fields({"metadata.name": node["metadata"]["name"]}) else []
        shown = [n for n in shown if labels(n["metadata"].get("labels") or {})]
        send_json(exchange, _metrics_list("NodeMetricsList", shown))

    def _pods(
        self, exchange: Exchange, request: Request, namespace: str | None, name: tuple[str, ...]
    ) -> None:
        _, pods = self.read()
        if namespace is not None:
            pods = [p for p in pods if p["metadata"]["namespace"] == namespace]
        if name:
            for pod in pods:
                if pod["metadata"]["name"] == name[0]:
                    send_json(exchange, pod)
                    return
            raise not_found(f"pods.{GROUP}", name[0])
        fields = field_selector(request.param("fieldSelector"), POD_FIELDS)
        labels = label_selector(request.param("labelSelector"))
        shown = [
            p
            for p in pods
            if fields({f"metadata.{k}": v for k, v in p["metadata"].items() if k != "labels"})
            and labels(p["metadata"].get("labels") or {})
        ]
        send_json(exchange, _metrics_list("PodMetricsList", shown))


def _metrics(
    kind: str, meta: dict[str, str], labels: dict[str, str], now: float, window: float
) -> dict[str, Any]:
    stamp = rfc3339(now)
    metadata: dict[str, Any] = {**meta, "creationTimestamp": stamp}
    if labels:
        metadata["labels"] = labels
    return {
        "kind": kind,
        "apiVersion": GROUP_VERSION,
        "metadata": metadata,
        "timestamp": stamp,
        "window": _seconds(window),
    }


def _metrics_list(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": kind, "apiVersion": GROUP_VERSION, "metadata": {}, "items": items}
