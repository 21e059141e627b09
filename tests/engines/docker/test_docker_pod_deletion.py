"""Deleting a pod on the real engine: a sync starting its many containers stops at the next
start, and its TERM-ignoring containers are stopped at once (the pod goes in about its grace
period, not one grace period, or the 2 s floor, per container)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kubecore._contract.labels import POD_NAMESPACE_LABEL
from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    make_pod,
    wait_pod,
)
from tests.engines.docker.helpers import wait_for

pytestmark = pytest.mark.docker

IGNORES_TERM = ["sh", "-c", "trap '' TERM; sleep 3600"]
GRACE = 3


def running_in(raw: Any, namespace: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = raw.containers(
        filters={"label": [f"{POD_NAMESPACE_LABEL}={namespace}"], "status": "running"}
    )
    return found


def test_four_term_ignoring_containers_go_within_twice_the_grace_period(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "stubborn",
        namespace,
        [container(f"c{i}", engine.image, IGNORES_TERM) for i in range(4)],
        terminationGracePeriodSeconds=GRACE,
    )
    kubelet = make_agent([pod])
    wait_pod(kubelet, namespace, "stubborn", all_running, what="4 containers running")
    assert len(running_in(raw, namespace)) == 5  # and the sandbox
    started = time.monotonic()
    kubelet.set_pods([])
    wait_for(lambda: not running_in(raw, namespace), 30, interval=0.05, what="the pod stopped")
    took = time.monotonic() - started
    # one after the other: 3 s + 3 x 2 s (the floor) = 9 s and more
    assert took < 2 * GRACE, f"4 containers with a {GRACE} s grace took {took:.1f}s"
    assert took >= GRACE - 0.5


def test_a_pod_deleted_while_its_containers_start_stops_starting_them(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod("many", namespace, [container(f"c{i:02d}", engine.image) for i in range(40)])
    kubelet = make_agent([pod])

    def started() -> int:
        return kubelet._rooms.events.reasons(namespace=namespace, name="many").count("Started")

    wait_for(lambda: started() >= 3, 60, interval=0.01, what="3 containers started")
    kubelet.set_pods([])
    at_delete = started()
    wait_for(lambda: not running_in(raw, namespace), 60, interval=0.05, what="the pod stopped")
    assert started() - at_delete <= 2, (
        f"{started() - at_delete} containers started after the delete"
    )
    assert started() < 40
