"""One duration formatter for every table: kubectl's ``AGE`` column, the CLI's table and
``kubecore etcd get`` read the same age the same way, as apimachinery's ``HumanDuration``."""

from __future__ import annotations

import pytest

from kubecore._util.timefmt import age, human_duration, parse_rfc3339, parse_time, rfc3339


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
