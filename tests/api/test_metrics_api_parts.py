"""The resource metrics API's parts: quantities in the canonical form the API server writes
(read back exactly by the quantity parser), CPU rates over a window, and the documents made of
a resource summary."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._api.metrics_api import (
    FIRST_WINDOW,
    CpuRates,
    MetricsApi,
    cpu_quantity,
    memory_quantity,
)
from kubecore._model.quantity import parse_quantity
from kubecore._model.v1 import ObjectMeta, Pod, PodSpec
from kubecore._util.timefmt import rfc3339


def test_cpu_quantities_take_the_largest_exact_suffix() -> None:
    assert cpu_quantity(0) == "0"
    assert cpu_quantity(2_000_000_000) == "2"
    assert cpu_quantity(250_000_000) == "250m"
    assert cpu_quantity(12_000) == "12u"
    assert cpu_quantity(12_345) == "12345n"
    assert cpu_quantity(-5) == "0"


def test_memory_quantities_take_the_largest_exact_binary_suffix() -> None:
    assert memory_quantity(0) == "0"
    assert memory_quantity(4 << 20) == "4Mi"
    assert memory_quantity(35480 * 1024) == "35480Ki"
    assert memory_quantity(1000) == "1000"
    assert memory_quantity(3 << 30) == "3Gi"


@given(st.integers(0, 10**15))
@example(999_999_999)
def test_a_cpu_quantity_reads_back_as_its_nanocores(nanocores: int) -> None:
    assert parse_quantity(cpu_quantity(nanocores)) == Decimal(nanocores) / 10**9


@given(st.integers(0, 2**62))
@example(1023)
@example(1 << 60)
def test_a_memory_quantity_reads_back_as_its_bytes(size: int) -> None:
    assert parse_quantity(memory_quantity(size)) == size


def test_a_rate_is_measured_between_reads_at_least_the_window_apart() -> None:
    rates = CpuRates(min_window=1.0)
    first = rates.usage("c", 100.0, 5_000_000_000, started=90.0)
    assert (first.nanocores, first.window) == (500_000_000, 10.0)  # since the start
    close = rates.usage("c", 100.5, 5_300_000_000, started=90.0)
    assert close.window == 10.5  # no rate yet: still the average since the start
    second = rates.usage("c", 102.0, 5_400_000_000, started=90.0)
    assert (second.nanocores, second.window) == (200_000_000, 2.0)
    again = rates.usage("c", 102.5, 5_500_000_000, started=90.0)
    assert again == second  # too close: the last rate stands


def test_a_counter_that_starts_again_is_a_new_container() -> None:
    rates = CpuRates(min_window=1.0)
    rates.usage("c", 100.0, 9_000_000_000, started=0.0)
    restarted = rates.usage("c", 105.0, 1_000_000_000, started=104.0)
    assert (restarted.nanocores, restarted.window) == (1_000_000_000, 1.0)


def test_forgotten_counters_start_over() -> None:
    rates = CpuRates(min_window=1.0)
    rates.usage("c", 100.0, 1_000_000_000, started=99.0)
    rates.retain(["node"])
    fresh = rates.usage("c", 103.0, 4_000_000_000, started=99.0)
    assert fresh.window == 4.0  # no sample kept: since the start again


class _Clock:
    def __init__(self) -> None:
        self.at = 1000.0

    def now(self) -> float:
        return self.at


class _Config:
    node_name = "node-1"

    def labels(self) -> dict[str, str]:
        return {"kubernetes.io/hostname": "node-1"}


class _Kubelet:
    """The agent as the metrics API reads it: a container using a quarter of a core since it
    started 100 s ago, and a node using one and a half."""

    def __init__(self) -> None:
        self.clock = _Clock()
        self.config = _Config()
        self.reads = 0

    @property
    def views(self) -> _Kubelet:
        return self

    def resource_summary(self) -> dict[str, Any]:
        self.reads += 1
        at = self.clock.at
        container = {
            "name": "app",
            "startTime": rfc3339(900.0),
            "cpu": {"usageCoreNanoSeconds": int((at - 900.0) * 250_000_000)},
            "memory": {"workingSetBytes": 35480 * 1024},
        }
        return {
            "node": {
                "startTime": rfc3339(0.0),
                "cpu": {"usageCoreNanoSeconds": int(at * 1_500_000_000)},
                "memory": {"workingSetBytes": 2 << 30},
            },
            "pods": [
                {"podRef": {"name": "web", "namespace": "default", "uid": "u1"},
                 "containers": [container]},
                {"podRef": {"name": "idle", "namespace": "default", "uid": "u2"},
                 "containers": []},
            ],
        }  # fmt: skip

    def pods(self) -> list[Pod]:
        meta = ObjectMeta(name="web", uid="u1", labels={"app": "web"})
        return [Pod(meta, PodSpec(containers=()))]


def test_a_first_read_measures_its_rates_over_a_window_of_its_own() -> None:
    kubelet = _Kubelet()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        kubelet.clock.at += seconds

    api = MetricsApi(cast(Any, kubelet), sleep=sleep)
    node, pods = api.read()
    assert slept == [FIRST_WINDOW] and kubelet.reads == 2
    (web,) = pods  # a pod without containers has no figures: left out
    assert web["metadata"] == {
        "name": "web",
        "namespace": "default",
        "creationTimestamp": rfc3339(1000.5),
        "labels": {"app": "web"},
    }
    assert web["window"] == "0.5s" and web["timestamp"] == rfc3339(1000.5)
    assert web["containers"] == [{"name": "app", "usage": {"cpu": "250m", "memory": "35480Ki"}}]
    assert node["usage"] == {"cpu": "1500m", "memory": "2Gi"}
    assert node["metadata"]["labels"] == {"kubernetes.io/hostname": "node-1"}
    kubelet.clock.at += 10
    _, (again,) = api.read()
    assert slept == [FIRST_WINDOW] and kubelet.reads == 3  # known counters: one read
    assert again["window"] == "10s" and again["containers"][0]["usage"]["cpu"] == "250m"


def test_the_summary_s_own_rate_is_taken_when_it_has_one() -> None:
    """The runtime times its counters itself (Docker's ``read``): that rate is the one shown,
    over the window since this API last read the counter."""
    kubelet = _Kubelet()
    plain = kubelet.views.resource_summary

    def rated() -> dict[str, Any]:
        summary = plain()
        summary["pods"][0]["containers"][0]["cpu"]["usageNanoCores"] = 199_000_000
        return summary

    kubelet.resource_summary = rated  # type: ignore[method-assign]
    api = MetricsApi(cast(Any, kubelet), sleep=lambda s: setattr(kubelet.clock, "at", 1000.5))
    _, (web,) = api.read()
    assert web["containers"][0]["usage"]["cpu"] == "199m" and web["window"] == "0.5s"
