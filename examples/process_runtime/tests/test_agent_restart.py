"""The agent on the process runtime, stopped (SIGTERM) or killed (SIGKILL) and started again:
containers keep running, the new agent adopts them, and no process is started twice."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

PODS = 3
POD = """
apiVersion: v1
kind: Pod
metadata: {{name: web{n}, namespace: default}}
spec:
  containers:
  - name: web
    image: host
    command: ["sh", "-c", "echo $$$$ >> {starts}; trap 'exit 0' TERM; while :; do sleep 0.1; done"]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Agent:
    def __init__(self, tmp: Path, state_dir: Path) -> None:
        self.manifests = tmp / "manifests"
        self.starts = tmp / "starts"
        self.manifests.mkdir()
        for n in range(PODS):
            (self.manifests / f"web{n}.yaml").write_text(POD.format(n=n, starts=self.starts))
        self.args = [
            sys.executable, "-m", "kubecore", "run", "--runtime", "process",
            "--runtime-option", f"state_dir={state_dir}", "--runtime-option", "images=host",
            "--root-dir", str(tmp / "root"), "--node-name", "restarts", "--log-level", "warning",
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [*self.args, "--port", str(self.port), str(self.manifests)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def end(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)
        self.process.wait(30)

    def containers(self) -> dict[str, tuple[str, int]] | None:
        """Each pod's running container (id, restart count), once all run; else None."""
        try:
            url = f"http://127.0.0.1:{self.port}/pods"
            with urllib.request.urlopen(url, timeout=5) as response:
                pods = json.load(response)["items"]
        except OSError:
            return None
        found = {}
        for pod in pods:
            for status in pod.get("status", {}).get("containerStatuses", []):
                if "running" in status.get("state", {}):
                    found[pod["metadata"]["name"]] = (status["containerID"], status["restartCount"])
        return found if len(found) == PODS else None

    def processes_started(self) -> list[int]:
        return [int(line) for line in self.starts.read_text().split()]


@pytest.fixture
def agent(tmp_path: Path, state_dir: Path) -> Iterator[Agent]:
    agent = Agent(tmp_path, state_dir)
    yield agent
    if agent.process is not None and agent.process.poll() is None:
        agent.end(signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_restarted_agent_adopts_every_container(agent: Agent, signum: int) -> None:
    agent.start()
    first = wait_for(agent.containers, f"{PODS} running pods")
    started = agent.processes_started()
    assert len(started) == PODS
    agent.end(signum)
    for pid in started:
        assert Path(f"/proc/{pid}").exists(), f"{pid} died with the agent"

    agent.start()
    assert wait_for(agent.containers, "the pods, adopted") == first
    assert agent.processes_started() == started, "a container was started twice"
