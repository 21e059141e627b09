"""containerd restarted under a running agent (``kubecore run --runtime cri``): killed while the
agent converges its pods, and started again, the agent keeps running and reconverges, with
nothing made twice and no sandbox or container left half-made.

This test kills containerd, so it uses one of its own (``scripts/test-containerd.sh`` with a
``KUBECORE_TEST_CONTAINERD_STATE`` of its own, brought down afterwards), never the shared one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engines.agent_process import AgentProcess, converged, wait_until, write_pods
from tests.engines.cri.support import TestContainerd, TestRegistries, find_containerd, read_env_file
from tests.engines.engine_support import CriEngine
from tests.paths import REPO

# Serial: its own containerd (one state directory) is started once for the module.
pytestmark = [pytest.mark.cri, pytest.mark.serial]

SCRIPT = REPO / "scripts" / "test-containerd.sh"
OWN_STATE = Path(
    os.environ.get(
        "KUBECORE_TEST_OWN_CONTAINERD_STATE", "/var/tmp/kubecore-test-containerd-restart"
    )
)
"""The state directory of this module's containerd (never the shared one's)."""
PODS = {f"pod{i}": ("app",) for i in range(8)}


def script(command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECORE_TEST_CONTAINERD_STATE": str(OWN_STATE)}
    return subprocess.run(
        ["bash", str(SCRIPT), command],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def own_containerd(registries: TestRegistries) -> Iterator[TestContainerd]:
    shared = find_containerd()  # skips, saying why, where no test containerd can run
    assert shared.state != OWN_STATE, "the restarted containerd must not be the shared one"
    if os.geteuid() != 0:
        pytest.skip("starting a containerd of its own needs root")
    up = script("up")
    if up.returncode != 0:
        script("down")
        pytest.fail(f"the test's own containerd did not start:\n{up.stderr[-3000:]}")
    values = read_env_file(OWN_STATE / "env")
    yield TestContainerd(
        endpoint=values["KUBECORE_TEST_CRI_ENDPOINT"],
        image=values["KUBECORE_TEST_CRI_IMAGE"],
        pause_image=values["KUBECORE_TEST_CRI_PAUSE_IMAGE"],
        bridge=values["KUBECORE_TEST_CRI_BRIDGE"],
        subnet=values["KUBECORE_TEST_CRI_SUBNET"],
        state=OWN_STATE,
    )
    down = script("down")
    assert down.returncode == 0, down.stderr[-3000:]


@pytest.fixture
def engine(own_containerd: TestContainerd) -> Iterator[CriEngine]:
    found = CriEngine(own_containerd)
    yield found
    found.close()


@pytest.fixture
def start_agent(engine: CriEngine, tmp_path: Path) -> Iterator[Any]:
    namespace = f"restart-{uuid.uuid4().hex[:10]}"
    manifests = write_pods(tmp_path / "pods", namespace, engine.image, PODS)
    agents: list[AgentProcess] = []

    def start() -> tuple[AgentProcess, str]:
        arguments = engine.run_arguments(tmp_path)
        agents.append(
            AgentProcess(manifests, tmp_path / "root", arguments, f"restart-node-{namespace}")
        )
        return agents[-1].start(), namespace

    yield start
    for agent in agents:
        if agent.running():
            agent.kill(signal.SIGTERM)
    engine.remove_namespace(namespace)


def containerd_pid() -> int:
    return int((OWN_STATE / "containerd.pid").read_text().strip())


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_containerd_restarted_during_a_convergence(
    engine: CriEngine, start_agent: Any, sig: signal.Signals
) -> None:
    agent, namespace = start_agent()
    wait_until(
        lambda: len([c for c in engine.containers(namespace) if c.running]) >= 2,
        90,
        "a few pods up",
        agent,
    )
    pid = containerd_pid()
    os.kill(pid, sig)
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 60, "containerd to exit", agent)
    assert agent.running(), agent.output()  # the agent outlives its runtime
    up = script("up")
    assert up.returncode == 0, up.stderr[-3000:]
    assert containerd_pid() != pid
    assert agent.running(), agent.output()
    final = wait_until(
        lambda: converged(engine, namespace, PODS), 180, "every pod running again", agent
    )
    wait_until(agent.healthy, 60, "a healthy agent", agent)
    # Converged stays converged: the same containers, one sandbox a pod.
    assert converged(engine, namespace, PODS) == final
    assert len(engine.sandboxes(namespace)) == len(PODS)
