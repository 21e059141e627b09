"""An etcd pod whose value is made garbage while its agent is down (``kill -9``), with the real
``kubecore run --etcd-endpoints`` on Docker: the restarted agent keeps the key's last good pod
(its container and its ``emptyDir`` data), reports the value, and a deleted key removes the pod."""

from __future__ import annotations

import json
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engines.agent_process import AgentProcess, converged, pod_manifest, wait_until
from tests.engines.engine_support import DOCKER, EngineUnderTest, engine_under_test

pytestmark = [pytest.mark.docker, pytest.mark.etcd]

WEB = {"web": ("app",)}


@pytest.fixture
def docker() -> Iterator[EngineUnderTest]:
    with engine_under_test(DOCKER) as found:
        yield found


def test_a_value_made_garbage_across_kill_9_keeps_the_pod_and_its_data(
    docker: EngineUnderTest,
    client: Any,
    prefix: str,
    etcd_endpoints: tuple[str, ...],
    tmp_path: Path,
) -> None:
    namespace = f"etcd-blink-{uuid.uuid4().hex[:10]}"
    node = f"etcd-node-{namespace}"
    key = f"{prefix}/pods/{node}/{namespace}/web"
    good = json.dumps(pod_manifest("web", namespace, docker.image, ("app",)))
    client.put(key, good)
    empty = tmp_path / "none"
    empty.mkdir()
    arguments = [
        *docker.run_arguments(tmp_path),
        "--manifest-allow-empty",  # no manifest files: etcd is under test
        "--etcd-endpoints", ",".join(etcd_endpoints),
        "--etcd-prefix", prefix,
    ]  # fmt: skip
    started: list[AgentProcess] = []

    def start() -> AgentProcess:
        started.append(AgentProcess(empty, tmp_path / "root", arguments, node).start())
        return started[-1]

    try:
        first = start()
        before = wait_until(lambda: converged(docker, namespace, WEB), 90, "web running", first)
        code, _ = docker.exec(before["web", "app"], ["sh", "-c", "echo kept > /data/mark"])
        assert code == 0
        first.kill(signal.SIGKILL)
        client.put(key, "{garbage: [")  # while the agent is down

        second = start()
        wait_until(lambda: "bad pod" in second.output(), 60, "the value reported", second)
        until = time.monotonic() + 8  # several lists and syncs: nothing is replaced
        while time.monotonic() < until:
            assert converged(docker, namespace, WEB) == before, second.output()
            time.sleep(0.5)
        code, out = docker.exec(before["web", "app"], ["cat", "/data/mark"])
        assert (code, out.decode().strip()) == (0, "kept")
        client.delete(key)  # what the user means: the pod goes
        wait_until(lambda: not docker.containers(namespace), 60, "web removed", second)
    finally:
        for agent in started:
            if agent.running():
                agent.kill(signal.SIGTERM)
        docker.remove_namespace(namespace)
