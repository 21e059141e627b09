"""One duration formatter for every table: kubectl's ``AGE`` column, the CLI's table and
``kubecore etcd get`` read the same age the same way, as apimachinery's ``HumanDuration``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubecore._util.timefmt import (
    age,
    epoch_nanos,
    format_timestamp,
    human_duration,
    parse_rfc3339,
    parse_time,
    rfc3339,
    rfc3339_micro,
)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-3, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (59, "59s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (600, "10m"),
        (700, "11m"),
        (3 * 3600 + 60, "3h1m"),
        (3 * 3600 + 5 * 60, "3h5m"),
        (20 * 3600, "20h"),
        (3 * 86400 + 3600, "3d1h"),
        (3 * 86400 + 2 * 3600, "3d2h"),
        (30 * 86400, "30d"),
        (40 * 86400, "40d"),
        (730 * 86400, "2y"),
        (800 * 86400, "2y70d"),
        (8 * 365 * 86400 + 100 * 86400, "8y"),
    ],
)
def test_ages_read_as_kubectl_prints_them(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_every_table_reads_ages_the_same_way() -> None:
    from kubecore._api import events as _apievents
    from kubecore._api import tables as _apitables
    from kubecore._cli import output
    from kubecore_etcd import _cli as _etcd_cli

    for module in (_apitables, _apievents):
        assert module.time_age is age
    for module in (output, _etcd_cli):
        assert module.age is age


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2024-05-01T12:00:00Z", 1714564800.0),
        ("2024-05-01T12:00:00", 1714564800.0),  # no zone: UTC, whatever the host's
        ("2024-05-01T14:00:00+02:00", 1714564800.0),
        ("2024-05-01T12:00:00.5Z", 1714564800.5),
    ],
)
def test_rfc3339_times_are_read_as_the_api_writes_them(text: str, seconds: float) -> None:
    assert parse_rfc3339(text) == seconds
    assert rfc3339(seconds) == "2024-05-01T12:00:00Z"


@pytest.mark.parametrize("text", ["", "yesterday", "2024-13-01T00:00:00Z"])
def test_a_time_that_is_not_one_is_unknown(text: str) -> None:
    assert parse_time(text) is None
    assert age(text, 1e9) == "<unknown>"
    if text:
        with pytest.raises(ValueError, match="not an RFC 3339 time"):
            parse_rfc3339(text)


_MOMENTS = st.integers(min_value=0, max_value=253402300799 * 10**9)  # up to 9999-12-31


@given(_MOMENTS)
def test_a_log_time_reads_back_to_the_nanosecond(nanos: int) -> None:
    text = format_timestamp(nanos)
    seconds, fraction = divmod(nanos, 10**9)
    assert parse_rfc3339(text) == seconds + fraction / 1e9
    assert parse_rfc3339(text.encode()) == parse_rfc3339(text)


@given(st.integers(min_value=0, max_value=253402300799))
def test_an_api_time_reads_back_to_the_second(seconds: int) -> None:
    assert parse_rfc3339(rfc3339(seconds + 0.75)) == seconds


@given(st.integers(min_value=0, max_value=253402300799 * 10**6))
def test_a_micro_time_reads_back_to_the_microsecond(micros: int) -> None:
    ts = micros / 1e6
    assert parse_rfc3339(rfc3339_micro(ts)) == pytest.approx(ts, abs=1e-6)


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_a_float_time_becomes_the_nearest_nanosecond(ts: float) -> None:
    assert parse_rfc3339(format_timestamp(epoch_nanos(ts))) == pytest.approx(ts, abs=1e-6)


@pytest.mark.parametrize(
    "text", ["2024-05-01T12:00:00+24:00", "2024-02-30T00:00:00Z", "2024-05-01T12:00Z", b"\xff"]
)
def test_what_is_not_rfc_3339_is_refused_by_the_one_reader(text: str | bytes) -> None:
    with pytest.raises(ValueError, match="not an RFC 3339 time"):
        parse_rfc3339(text)


def test_every_reader_and_writer_of_times_is_the_one_in_timefmt() -> None:
    from kubecore import runtime
    from kubecore._observability import cri_log_format

    assert runtime.parse_rfc3339 is parse_rfc3339
    assert runtime.format_timestamp is cri_log_format.format_timestamp is format_timestamp
    stamped = b"2026-12-01T15:04:05.000000001Z stdout F x"
    record = cri_log_format.parse_record(stamped)
    assert record is not None and record.time == parse_rfc3339("2026-12-01T15:04:05.000000001Z")
