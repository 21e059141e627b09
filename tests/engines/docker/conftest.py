"""Fixtures for the tests against a real Docker engine (brought up by scripts/test-engine.sh up).

The session fixture ``engine`` skips the Docker tests only when no engine answers; with an engine
but without the test image or registries, the tests fail (run ``scripts/test-engine.sh up``).
Every test labels what it creates with its own uid and removes it by that label afterwards.
The agent's end-to-end tests run their pods in a ``namespace`` of their own, on agents built by
``make_agent``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.errors import RootDirInUse
from kubecore._contract.labels import POD_NAMESPACE_LABEL
from kubecore._contract.protocols import Puller
from kubecore._contract.values import ContainerConfig, SandboxConfig
from kubecore._kuberuntime.credentials import Keyring
from kubecore._model.v1 import Pod
from kubecore._util.clock import SystemClock
from kubecore.runtime import CONTAINER_NAME_LABEL, MANAGED_LABEL, sandbox_labels
from kubecore_docker import DockerConnection, DockerOptions, DockerPuller, DockerRuntime
from tests.engines.docker.e2e_helpers import AgentFactory
from tests.engines.docker.helpers import (
    ENGINE_STATE as ENGINE_STATE,
)
from tests.engines.docker.helpers import (
    SLEEPER,
    TEST_LABEL,
    TestEngine,
    find_docker_engine,
)


@pytest.fixture(scope="session")
def engine() -> TestEngine:
    return find_docker_engine()


@pytest.fixture(scope="session")
def raw(engine: TestEngine) -> Iterator[Any]:
    """A plain docker-py client for checking what the adapter did (never used to fake it)."""
    import docker

    client = docker.APIClient(base_url=engine.base_url, version="auto", timeout=30)
    yield client
    client.close()


@pytest.fixture
def test_uid() -> str:
    return uuid.uuid4().hex[:12]


def remove_labelled(raw: Any, label: str) -> None:
    for entry in raw.containers(all=True, filters={"label": label}):
        with contextlib.suppress(Exception):
            raw.remove_container(entry["Id"], force=True, v=True)


@pytest.fixture
def cleanup(raw: Any, test_uid: str) -> Iterator[str]:
    """The label every container of this test carries; they are removed afterwards."""
    label = f"{TEST_LABEL}={test_uid}"
    yield label
    remove_labelled(raw, label)


@pytest.fixture
def options(engine: TestEngine) -> DockerOptions:
    return DockerOptions(
        base_url=engine.base_url,
        timeout=30,
        sandbox_image=engine.pause_image,
        sandbox_stop_timeout=2,
    )


@pytest.fixture
def connection(options: DockerOptions) -> Iterator[DockerConnection]:
    conn = DockerConnection(options)
    yield conn
    conn.close()


@pytest.fixture
def runtime(connection: DockerConnection, cleanup: str) -> Iterator[DockerRuntime]:
    rt = DockerRuntime(connection)
    yield rt
    rt.close()


@pytest.fixture
def puller(connection: DockerConnection) -> DockerPuller:
    return DockerPuller(connection)


SandboxFactory = Callable[..., SandboxConfig]
ContainerFactory = Callable[..., ContainerConfig]


@pytest.fixture
def make_sandbox(test_uid: str) -> SandboxFactory:
    counter = iter(range(1000))

    def make(**overrides: Any) -> SandboxConfig:
        n = next(counter)
        values: dict[str, Any] = {
            "name": f"pod{n}-{test_uid}",
            "namespace": "kubecore-test",
            "uid": f"{test_uid}-{n}",
            "labels": {TEST_LABEL: test_uid},
        }
        values.update(overrides)
        identity = sandbox_labels(values["name"], values["namespace"], values["uid"])
        values["labels"] = {**identity, TEST_LABEL: test_uid, **values["labels"]}
        return SandboxConfig(**values)

    return make


@pytest.fixture
def make_container(engine: TestEngine, test_uid: str) -> ContainerFactory:
    def make(name: str = "app", **overrides: Any) -> ContainerConfig:
        values: dict[str, Any] = {"name": name, "image": engine.image, "command": SLEEPER}
        values.update(overrides)
        # What the core writes; the pod's identity is the sandbox's (``pod_labels``).
        identity = {MANAGED_LABEL: "true", CONTAINER_NAME_LABEL: values["name"]}
        values["labels"] = {**identity, TEST_LABEL: test_uid, **values.get("labels", {})}
        return ContainerConfig(**values)

    return make


# --- the agent end to end: a namespace of the test's own, agents on the engine ----------------


@pytest.fixture
def own_images(raw: Any) -> Iterator[list[str]]:
    """Image references this test made; removed after its containers are gone."""
    refs: list[str] = []
    yield refs
    for ref in refs:
        with contextlib.suppress(Exception):
            raw.remove_image(ref, force=True)


@pytest.fixture
def namespace(raw: Any, test_uid: str, own_images: list[str]) -> Iterator[str]:
    ns = f"e2e-{test_uid}"
    yield ns
    remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={ns}")


@pytest.fixture
def make_agent(
    engine: TestEngine, namespace: str, test_uid: str, tmp_path: Path
) -> Iterator[AgentFactory]:
    """Builds started agents on the engine (each with its own connection); stops them after.
    Their node is the test's own unless told (tests run side by side on the one engine, and two
    live agents may not hold one node name on an engine)."""
    made: list[tuple[Kubelet, DockerRuntime]] = []
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
        options = DockerOptions(
            base_url=engine.base_url,
            timeout=30,
            sandbox_image=engine.pause_image,
            sandbox_stop_timeout=2,
        )
        connection = DockerConnection(options)
        runtime = DockerRuntime(connection)
        puller: Puller = DockerPuller(connection)
        if wrap is not None:
            puller = wrap(puller)
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
                runtime,
                puller,
                config=KubeletConfig(**{**values, "root_dir": root_dir}),
                clock=SystemClock(),
                pull_secrets=pull_secrets,
            )

        try:
            kubelet = build(values["root_dir"])
        except RootDirInUse:  # a second agent beside one still running: a root dir of its own
            kubelet = build(f"{values['root_dir']}-{len(made)}")
        made.append((kubelet, runtime))
        if pods:
            kubelet.set_pods(pods)
        if start:
            kubelet.start()
        return kubelet

    yield make
    for kubelet, runtime in reversed(made):
        kubelet.stop(timeout=10)
        runtime.close()
