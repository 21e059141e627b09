"""An agent killed with ``kill -9`` while its pods run, on every engine (Docker, then the CRI on
containerd): started again over the same root dir, it adopts them: the same sandboxes and
containers, no restart counted, nothing made twice, the pods' volumes kept."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engines.agent_process import (
    AgentProcess,
    converged,
    reported_containers,
    wait_until,
    write_pods,
)
from tests.engines.engine_support import EngineUnderTest

PODS = {"pod0": ("app", "side"), "pod1": ("app",), "pod2": ("app",)}
"""Each pod's containers."""


def reports(agent: AgentProcess, ids: dict[tuple[str, str], str]) -> bool:
    """The agent reports each container running, with the id ``ids`` has for it."""
    found = reported_containers(agent.pods())
    return set(found) == set(ids) and all(
        "running" in status["state"] and status["containerID"].split("://")[-1] == ids[key]
        for key, status in found.items()
    )


@pytest.fixture
def start_agent(engine: EngineUnderTest, namespace: str, tmp_path: Path) -> Iterator[Any]:
    """Starts ``kubecore run`` on the test's pods over one root dir; stops what still runs."""
    manifests = write_pods(tmp_path / "pods", namespace, engine.image, PODS)
    agents: list[AgentProcess] = []

    def start() -> AgentProcess:
        arguments = engine.run_arguments(tmp_path)
        agents.append(
            AgentProcess(manifests, tmp_path / "root", arguments, f"restart-node-{namespace}")
        )
        return agents[-1].start()

    yield start
    for agent in agents:
        if agent.running():
            agent.kill(signal.SIGTERM)  # the pods are removed with the namespace


def test_an_agent_killed_with_kill_9_adopts_its_pods_when_started_again(
    engine: EngineUnderTest, namespace: str, start_agent: Any
) -> None:
    first = start_agent()
    before = wait_until(lambda: converged(engine, namespace, PODS), 90, "the pods running", first)
    wait_until(lambda: reports(first, before), 30, "the first agent's report", first)
    sandboxes = {s.id for s in engine.sandboxes(namespace)}
    for (pod, name), container_id in before.items():
        marked, _ = engine.exec(container_id, ["sh", "-c", f"echo {pod}-{name} >> /data/mark"])
        assert marked == 0

    first.kill(signal.SIGKILL)
    assert converged(engine, namespace, PODS) == before, "the pods stop with their agent"

    second = start_agent()
    wait_until(second.healthy, 60, "the restarted agent healthy", second)
    wait_until(lambda: reports(second, before), 60, "the adopted containers reported", second)
    # Several relists and syncs later, nothing was restarted, remade or doubled.
    until = time.monotonic() + 3
    while time.monotonic() < until:
        assert converged(engine, namespace, PODS) == before, second.output()
        assert {s.id for s in engine.sandboxes(namespace)} == sandboxes
        time.sleep(0.3)
    statuses = reported_containers(second.pods())
    assert {key: s["restartCount"] for key, s in statuses.items()} == dict.fromkeys(before, 0)
    for (pod, _), container_id in before.items():
        code, marks = engine.exec(container_id, ["cat", "/data/mark"])
        assert code == 0 and sorted(marks.decode().split()) == sorted(
            f"{pod}-{name}" for name in PODS[pod]
        )
    assert second.running(), second.output()
