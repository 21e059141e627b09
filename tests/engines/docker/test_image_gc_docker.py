"""The agent (Kubelet) end to end on the real Docker engine, in real time, for what only Docker
shows here: image GC of images committed for the test (no registry needed). (The
scenarios that hold on every engine are in tests/engines/scenarios.)

Each test runs its pods in a namespace of its own (``e2e-<uid>``) and removes every container of
that namespace afterwards (by the ``io.kubernetes.pod.namespace`` label), after its agents stopped.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kubecore._contract.protocols import Puller
from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    ScopedPuller,
    all_running,
    container,
    get_pod,
    make_pod,
    wait_pod,
)
from tests.engines.docker.helpers import TEST_LABEL, wait_for

pytestmark = pytest.mark.docker


def commit_image(raw: Any, base: str, repository: str, tag: str, marker: str) -> str:
    """A new local image (its own id) on top of ``base``, made without any registry."""
    created = raw.create_container(base, command=["true"], labels={TEST_LABEL: marker})
    try:
        committed = raw.commit(
            created["Id"], repository=repository, tag=tag, changes=[f"ENV KUBECORE_E2E={marker}"]
        )
    finally:
        raw.remove_container(created["Id"], force=True)
    image_id: str = committed["Id"]
    return image_id


def test_image_gc_removes_an_unused_image_and_keeps_the_used_one(
    make_agent: AgentFactory,
    engine: TestEngine,
    namespace: str,
    raw: Any,
    test_uid: str,
    own_images: list[str],
) -> None:
    # The disk cannot be filled for the test: thresholds of 0 % make every pass collect, and the
    # puller shows image GC only this test's two images (the engine is shared).
    repository = f"kubecore-e2e/gc-{test_uid}"
    used = f"{repository}:used"
    unused = f"{repository}:unused"
    own_images.extend([used, unused])
    used_id = commit_image(raw, engine.image, repository, "used", f"{test_uid}-used")
    unused_id = commit_image(raw, engine.image, repository, "unused", f"{test_uid}-unused")
    assert used_id != unused_id

    scoped: list[ScopedPuller] = []

    def wrap(puller: Puller) -> Puller:
        scoped.append(ScopedPuller(puller))
        return scoped[-1]

    pod = make_pod("imgc", namespace, [container("app", used, imagePullPolicy="Never")])
    kubelet = make_agent(
        [pod],
        wrap=wrap,
        image_gc_interval=0.3,
        image_gc_high=0,
        image_gc_low=0,
        image_min_age=0.0,
    )
    wait_pod(kubelet, namespace, "imgc", all_running)
    scoped[0].prefixes.add(repository + ":")  # from now on image GC sees both images

    def gone(ref: str) -> bool:
        return not raw.images(name=ref)

    assert wait_for(lambda: gone(unused), timeout=10, what="the unused image removed")
    assert scoped[0].removed == [unused_id]
    time.sleep(1.0)  # a few more passes
    assert not gone(used)
    assert all_running(get_pod(kubelet, namespace, "imgc"))
