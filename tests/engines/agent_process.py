"""``kubecore run`` as a process of its own on the engine under test (to be killed with
``kill -9`` and started again over the same root dir), the pods it reports on its HTTP port, and
bounded waits that show its log when they time out."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.engines.docker.helpers import SLEEPER
from tests.engines.engine_support import EngineUnderTest


def pod_manifest(name: str, namespace: str, image: str, containers: tuple[str, ...]) -> Any:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "volumes": [{"name": "data", "emptyDir": {}}],
            "containers": [
                {
                    "name": container,
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": list(SLEEPER),
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
                for container in containers
            ],
        },
    }


Pods = Mapping[str, tuple[str, ...]]
"""Pod name -> the names of its containers."""


def write_pods(directory: Path, namespace: str, image: str, pods: Pods) -> Path:
    """One manifest file per pod in ``directory`` (made); the directory."""
    directory.mkdir()
    for name, containers in pods.items():
        manifest = pod_manifest(name, namespace, image, containers)
        (directory / f"{name}.json").write_text(json.dumps(manifest))
    return directory


def converged(
    engine: EngineUnderTest, namespace: str, pods: Pods
) -> dict[tuple[str, str], str] | None:
    """(pod, container) -> the id of its one running container, when each container of
    ``pods`` has exactly one, each pod one sandbox, ready, and nothing is left half-made (a
    container made but never started, a sandbox not ready)."""
    expected = {(pod, name) for pod, names in pods.items() for name in names}
    containers = engine.containers(namespace)
    sandboxes = engine.sandboxes(namespace)
    running: dict[tuple[str, str], list[str]] = {}
    for c in containers:
        if c.running:
            running.setdefault((c.pod, c.name), []).append(c.id)
    if set(running) != expected or any(len(ids) != 1 for ids in running.values()):
        return None
    if sorted(s.pod for s in sandboxes) != sorted(pods) or not all(s.ready for s in sandboxes):
        return None
    if any(c.created for c in containers):
        return None
    return {key: ids[0] for key, ids in running.items()}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class AgentProcess:
    """``kubecore run MANIFESTS`` with the engine's ``runtime_arguments``, its API on a port of
    its own, its output in a log file beside ``root``."""

    def __init__(
        self, manifests: Path, root: Path, runtime_arguments: Sequence[str], node_name: str
    ) -> None:
        self.port = free_port()
        self.command = [
            sys.executable, "-m", "kubecore", "run", str(manifests), *runtime_arguments,
            "--root-dir", str(root), "--port", str(self.port), "--node-name", node_name,
            "--log-level", os.environ.get("KUBECORE_TEST_AGENT_LOG_LEVEL", "warning"),
        ]  # fmt: skip
        self.log = root.parent / f"agent-{time.monotonic_ns()}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> AgentProcess:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=log)
        return self

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        self.process.wait(timeout=30)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def healthy(self) -> bool:
        return self.get("/healthz")[0] == 200

    def pods(self) -> list[dict[str, Any]]:
        """The pods the agent reports (``/pods``, v1 Pods)."""
        status, body = self.get("/pods")
        assert status == 200, body
        items: list[dict[str, Any]] = json.loads(body).get("items") or []
        return items

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def wait_until(
    check: Callable[[], Any], timeout: float, what: str, agent: AgentProcess | None = None
) -> Any:
    """Poll ``check`` until it is truthy (an OSError or ValueError counts as not yet), at most
    ``timeout`` seconds; fail with the agent's log otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            result = check()
            if result:
                return result
        time.sleep(0.2)
    pytest.fail(
        f"timed out after {timeout:.0f}s waiting for {what}"
        + (f"\n{agent.output()}" if agent else "")
    )


def reported_containers(pods: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(pod name, container name) -> its status as the agent reports it."""
    return {
        (pod["metadata"]["name"], status["name"]): status
        for pod in pods
        for status in (pod.get("status") or {}).get("containerStatuses") or ()
    }
