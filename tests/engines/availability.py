"""What a test does when an engine it needs is not there: a contributor who runs without an
engine gets a skip saying which engine and how to bring it up; a run that requires the engines
(``KUBECORE_TEST_REQUIRE_ENGINES=1``, which ``scripts/test`` sets on CI) fails instead, so a
containerd that does not start can never turn the CRI tests into a green run of skips."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_ENGINES = "KUBECORE_TEST_REQUIRE_ENGINES"


def engines_required() -> bool:
    return os.environ.get(REQUIRE_ENGINES, "") not in ("", "0")


def engine_unavailable(reason: str) -> NoReturn:
    """Skip with ``reason``, or fail with it when the run requires every engine."""
    if engines_required():
        pytest.fail(
            f"{reason} ({REQUIRE_ENGINES} is set: this run needs every engine)", pytrace=False
        )
    pytest.skip(reason)
