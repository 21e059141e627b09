"""The suite's hypothesis profiles, and the fixture tests of two folders share.

``ci`` (chosen when the ``CI`` environment variable is set): the same examples on every run, so
CI never fails at random; a counterexample found locally becomes a pinned ``@example``. ``dev``
(the default; ``HYPOTHESIS_PROFILE`` picks another): random and thorough, to find new ones.
``quick``: ``ci`` with fewer examples, for the unit tests on the other supported Pythons.

``live`` (the kubelet HTTP API tests and the log-query tests): a real Kubelet on the fake runtime
behind a ``KubeletServer``, as ``(kubelet, runtime, server)``."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from tests.api.support import Live

# A machine shared by parallel builds is slow at times: time is never a failure.
_PATIENT = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}

settings.register_profile(
    "ci", derandomize=True, database=None, max_examples=50, print_blob=True, **_PATIENT
)
settings.register_profile("dev", max_examples=200, **_PATIENT)
# The unit tests on the other supported Pythons (scripts/test): the same few examples each run.
settings.register_profile(
    "quick", derandomize=True, database=None, max_examples=10, print_blob=True, **_PATIENT
)


def profile_name(environ: Mapping[str, str]) -> str:
    if environ.get("CI"):
        return "ci"
    return environ.get("HYPOTHESIS_PROFILE", "dev")


settings.load_profile(profile_name(os.environ))


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    from tests.api.support import live_server

    with live_server(tmp_path) as found:
        yield found


def pytest_sessionstart(session: pytest.Session) -> None:
    """A run that requires every engine (CI) also requires kubectl, whose tests otherwise skip."""
    import shutil
    import sys

    from tests.engines.availability import REQUIRE_ENGINES, engines_required

    beside_python = Path(sys.executable).parent / "kubectl"
    if engines_required() and not (shutil.which("kubectl") or beside_python.exists()):
        pytest.exit(f"{REQUIRE_ENGINES} is set and no kubectl binary is installed", returncode=1)
