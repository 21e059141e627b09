"""The shipped runtime conformance suite (kubecore.testing.conformance) on the real engine."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest

from kubecore._plugins.registry import RuntimeBundle, load_runtime
from kubecore.testing.conformance import RuntimeConformance, Workloads, busybox_workloads
from tests.engines.docker.conftest import TestEngine, remove_labelled
from tests.engines.docker.helpers import OOM_HOG

pytestmark = pytest.mark.docker


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
    def bundle(self, engine: TestEngine, raw: Any) -> Iterator[RuntimeBundle]:
        bundle = load_docker(engine)
        yield bundle
        bundle.runtime.close()
        # The suite removes what it made; this only catches what a failed check left behind.
        remove_labelled(raw, "io.kubernetes.pod.namespace=conformance")

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
