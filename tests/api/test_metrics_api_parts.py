"""The resource metrics API's pure parts: quantities in the canonical form the API server writes
(read back exactly by the quantity parser) and CPU rates over a window."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._api.metrics_api import CpuRates, cpu_quantity, memory_quantity
from kubecore._model.quantity import parse_quantity


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
