"""Ephemeral containers on the real engine: a busybox debug container added to a running pod with
``targetContainerName`` joins the app container's process namespace (``PidMode
container:<app>``; ``ps`` in it sees the app's process), the app is not restarted, and once it
exits the debug container is never started again."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from kubecore._model.v1 import EphemeralContainer, Pod
from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    engine_containers,
    exec_until,
    forever,
    make_pod,
    running_ids,
    wait_pod,
)

pytestmark = pytest.mark.docker


def with_debugger(pod: Pod, image: str, target: str, command: tuple[str, ...]) -> Pod:
    debugger = EphemeralContainer(
        name="debugger", image=image, command=command, target_container_name=target
    )
    spec = attrs.evolve(pod.spec, ephemeral_containers=(debugger,))
    return attrs.evolve(pod, spec=spec)


def ephemeral_state(pod: Pod) -> Any:
    statuses = pod.status.ephemeral_container_statuses if pod.status is not None else ()
    return statuses[0] if statuses else None


def running_debugger(pod: Pod) -> bool:
    status = ephemeral_state(pod)
    return status is not None and status.state.running is not None


def test_a_debug_container_sees_its_targets_processes_and_restarts_nothing(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "debugged",
        namespace,
        [
            container("app", engine.image, forever("echo app-marker")),
            container("other", engine.image),
        ],
    )
    kubelet = make_agent([pod])
    running = wait_pod(kubelet, namespace, "debugged", all_running, what="the pod running")
    before = running_ids(running)

    kubelet.set_pods([with_debugger(pod, engine.image, "app", ("sleep", "1000"))])
    debugged = wait_pod(kubelet, namespace, "debugged", running_debugger, what="debugger up")
    status = ephemeral_state(debugged)
    assert status.restart_count == 0 and not status.ready
    debugger_id = status.container_id.split("://")[-1]
    inspected = raw.inspect_container(debugger_id)
    assert inspected["HostConfig"]["PidMode"] == f"container:{before['app']}"
    result = exec_until(
        kubelet,
        namespace,
        "debugged",
        "debugger",
        ["ps"],
        ok=lambda r: r.exit_code == 0 and b"echo app-marker" in r.stdout,
    )
    assert b"echo app-marker" in result.stdout, result.stdout.decode()
    assert b"sleep 1000" in result.stdout
    # The app and its neighbour were not restarted: same engine containers, no restarts.
    now = wait_pod(kubelet, namespace, "debugged", all_running)
    assert running_ids(now) == before
    assert [s.restart_count for s in now.status.container_statuses] == [0, 0]  # type: ignore[union-attr]
    assert len(engine_containers(raw, namespace, "app")) == 1

    # It ends (killed on the engine): it is never started again, and nothing else restarts.
    raw.kill(debugger_id)
    ended = wait_pod(
        kubelet,
        namespace,
        "debugged",
        lambda p: (
            ephemeral_state(p) is not None and ephemeral_state(p).state.terminated is not None
        ),
        what="the debugger ended",
    )
    assert ephemeral_state(ended).restart_count == 0
    for _ in range(3):
        kubelet.sync()
    assert len(engine_containers(raw, namespace, "debugger")) == 1
    assert running_ids(wait_pod(kubelet, namespace, "debugged", all_running)) == before
