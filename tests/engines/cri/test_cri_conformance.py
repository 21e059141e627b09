"""The shipped runtime conformance suite (kubecore.testing.conformance) on the test containerd,
through the ``cri`` plugin."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest

from kubecore._plugins.registry import RuntimeBundle
from kubecore.testing.conformance import (
    Harness,
    RuntimeConformance,
    Workloads,
    busybox_workloads,
)
from kubecore_cri._client import CriConnection, CriOptions
from kubecore_cri._pb import api_pb2 as pb
from kubecore_cri._plugin import create_cri_runtime
from tests.engines.cri.support import TEST_LABEL, RawCri, TestContainerd, TestRegistries

pytestmark = pytest.mark.cri

OOM_HOG = ("sh", "-c", "tail /dev/zero; sleep 0.5; exit 137")
"""Not PID 1, so the kernel's OOM kill surely precedes the exit (as on Docker)."""
NAMESPACE = "conformance"
"""The pod namespace the suite's sandboxes are made in (its harness's)."""


@pytest.fixture
def made_by() -> list[str]:
    """The name prefixes of the pods this test's harness made (kept for the bundle's teardown)."""
    return []


@pytest.fixture(scope="module")
def log_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cri-pod-logs")


def load_cri(containerd: TestContainerd, log_root: Path) -> RuntimeBundle:
    return create_cri_runtime(endpoint=containerd.endpoint, timeout=30, log_root=str(log_root))


class TestCriRuntime(RuntimeConformance):
    STOP_TIMEOUT = 5.0
    STRICT = True  # no check skipped but for a capability the runtime lacks

    @pytest.fixture
    def bundle(
        self, containerd: TestContainerd, log_root: Path, raw_cri: RawCri, made_by: list[str]
    ) -> Iterator[RuntimeBundle]:
        bundle = load_cri(containerd, log_root)
        yield bundle
        bundle.runtime.close()
        # The suite removes what it made; this only catches what a failed check left behind:
        # the pods of this test's harness (other tests' checks run beside it in the namespace).
        for prefix in made_by:
            for sandbox_id in raw_cri.sandboxes_named(NAMESPACE, prefix):
                raw_cri.stop_pod_sandbox(sandbox_id)
                raw_cri.remove_pod_sandbox(sandbox_id)

    @pytest.fixture(autouse=True)
    def _name_the_harness(self, harness: Harness, made_by: list[str]) -> None:
        made_by.append(harness.prefix)

    @pytest.fixture
    def reopen(
        self, containerd: TestContainerd, log_root: Path
    ) -> Iterator[Callable[[], RuntimeBundle]]:
        """A second adapter on the same containerd, as a restarted agent loads it."""
        opened: list[RuntimeBundle] = []

        def load() -> RuntimeBundle:
            opened.append(load_cri(containerd, log_root))
            return opened[-1]

        yield load
        for bundle in opened:
            bundle.runtime.close()

    @pytest.fixture
    def workloads(self, containerd: TestContainerd, registries: TestRegistries) -> Workloads:
        return attrs.evolve(
            busybox_workloads(containerd.image, pullable_image=registries.pullable_image),
            sandbox_image=containerd.pause_image,
            consume_memory=OOM_HOG,
            timeout=20.0,
        )

    @pytest.fixture
    def unmanaged_container(
        self, containerd: TestContainerd, log_root: Path, raw_cri: RawCri
    ) -> Iterator[Callable[[], str]]:
        """A sandbox and a container made through the CRI without kubecore's labels."""
        owner = {TEST_LABEL: uuid.uuid4().hex}
        namespace = f"unmanaged-{owner[TEST_LABEL][:10]}"  # the fixture's own
        connection = CriConnection(CriOptions(endpoint=containerd.endpoint))

        def create() -> str:
            uid = uuid.uuid4().hex
            config = pb.PodSandboxConfig(
                metadata=pb.PodSandboxMetadata(name="unmanaged", uid=uid, namespace=namespace),
                log_directory=str(log_root / uid),
                labels=owner,
            )
            sandbox_id = connection.call(
                "RunPodSandbox", pb.RunPodSandboxRequest(config=config)
            ).pod_sandbox_id
            container = pb.ContainerConfig(
                metadata=pb.ContainerMetadata(name="unmanaged"),
                image=pb.ImageSpec(image=containerd.image),
                command=["sleep", "600"],
                labels=owner,
                log_path="unmanaged.log",
            )
            request = pb.CreateContainerRequest(
                pod_sandbox_id=sandbox_id, config=container, sandbox_config=config
            )
            return str(connection.call("CreateContainer", request).container_id)

        yield create
        connection.close()
        raw_cri.remove_owned(owner, namespace)
