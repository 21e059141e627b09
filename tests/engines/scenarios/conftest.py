"""Fixtures of the scenarios that hold on every engine: ``engine`` runs each test once on Docker
(scripts/test-engine.sh) and once on the CRI on containerd (scripts/test-containerd.sh), skipping
on an engine that is not up; ``namespace`` is the test's own pod namespace, every sandbox and
container of which is removed afterwards; ``make_agent`` builds started agents on the engine.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.errors import RootDirInUse
from kubecore._contract.protocols import Puller
from kubecore._kuberuntime.credentials import Keyring
from kubecore._model.v1 import Pod
from kubecore._plugins.registry import RuntimeBundle
from kubecore._util.clock import SystemClock
from tests.engines.docker.e2e_helpers import AgentFactory
from tests.engines.engine_support import (
    CRI,
    DOCKER,
    EngineUnderTest,
    engine_under_test,
    unmount_under,
)


@pytest.fixture(
    scope="session",
    params=[
        pytest.param(DOCKER, marks=pytest.mark.docker),
        pytest.param(CRI, marks=pytest.mark.cri),
    ],
)
def engine(request: pytest.FixtureRequest) -> Iterator[EngineUnderTest]:
    with engine_under_test(request.param) as found:
        yield found


@pytest.fixture
def test_uid() -> str:
    return uuid.uuid4().hex[:12]


@pytest.fixture
def own_images(engine: EngineUnderTest) -> Iterator[list[str]]:
    """Image names this test made; removed after its containers are gone."""
    names: list[str] = []
    yield names
    for name in names:
        engine.remove_image(name)


@pytest.fixture
def host_mounts(tmp_path: Path) -> Iterator[None]:
    """After the test: nothing of it stays mounted on the host (a pod still running when its
    agent stopped keeps its memory-backed emptyDir's tmpfs on a runtime that binds host paths)."""
    yield
    unmount_under(tmp_path)


@pytest.fixture
def namespace(
    engine: EngineUnderTest, test_uid: str, own_images: list[str], host_mounts: None
) -> Iterator[str]:
    ns = f"e2e-{test_uid}"
    yield ns
    engine.remove_namespace(ns)


@pytest.fixture
def make_agent(
    engine: EngineUnderTest, namespace: str, test_uid: str, tmp_path: Path
) -> Iterator[AgentFactory]:
    """Builds started agents on the engine (each with a runtime of its own); stops them after.
    Their node is the test's own unless told (the engines are shared with other runs, and two
    live agents may not hold one node name on an engine)."""
    made: list[tuple[Kubelet, RuntimeBundle]] = []
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 192.0.2.53\nsearch example.invalid\n")

    def make(
        pods: list[Pod] | None = None,
        *,
        wrap: Callable[[Puller], Puller] | None = None,
        pull_secrets: dict[tuple[str, str], Keyring] | None = None,
        start: bool = True,
        **config: Any,
    ) -> Kubelet:
        bundle = engine.open(tmp_path)
        puller = bundle.puller if wrap is None else wrap(bundle.puller)
        values: dict[str, Any] = {
            "node_name": f"e2e-node-{test_uid}",
            "root_dir": str(tmp_path / "root"),
            "resolv_conf": str(resolv),
            "relist_interval": 0.3,
            "housekeeping_interval": 0.5,
            "resync_interval": 5.0,
        }
        values.update(config)

        def build(root_dir: str) -> Kubelet:
            return Kubelet(
                bundle.runtime,
                puller,
                config=KubeletConfig(**{**values, "root_dir": root_dir}),
                clock=SystemClock(),
                pull_secrets=pull_secrets,
            )

        try:
            kubelet = build(values["root_dir"])
        except RootDirInUse:  # a second agent beside one still running: a root dir of its own
            kubelet = build(f"{values['root_dir']}-{len(made)}")
        made.append((kubelet, bundle))
        if pods:
            kubelet.set_pods(pods)
        if start:
            kubelet.start()
        return kubelet

    yield make
    for kubelet, bundle in reversed(made):
        kubelet.stop(timeout=10)
        bundle.runtime.close()
