from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubecore._model.quantity import cpu_millis, memory_bytes, parse_quantity
from kubecore.testing.strategies import quantities


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", Decimal(0)),
        ("1", Decimal(1)),
        ("0.5", Decimal("0.5")),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("+1", Decimal(1)),
        ("-1", Decimal(-1)),
        ("250m", Decimal("0.25")),
        ("100u", Decimal("0.0001")),
        ("5n", Decimal("0.000000005")),
        ("100k", Decimal(100_000)),
        ("1M", Decimal(10**6)),
        ("1G", Decimal(10**9)),
        ("2T", Decimal(2 * 10**12)),
        ("1P", Decimal(10**15)),
        ("1E", Decimal(10**18)),
        ("1Ki", Decimal(1024)),
        ("128Mi", Decimal(128 * 1024**2)),
        ("1.5Gi", Decimal(1536 * 1024**2)),
        ("1Ti", Decimal(1024**4)),
        ("1Pi", Decimal(1024**5)),
        ("1Ei", Decimal(1024**6)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("2.5e-3", Decimal("0.0025")),
        ("12e+2", Decimal(1200)),
    ],
)
def test_parse_quantity(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text",
    ["", ".", "abc", "1K", "1ki", "1mi", "1e", "1 Mi", " 1", "1 ", "1.2.3", "--1", "1Mix", "0x10"],
)
def test_parse_quantity_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity(text)


def test_unknown_suffix_is_named() -> None:
    with pytest.raises(ValueError, match="unknown suffix 'K'"):
        parse_quantity("10K")


def test_huge_exponent_is_refused() -> None:
    with pytest.raises(ValueError, match="exponent out of range"):
        parse_quantity("1e999999999")


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("250m", 250),
        ("0.5", 500),
        ("1", 1000),
        ("2", 2000),
        ("1.5", 1500),
        ("1u", 1),  # rounds up, like MilliValue()
        ("1n", 1),
        ("0.0001", 1),
        ("1001u", 2),
        ("0", 0),
        ("1k", 1_000_000),
        ("100e-3", 100),
    ],
)
def test_cpu_millis(text: str, millis: int) -> None:
    assert cpu_millis(text) == millis


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("128Mi", 134_217_728),
        ("1G", 1_000_000_000),
        ("1Gi", 1_073_741_824),
        ("1e3", 1000),
        ("1.5Gi", 1_610_612_736),
        ("100k", 100_000),
        ("0.5", 1),  # rounds up to a whole byte
        ("1500m", 2),
        ("1", 1),
        ("0", 0),
        ("64Ki", 65_536),
    ],
)
def test_memory_bytes(text: str, size: int) -> None:
    assert memory_bytes(text) == size


@pytest.mark.parametrize("func", [cpu_millis, memory_bytes])
def test_negative_is_rejected_for_resources(func: object) -> None:
    assert callable(func)
    with pytest.raises(ValueError, match="must not be negative"):
        func("-1")


def test_precision_is_exact_beyond_28_digits() -> None:
    text = "1." + "0" * 40 + "1"
    assert cpu_millis(text) == 1001
    assert memory_bytes(text) == 2


@given(quantities())
def test_strategy_quantities_parse(text: str) -> None:
    assert parse_quantity(text) >= 0
    assert cpu_millis(text) >= 0
    assert memory_bytes(text) >= 0


@given(st.integers(0, 10**12))
def test_millis_round_trip(millis: int) -> None:
    assert cpu_millis(f"{millis}m") == millis
    assert memory_bytes(f"{millis}m") == -(-millis // 1000)
