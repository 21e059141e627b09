"""The shipped runtime conformance suite (kubecore.testing.conformance) on the real engine."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest

from kubecore._contract.labels import POD_NAME_LABEL, POD_NAMESPACE_LABEL
from kubecore._plugins.registry import RuntimeBundle, load_runtime
from kubecore.testing.conformance import (
    Harness,
    RuntimeConformance,
    Workloads,
    busybox_workloads,
)
from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.helpers import OOM_HOG

pytestmark = pytest.mark.docker

NAMESPACE = "conformance"
"""The pod namespace the suite's sandboxes are made in (its harness's)."""


@pytest.fixture
def made_by() -> list[str]:
    """The name prefixes of the pods this test's harness made (kept for the bundle's teardown)."""
    return []


def load_docker(engine: TestEngine) -> RuntimeBundle:
    return load_runtime(
        "docker",
        base_url=engine.base_url,
        timeout=30,
        sandbox_image=engine.pause_image,
        sandbox_stop_timeout=2,
    )


class TestDockerRuntime(RuntimeConformance):
    STOP_TIMEOUT = 5.0
    STRICT = True  # no check skipped but for a capability the runtime lacks

    @pytest.fixture
    def bundle(self, engine: TestEngine, raw: Any, made_by: list[str]) -> Iterator[RuntimeBundle]:
        bundle = load_docker(engine)
        yield bundle
        bundle.runtime.close()
        # The suite removes what it made; this only catches what a failed check left behind:
        # the pods of this test's harness (other tests' checks run beside it in the namespace).
        for entry in raw.containers(
            all=True, filters={"label": f"{POD_NAMESPACE_LABEL}={NAMESPACE}"}
        ):
            if entry["Labels"].get(POD_NAME_LABEL, "").startswith(tuple(made_by)):
                with contextlib.suppress(Exception):
                    raw.remove_container(entry["Id"], force=True, v=True)

    @pytest.fixture(autouse=True)
    def _name_the_harness(self, harness: Harness, made_by: list[str]) -> None:
        made_by.append(harness.prefix)

    @pytest.fixture
    def reopen(self, engine: TestEngine) -> Iterator[Callable[[], RuntimeBundle]]:
        """A second adapter on the same engine, as a restarted agent loads it."""
        opened: list[RuntimeBundle] = []

        def load() -> RuntimeBundle:
            opened.append(load_docker(engine))
            return opened[-1]

        yield load
        for bundle in opened:
            bundle.runtime.close()

    @pytest.fixture
    def workloads(self, engine: TestEngine) -> Workloads:
        # The OOM hog is not PID 1, so the engine's oom event surely precedes the exit.
        return attrs.evolve(
            busybox_workloads(engine.image, pullable_image=engine.pullable_image),
            consume_memory=OOM_HOG,
            timeout=20.0,
        )

    @pytest.fixture
    def unmanaged_container(self, raw: Any, engine: TestEngine, cleanup: str) -> Callable[[], str]:
        key, _, value = cleanup.partition("=")

        def create() -> str:
            return str(raw.create_container(engine.image, labels={key: value})["Id"])

        return create
