"""An engine that is missing: a skip for a contributor, a failure for a run that needs it."""

from __future__ import annotations

import pytest

from tests.engines.availability import REQUIRE_ENGINES, engine_unavailable


def test_a_missing_engine_is_a_skip_when_the_run_does_not_require_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(REQUIRE_ENGINES, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no containerd"):
        engine_unavailable("no containerd")
    monkeypatch.setenv(REQUIRE_ENGINES, "0")
    with pytest.raises(pytest.skip.Exception):
        engine_unavailable("no containerd")


def test_a_missing_engine_fails_a_run_that_requires_every_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(REQUIRE_ENGINES, "1")
    with pytest.raises(pytest.fail.Exception, match=r"no containerd.*needs every engine"):
        engine_unavailable("no containerd")


def test_the_cri_tests_fail_on_ci_when_containerd_could_not_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.engines.cri.support import find_containerd

    monkeypatch.setenv(REQUIRE_ENGINES, "1")
    monkeypatch.setenv("KUBECORE_TEST_CRI_ENDPOINT", "")
    with pytest.raises(pytest.fail.Exception, match="could not start"):
        find_containerd()
