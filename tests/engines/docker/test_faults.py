"""Faults of the engine and of the agent, on the real engine.

The agent runs as users run it (`kubecore run DIR --runtime docker`, a process of its own). It
reaches the engine through a unix-socket proxy this test owns, so the engine can be made
unreachable, or only its event stream cut, while it keeps running for everyone else. Each scenario
ends with every pod converged, no duplicate container, no container restarted that did not need to
be, and the data of emptyDir volumes intact.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from kubecore._contract.labels import POD_NAMESPACE_LABEL
from tests.engines.docker.conftest import ENGINE_STATE, TestEngine, remove_labelled
from tests.paths import REPO

pytestmark = pytest.mark.docker


class EngineProxy:
    """Forwards connections from ``path`` to the engine's socket ``upstream``. ``down()`` cuts
    every connection and refuses new ones (they are accepted and closed at once, and counted);
    ``cut_events()`` cuts only the event streams."""

    def __init__(self, path: Path, upstream: str) -> None:
        self.path = str(path)
        self.upstream = upstream
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        self._listener.listen(128)
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket, str]] = []
        self._down = False
        self.refused = 0
        self.event_streams = 0
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                down = self._down
                if down:
                    self.refused += 1
            if down:
                client.close()
                continue
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        try:
            first = client.recv(65536)
        except OSError:
            client.close()
            return
        request_line = first.split(b"\r\n", 1)[0].decode(errors="replace")
        kind = "events" if "/events" in request_line else "api"
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(self.upstream)
            upstream.sendall(first)
        except OSError:
            client.close()
            upstream.close()
            return
        with self._lock:
            if self._down:
                client.close()
                upstream.close()
                return
            self._pairs.append((client, upstream, kind))
            if kind == "events":
                self.event_streams += 1
        for source, target in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def _cut(self, kinds: set[str]) -> None:
        with self._lock:
            keep = []
            for client, upstream, kind in self._pairs:
                if kind in kinds:
                    for sock in (client, upstream):
                        with contextlib.suppress(OSError):
                            sock.shutdown(socket.SHUT_RDWR)
                        sock.close()
                else:
                    keep.append((client, upstream, kind))
            self._pairs = keep

    def down(self) -> None:
        with self._lock:
            self._down = True
        self._cut({"api", "events"})

    def up(self) -> None:
        with self._lock:
            self._down = False
            self.refused = 0

    def cut_events(self) -> None:
        self._cut({"events"})

    def close(self) -> None:
        self._closed = True
        self.down()
        self._listener.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pod_manifest(name: str, namespace: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "volumes": [{"name": "data", "emptyDir": {}}],
            "containers": [
                {
                    "name": "app",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["sleep", "100000"],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
        },
    }


class Agent:
    """`kubecore run` as a process, against the proxy, with its API on a port of its own."""

    def __init__(
        self, manifests: Path, root: Path, engine: TestEngine, socket_path: str, *extra: str
    ) -> None:
        self.port = free_port()
        self.command = [
            sys.executable, "-m", "kubecore", "run", str(manifests), "--runtime", "docker",
            "--runtime-option", f"base_url=unix://{socket_path}",
            "--runtime-option", f"sandbox_image={engine.pause_image}",
            "--root-dir", str(root), "--port", str(self.port), "--node-name", root.parent.name,
            "--log-level", os.environ.get("FAULTS_LOG_LEVEL", "warning"), *extra,
        ]  # fmt: skip
        self.log = root.parent / f"agent-{time.monotonic_ns()}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Agent:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=log)
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        assert self.process is not None
        self.process.send_signal(sig)
        self.process.wait(timeout=30)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def threads(self) -> int:
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(
            next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:"))
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def wait_for(
    check: Callable[[], Any], timeout: float, what: str, agent: Agent | None = None
) -> Any:
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


def app_containers(raw: Any, namespace: str) -> list[dict[str, Any]]:
    return [
        c
        for c in raw.containers(all=True, filters={"label": f"{POD_NAMESPACE_LABEL}={namespace}"})
        if c["Labels"].get("io.kubernetes.container.name") not in (None, "POD")
    ]


def converged(raw: Any, namespace: str, pods: int) -> dict[str, str] | None:
    """Pod name -> its one running app container id, when every pod has exactly one and
    nothing else of the namespace runs."""
    running: dict[str, list[str]] = {}
    for c in app_containers(raw, namespace):
        if c["State"] == "running":
            running.setdefault(c["Labels"]["io.kubernetes.pod.name"], []).append(c["Id"])
    if len(running) != pods or any(len(ids) != 1 for ids in running.values()):
        return None
    return {pod: ids[0] for pod, ids in running.items()}


def half_made(raw: Any, namespace: str) -> list[tuple[str, dict[str, Any]]]:
    """Containers of the namespace created and never started, with no error: interrupted
    starts. (A start the engine refused leaves one `created` too, with its error: that one is a
    dead instance, kept as any other.)"""
    listed = raw.containers(all=True, filters={"label": f"{POD_NAMESPACE_LABEL}={namespace}"})
    found = []
    for c in listed:
        if c["State"] != "created":
            continue
        try:
            state = raw.inspect_container(c["Id"])["State"]
        except docker.errors.NotFound:
            continue
        if state["Status"] == "created" and not state["ExitCode"] and not state["Error"]:
            found.append((c["Names"][0], state))
    return found


def assert_no_duplicates(raw: Any, namespace: str) -> None:
    """One running sandbox and app container per pod, and nothing left half-made (a container
    created but never started by an agent that was killed)."""
    assert not half_made(raw, namespace), "left created"
    running: dict[str, int] = {}
    sandboxes: dict[str, int] = {}
    for c in raw.containers(filters={"label": f"{POD_NAMESPACE_LABEL}={namespace}"}):
        pod = c["Labels"].get("io.kubernetes.pod.name", "")
        table = sandboxes if c["Labels"].get("io.kubernetes.container.name") == "POD" else running
        table[pod] = table.get(pod, 0) + 1
    assert all(n == 1 for n in running.values()), running
    assert all(n == 1 for n in sandboxes.values()), sandboxes


@pytest.fixture
def scene(engine: TestEngine, raw: Any, test_uid: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    if not engine.base_url.startswith("unix://"):
        pytest.skip(f"the proxy needs the engine on a unix socket, not {engine.base_url}")
    namespace = f"faults-{test_uid}"
    node = tmp_path / f"node-{test_uid}"
    node.mkdir()
    manifests = node / "pods"
    manifests.mkdir()
    proxy = EngineProxy(node / "engine.sock", engine.base_url.removeprefix("unix://"))
    agents: list[Agent] = []

    def write_pods(count: int) -> None:
        for i in range(count):
            path = manifests / f"pod{i}.json"
            path.write_text(json.dumps(pod_manifest(f"pod{i}", namespace, engine.image)))

    def new_agent(*extra: str) -> Agent:
        agent = Agent(manifests, node / "root", engine, proxy.path, *extra)
        agents.append(agent)
        return agent.start()

    yield {"namespace": namespace, "proxy": proxy, "write_pods": write_pods, "agent": new_agent}
    for agent in agents:
        if agent.process is not None and agent.process.poll() is None:
            agent.kill()
    proxy.close()
    remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={namespace}")


def mark_volumes(raw: Any, ids: dict[str, str]) -> None:
    for pod, container_id in ids.items():
        run = raw.exec_create(container_id, ["sh", "-c", f"echo {pod} > /data/mark"])
        raw.exec_start(run)


def check_volumes(raw: Any, ids: dict[str, str]) -> None:
    for pod, container_id in ids.items():
        run = raw.exec_create(container_id, ["cat", "/data/mark"])
        assert raw.exec_start(run).decode().strip() == pod, f"emptyDir data of {pod} was lost"


def test_engine_unreachable_for_60s_then_back(raw: Any, scene: dict[str, Any]) -> None:
    namespace, proxy = scene["namespace"], scene["proxy"]
    scene["write_pods"](5)
    agent = scene["agent"]()
    before = wait_for(lambda: converged(raw, namespace, 5), 60, "5 pods running", agent)
    mark_volumes(raw, before)
    wait_for(lambda: agent.get("/healthz")[0] == 200, 30, "a healthy agent", agent)
    threads = agent.threads()

    proxy.down()
    started = time.monotonic()
    _, reason = wait_for(
        lambda: (r := agent.get("/healthz"))[0] == 500 and r, 30, "/healthz to say so", agent
    )
    assert "runtime" in reason and "down" in reason
    code, body = agent.get("/pods")
    assert code == 200 and len(json.loads(body)["items"]) == 5  # the API keeps serving
    while time.monotonic() - started < 60:
        time.sleep(1)
        assert agent.process is not None and agent.process.poll() is None, agent.output()
    attempts = proxy.refused
    assert attempts / 60 < 20, f"{attempts} connection attempts in 60 s: a tight loop"
    proxy.up()

    wait_for(lambda: agent.get("/healthz")[0] == 200, 60, "/healthz to recover", agent)
    after = wait_for(lambda: converged(raw, namespace, 5), 60, "5 pods running again", agent)
    assert after == before, "a container was restarted that did not need to be"
    assert_no_duplicates(raw, namespace)
    check_volumes(raw, after)
    wait_for(lambda: agent.threads() <= threads + 2, 30, "the agent's threads to settle", agent)


def test_event_stream_cut_is_resubscribed_and_no_death_is_missed(
    raw: Any, scene: dict[str, Any]
) -> None:
    namespace, proxy = scene["namespace"], scene["proxy"]
    scene["write_pods"](2)
    agent = scene["agent"]()
    before = wait_for(lambda: converged(raw, namespace, 2), 60, "2 pods running", agent)
    wait_for(lambda: proxy.event_streams >= 1, 30, "the agent's event stream", agent)
    streams = proxy.event_streams
    proxy.cut_events()
    wait_for(lambda: proxy.event_streams > streams, 30, "a new event stream", agent)
    raw.kill(before["pod0"])
    after = wait_for(
        lambda: (c := converged(raw, namespace, 2)) and c["pod0"] != before["pod0"] and c,
        30,
        "pod0's container replaced",
        agent,
    )
    assert after["pod1"] == before["pod1"]
    assert_no_duplicates(raw, namespace)


def test_agent_killed_at_ten_points_of_a_convergence(raw: Any, scene: dict[str, Any]) -> None:
    namespace = scene["namespace"]
    scene["write_pods"](20)
    points = random.Random(20).sample([x / 10 for x in range(2, 40)], 10)
    for point in points:
        agent = scene["agent"]()
        time.sleep(point)  # a kill point, not a wait for a result
        agent.kill(signal.SIGKILL)
    agent = scene["agent"]()
    final = wait_for(lambda: converged(raw, namespace, 20), 120, "20 pods running", agent)
    assert_no_duplicates(raw, namespace)
    import sys as _s

    time.sleep(3)
    for c in raw.containers(all=True, filters={"label": f"{POD_NAMESPACE_LABEL}={namespace}"}):
        print(c["Names"], c["State"], c["Status"], file=_s.stderr)
    print(agent.output(), file=_s.stderr)
    mark_volumes(raw, final)
    agent.kill(signal.SIGTERM)  # containers keep running after a clean stop
    assert converged(raw, namespace, 20) == final
    agent = scene["agent"]()
    wait_for(lambda: agent.get("/healthz")[0] == 200, 30, "the restarted agent", agent)
    assert converged(raw, namespace, 20) == final, "a restarted agent restarted containers"
    check_volumes(raw, final)


def test_root_dir_file_system_full(raw: Any, scene: dict[str, Any], tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    namespace = scene["namespace"]
    scene["write_pods"](2)
    agent = scene["agent"]()
    root = Path(agent.command[agent.command.index("--root-dir") + 1])
    agent.kill()
    root.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(root)], check=False
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (root / "filler").write_bytes(b"\0" * (256 * 1024 - 8192))
        with contextlib.suppress(OSError), open(root / "filler2", "wb") as f:
            f.write(b"\0" * 65536)
        agent = scene["agent"]()
        wait_for(lambda: agent.get("/pods")[0] == 200, 30, "the API", agent)
        for pod in ("pod0", "pod1"):  # each pod's failure named, with the reason
            named = f"pod {namespace}/{pod} stopped at"
            wait_for(
                lambda named=named: (
                    named in agent.output()  # type: ignore[misc]
                    and "No space left on device" in agent.output()
                ),
                60,
                f"{pod}'s error",
                agent,
            )
        assert agent.process is not None and agent.process.poll() is None, agent.output()
        assert converged(raw, namespace, 2) is None
        (root / "filler").unlink()
        wait_for(
            lambda: converged(raw, namespace, 2), 60, "pods running once there is space", agent
        )
        assert_no_duplicates(raw, namespace)
    finally:
        if agent.process is not None and agent.process.poll() is None:
            agent.kill()
        subprocess.run(["umount", "-l", str(root)], check=False)


ENGINE_SCRIPT = REPO / "scripts" / "test-engine.sh"


def _our_dockerd(engine: TestEngine) -> int:
    """The pid of the dockerd that scripts/test-engine.sh started for the engine under test
    (0: not ours to restart)."""
    if engine.base_url != f"unix://{ENGINE_STATE / 'docker.sock'}":
        return 0
    try:
        pid = int((ENGINE_STATE / "engine.pid").read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return 0
    return pid


@pytest.mark.serial  # restarts the shared dockerd
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_dockerd_restarted_during_a_convergence(
    engine: TestEngine, raw: Any, scene: dict[str, Any], sig: signal.Signals
) -> None:
    pid = _our_dockerd(engine)
    if not pid:
        pytest.skip("the engine was not started by scripts/test-engine.sh: not ours to restart")
    namespace = scene["namespace"]
    scene["write_pods"](20)
    # An engine killed between a container's create and its start leaves it `created`; the agent
    # starts a newer instance and the garbage collection removes the half-made one.
    agent = scene["agent"]("--container-gc-interval", "1")
    wait_for(
        lambda: len([c for c in app_containers(raw, namespace) if c["State"] == "running"]) >= 5,
        60,
        "a few pods up",
        agent,
    )
    os.kill(pid, sig)
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 60, "dockerd to exit", agent)
    subprocess.run(["bash", str(ENGINE_SCRIPT), "up"], check=True, capture_output=True, timeout=300)
    assert agent.process is not None and agent.process.poll() is None, agent.output()
    wait_for(lambda: converged(raw, namespace, 20), 180, "20 pods running again", agent)
    wait_for(lambda: not half_made(raw, namespace), 60, "the interrupted starts removed", agent)
    assert_no_duplicates(raw, namespace)
    wait_for(lambda: agent.get("/healthz")[0] == 200, 60, "a healthy agent", agent)
