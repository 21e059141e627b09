"""Fixtures for the tests against the project's test containerd (scripts/test-containerd.sh up).

The session fixture ``containerd`` skips the CRI tests, saying why, when no test containerd was
brought up (``KUBECORE_TEST_CRI_ENDPOINT`` unset and no env file from ``up``; ``scripts/test``
sets it empty when the containerd could not start) or when it does not answer; with a
containerd up but without the test images, the tests fail. Each test that makes pods takes a
``cri_scope``: a pod namespace and a label of its own, which the test puts on what it makes;
afterwards the pod sandboxes (with their containers) and containers that carry the label or
belong to the namespace are removed through the CRI, and nothing else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engines.cri.support import (
    TEST_LABEL,
    CriScope,
    RawCri,
    TestContainerd,
    TestRegistries,
    ctr,
    read_env_file,
    setting,
    state_dir,
)


@pytest.fixture(scope="session")
def containerd() -> TestContainerd:
    if os.environ.get("KUBECORE_TEST_CRI_ENDPOINT") == "":
        pytest.skip(
            "KUBECORE_TEST_CRI_ENDPOINT is empty: the test containerd could not start "
            "(scripts/test says why)"
        )
    endpoint = setting("KUBECORE_TEST_CRI_ENDPOINT")
    if not endpoint:
        pytest.skip(
            "no test containerd: KUBECORE_TEST_CRI_ENDPOINT is not set and "
            f"{state_dir() / 'env'} does not exist (run `bash scripts/test-containerd.sh up` "
            "as root, or `bash scripts/test`)"
        )
    if shutil.which("ctr") is None:
        pytest.skip("`ctr` is not installed (package containerd)")
    try:
        ctr(endpoint, "version", timeout=10)
    except (AssertionError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"the test containerd at {endpoint} does not answer: {error}")
    found = TestContainerd(
        endpoint=endpoint,
        image=setting("KUBECORE_TEST_CRI_IMAGE") or "docker.io/kubecore-test/busybox:1.35",
        pause_image=setting("KUBECORE_TEST_CRI_PAUSE_IMAGE") or "docker.io/kubecore-test/pause:3.9",
        bridge=setting("KUBECORE_TEST_CRI_BRIDGE"),
        subnet=setting("KUBECORE_TEST_CRI_SUBNET"),
        state=state_dir(),
    )
    present = ctr(endpoint, "images", "ls", "-q").split()
    for image in (found.image, found.pause_image):
        if image not in present:
            pytest.fail(f"the test containerd has no {image}: run `scripts/test-containerd.sh up`")
    return found


@pytest.fixture(scope="session")
def registries() -> TestRegistries:
    """The engine's settings, from the environment or the env file its `up` wrote."""
    engine_state = os.environ.get("KUBECORE_TEST_ENGINE_STATE", "/var/tmp/kubecore-test-engine")
    values = read_env_file(Path(engine_state) / "env")

    def get(key: str) -> str:
        return os.environ.get(key) or values.get(key, "")

    found = TestRegistries(
        image=get("KUBECORE_TEST_REGISTRY_IMAGE"),
        pullable_image=get("KUBECORE_TEST_PULLABLE_IMAGE"),
        auth_image=get("KUBECORE_TEST_AUTH_REGISTRY_IMAGE"),
        auth_user=get("KUBECORE_TEST_AUTH_USER"),
        auth_password=get("KUBECORE_TEST_AUTH_PASSWORD"),
    )
    if not found.pullable_image:
        pytest.skip("no test engine settings (run `bash scripts/test-engine.sh up`)")
    return found


@pytest.fixture(scope="session")
def raw_cri(containerd: TestContainerd) -> Iterator[RawCri]:
    """A CRI client of the fixtures' own, for checking and cleaning up (never the plugin's)."""
    client = RawCri(containerd.endpoint)
    yield client
    client.close()


@pytest.fixture
def cri_scope(raw_cri: RawCri) -> Iterator[CriScope]:
    uid = uuid.uuid4().hex
    scope = CriScope(namespace=f"kc-cri-{uid[:10]}", uid=uid, labels={TEST_LABEL: uid})
    yield scope
    raw_cri.remove_owned(scope.labels, scope.namespace)
