"""One duration formatter for every table: kubectl's ``AGE`` column, the CLI's table and
``kubecore etcd get`` read the same age the same way, as apimachinery's ``HumanDuration``."""

from __future__ import annotations

import pytest

from kubecore._timefmt import human_duration


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


def test_the_cli_table_and_the_api_table_agree() -> None:
    from kubecore._apiserver import human_duration as api_age
    from kubecore._cli import output

    assert api_age is human_duration
    assert output.human_duration is human_duration
