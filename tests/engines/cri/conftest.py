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

import uuid
from collections.abc import Iterator

import pytest

from tests.engines.cri.support import (
    TEST_LABEL,
    CriScope,
    RawCri,
    TestContainerd,
    TestRegistries,
    find_containerd,
    find_registries,
)


@pytest.fixture(scope="session")
def containerd() -> TestContainerd:
    return find_containerd()


@pytest.fixture(scope="session")
def registries() -> TestRegistries:
    """The engine's settings, from the environment or the env file its `up` wrote."""
    return find_registries()


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
