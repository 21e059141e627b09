"""An agent killed with ``kill -9`` while it starts its pods, started again, killed again, on
every engine: once it has converged, each container has exactly one instance on the engine and
its start command ran once (each start appends a line to a hostPath file the test reads). On
containerd an interrupted start may still be going on in the runtime when the new agent relists
(the container is listed as created, and ``RemoveContainer`` refuses it as "in starting state"):
the agent must wait for it and adopt it, not make another.

One double run is containerd's and no agent can prevent it: when the killed agent's connection
drops after containerd has begun the task (the shim runs the command), containerd cancels the
start, kills the task and reports the instance as exit 128 "failed to start containerd task";
the command has run once by then. A second run is allowed for exactly those pods, on the
agent's logged evidence of such an instance; an instance whose task was never made (``failed to
create containerd task``, the common case) never ran, and its pod must run once."""

from __future__ import annotations

import json
import re
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.engines.agent_process import AgentProcess, converged, wait_until
from tests.engines.engine_support import EngineUnderTest

TRIALS = 3
PODS_PER_TRIAL = 5
KILLS_PER_TRIAL = 3


def starting_pod(name: str, namespace: str, image: str, starts: Path) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "volumes": [
                {"name": "starts", "hostPath": {"path": str(starts), "type": "DirectoryOrCreate"}}
            ],
            "containers": [
                {
                    "name": "app",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", f"echo started >> /starts/{name}; exec sleep 3600"],
                    "volumeMounts": [{"name": "starts", "mountPath": "/starts"}],
                }
            ],
        },
    }


def kill_mid_start(
    engine: EngineUnderTest, namespace: str, pods: set[str], agent: AgentProcess
) -> None:
    """Kill the agent with SIGKILL as soon as it has made some container of ``pods`` and not
    yet started them all (or, if it was too quick to catch, once it made any)."""

    def caught() -> bool:
        mine = [c for c in engine.containers(namespace) if c.pod in pods]
        return bool(mine) and not (len(mine) == len(pods) and all(c.running for c in mine))

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not caught():
        if any(c.pod in pods for c in engine.containers(namespace)) and not agent.running():
            break
        time.sleep(0.02)
    agent.kill(signal.SIGKILL)


def relists(agent: AgentProcess) -> int:
    """How many relists the agent has made (its ``/metrics``)."""
    status, body = agent.get("/metrics")
    assert status == 200, body
    found = re.search(
        r"^kubelet_pleg_relist_duration_seconds_count(?:\{[^}]*\})? (\S+)$", body, re.M
    )
    return int(float(found.group(1))) if found else 0


def cut_after_its_task_began(agents: list[AgentProcess], namespace: str) -> set[str]:
    """The pods of which some agent replaced an instance containerd had ended with exit 128
    after making its task (the start itself cut off: its command may have run)."""
    logged = "".join(agent.log.read_text(errors="replace") for agent in agents)
    cut = re.finditer(
        rf"pod {re.escape(namespace)}/(\S+): container app's instance \w+ was cut off in its"
        r" start \(exit 128 [^:]*: (?!failed to create containerd task)",
        logged,
    )
    return {found.group(1) for found in cut}


def wait_relists(agent: AgentProcess, count: int) -> None:
    seen = relists(agent)
    wait_until(lambda: relists(agent) >= seen + count, 60, f"{count} relists more", agent)


def test_kill_9_during_starts_makes_each_container_once(
    engine: EngineUnderTest, namespace: str, tmp_path: Path
) -> None:
    starts = tmp_path / "starts"
    agents: list[AgentProcess] = []
    pods: dict[str, tuple[str, ...]] = {}
    """Every trial's pods (those of the trials before still run in the namespace)."""
    try:
        for trial in range(TRIALS):
            names = {f"t{trial}-pod{i}" for i in range(PODS_PER_TRIAL)}
            manifests = tmp_path / f"pods-{trial}"
            manifests.mkdir()
            for name in sorted(names):
                manifest = starting_pod(name, namespace, engine.image, starts)
                (manifests / f"{name}.json").write_text(json.dumps(manifest))
            root = tmp_path / f"root-{trial}"
            # The start file is a hostPath: allowed for it alone (the default policy refuses it).
            arguments = [*engine.run_arguments(tmp_path), "--allowed-host-path", str(starts)]
            node = f"kill-start-{trial}-{namespace}"
            for _ in range(KILLS_PER_TRIAL):
                agent = AgentProcess(manifests, root, arguments, node).start()
                agents.append(agent)
                kill_mid_start(engine, namespace, names, agent)
            agent = AgentProcess(manifests, root, arguments, node).start()
            agents.append(agent)
            pods.update(dict.fromkeys(names, ("app",)))
            ids = wait_until(lambda: converged(engine, namespace, pods), 120, "pods running", agent)
            wait_relists(agent, 5)
            assert converged(engine, namespace, pods) == ids, agent.output()
            instances = Counter(c.pod for c in engine.containers(namespace) if c.pod in names)
            assert instances == dict.fromkeys(names, 1), agent.output()
            ran = {name: (starts / name).read_text().count("started") for name in names}
            twice = {name for name, count in ran.items() if count == 2}
            once = dict.fromkeys(names, 1) | dict.fromkeys(
                twice & cut_after_its_task_began(agents, namespace), 2
            )
            assert ran == once, agent.output()
            agent.kill(signal.SIGTERM)
    finally:
        for agent in agents:
            if agent.running():
                agent.kill(signal.SIGTERM)
