"""The pod sources' rule with the real ``kubecore run`` on every engine (Docker, then the CRI on
containerd): a manifest that blinks across a ``kill -9`` keeps its pod's containers and
``emptyDir`` data; a manifest the user removes removes its pod, and the pod put back with the
same UID finds its ``emptyDir`` as it left it (docs/operating/sources.md has the whole table)."""

from __future__ import annotations

import http.server
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engines.agent_process import (
    AgentProcess,
    converged,
    pod_manifest,
    reported_containers,
    wait_until,
    write_pods,
)
from tests.engines.engine_support import EngineUnderTest

PODS = {"pod0": ("app",), "pod1": ("app",)}


@pytest.fixture
def agents(engine: EngineUnderTest, namespace: str, tmp_path: Path) -> Iterator[Any]:
    """Starts ``kubecore run`` on the test's manifest directory over one root dir."""
    write_pods(tmp_path / "pods", namespace, engine.image, PODS)
    started: list[AgentProcess] = []

    def start() -> AgentProcess:
        arguments = engine.run_arguments(tmp_path)
        node = f"sources-node-{namespace}"
        started.append(AgentProcess(tmp_path / "pods", tmp_path / "root", arguments, node))
        return started[-1].start()

    yield start
    for agent in started:
        if agent.running():
            agent.kill(signal.SIGTERM)


def mark(engine: EngineUnderTest, container_id: str, text: str) -> None:
    code, _ = engine.exec(container_id, ["sh", "-c", f"echo {text} > /data/mark"])
    assert code == 0


def read_mark(engine: EngineUnderTest, container_id: str) -> str:
    code, out = engine.exec(container_id, ["cat", "/data/mark"])
    return out.decode().strip() if code == 0 else ""


def test_a_manifest_made_a_fifo_across_kill_9_keeps_its_pod_and_its_data(
    engine: EngineUnderTest, namespace: str, agents: Any, tmp_path: Path
) -> None:
    first = agents()
    before = wait_until(lambda: converged(engine, namespace, PODS), 90, "the pods running", first)
    mark(engine, before["pod0", "app"], "kept")
    first.kill(signal.SIGKILL)
    manifest = tmp_path / "pods" / "pod0.json"
    manifest.unlink()
    os.mkfifo(manifest)  # unreadable: a blink, never opened blocking

    second = agents()
    wait_until(lambda: len(reported_containers(second.pods())) == 2, 60, "the report", second)
    # Past the 5 s a removed file waits: a FIFO read as the file removed would be acted on.
    until = time.monotonic() + 7
    while time.monotonic() < until:
        assert converged(engine, namespace, PODS) == before, second.output()
        time.sleep(0.5)
    manifest.unlink()
    manifest.write_text(json.dumps(pod_manifest("pod0", namespace, engine.image, ("app",))))
    wait_until(second.healthy, 60, "the source ready again", second)
    assert converged(engine, namespace, PODS) == before, second.output()
    assert read_mark(engine, before["pod0", "app"]) == "kept"


def test_a_manifest_removed_removes_its_pod_and_put_back_finds_its_data(
    engine: EngineUnderTest, namespace: str, agents: Any, tmp_path: Path
) -> None:
    agent = agents()
    before = wait_until(lambda: converged(engine, namespace, PODS), 90, "the pods running", agent)
    mark(engine, before["pod1", "app"], "mine")
    manifest = tmp_path / "pods" / "pod1.json"
    text = manifest.read_text()
    manifest.unlink()  # what the user means: the pod goes
    wait_until(lambda: converged(engine, namespace, {"pod0": ("app",)}), 60, "pod1 removed", agent)
    (tmp_path / "pods" / ".pod1.json.new").write_text(text)
    os.replace(tmp_path / "pods" / ".pod1.json.new", manifest)  # put back: the same UID
    again = wait_until(lambda: converged(engine, namespace, PODS), 90, "pod1 back", agent)
    assert again["pod0", "app"] == before["pod0", "app"]
    assert again["pod1", "app"] != before["pod1", "app"]
    assert read_mark(engine, again["pod1", "app"]) == "mine", agent.output()


class Manifests(http.server.ThreadingHTTPServer):
    """A manifest URL on loopback: ``mode`` says what it answers (``good``, ``500``, or
    ``trickle``: the body a byte every 0.2 s, which no fetch timeout per read would end)."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.mode = "good"
        self.closing = threading.Event()
        super().__init__(("127.0.0.1", 0), _ManifestHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/pods.json"


class _ManifestHandler(http.server.BaseHTTPRequestHandler):
    server: Manifests

    def do_GET(self) -> None:
        mode, body = self.server.mode, self.server.body
        self.send_response(500 if mode == "500" else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "good":
            self.wfile.write(body)
            return
        for byte in body[:200] if mode == "trickle" else ():  # bounded: at most 40 s
            if self.server.closing.wait(0.2):
                return
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:  # the agent gave up on it
                return

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def manifest_url(engine: EngineUnderTest, namespace: str) -> Iterator[Manifests]:
    body = json.dumps(pod_manifest("web", namespace, engine.image, ("app",))).encode()
    server = Manifests(body)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.closing.set()
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_a_manifest_url_failing_and_trickling_across_kill_9_keeps_its_pod_and_its_data(
    engine: EngineUnderTest, namespace: str, tmp_path: Path, manifest_url: Manifests
) -> None:
    empty = tmp_path / "none"
    empty.mkdir()
    arguments = [
        *engine.run_arguments(tmp_path),
        "--manifest-allow-empty",  # the directory is empty on purpose: the URL is under test
        "--manifest-url", manifest_url.url,
        "--http-check-interval", "1",
    ]  # fmt: skip
    node = f"sources-url-{namespace}"
    started: list[AgentProcess] = []

    def start() -> AgentProcess:
        started.append(AgentProcess(empty, tmp_path / "root", arguments, node).start())
        return started[-1]

    web = {"web": ("app",)}
    try:
        first = start()
        before = wait_until(lambda: converged(engine, namespace, web), 90, "web running", first)
        mark(engine, before["web", "app"], "kept")
        manifest_url.mode = "500"
        first.kill(signal.SIGKILL)
        second = start()
        wait_until(lambda: reported_containers(second.pods()), 60, "the report", second)
        manifest_url.mode = "trickle"  # each fetch now lasts its whole timeout, then fails
        until = time.monotonic() + 12
        while time.monotonic() < until:
            assert converged(engine, namespace, web) == before, second.output()
            time.sleep(0.5)
        manifest_url.mode = "good"
        wait_until(second.healthy, 60, "the URL read again", second)
        assert converged(engine, namespace, web) == before, second.output()
        assert read_mark(engine, before["web", "app"]) == "kept"
    finally:
        for agent in started:
            if agent.running():
                agent.kill(signal.SIGTERM)
