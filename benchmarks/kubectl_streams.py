"""9. Streaming into a pod on Docker, as a user types it, against the engine's own way in.

* ``kubectl exec POD -- true``, a whole kubectl process against the agent (``kubecore run
  --runtime docker``, its API over HTTPS with a token), against ``docker exec CONTAINER true``
  on the same container (a whole docker CLI process on the engine's socket); alternated,
  medians.
* Port-forward throughput: one HTTP GET of a file from busybox ``httpd`` in the pod through
  ``kubectl port-forward`` (kubectl -> agent -> the pod's network namespace) over its legacy
  SPDY upgrade and over SPDY tunnelled in a WebSocket (kubectl's default since 1.31), through
  the ``kubernetes`` Python client's ``kubernetes.stream.portforward`` (the
  ``v4.channel.k8s.io`` WebSocket), against the same GET straight to the pod's IP over the
  engine's bridge; all alternated in one run, medians, as seconds per transfer (lower is
  better) with the rate in the note. Another figure takes kubectl and the protocol out: the
  same GET on the socket the Docker runtime's ``port_forward`` answers, in this process (what
  the agent's port-forward sessions read and write).

Skips, saying why, without an engine, kubectl, the docker CLI or openssl (for the agent's
certificate: kubectl sends a token only over HTTPS).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import attrs

from benchmarks._common import TEST_IMAGE, Context, Row, Skip, median
from benchmarks._docker import NAMESPACE, PAUSE_IMAGE, base_url, cleanup, engine_client
from kubecore import load_runtime
from kubecore.runtime import (
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    ContainerRuntime,
    PortForwarder,
    SandboxState,
)

NAME = "kubectl_streams"
POD = "streams-bench"
TOKEN = "kubecore-bench-token"
PORT = 8080


def kubectl_binary() -> str:
    found = os.environ.get("KUBECORE_BENCH_KUBECTL") or shutil.which("kubectl")
    if not found:
        raise Skip("kubectl is not installed (Debian: apt-get install kubernetes-client)")
    return found


def run(ctx: Context) -> list[Row]:
    kubectl = kubectl_binary()
    docker_cli = shutil.which("docker")
    if docker_cli is None:
        raise Skip("the docker CLI is not installed (the exec baseline is `docker exec`)")
    client = engine_client()
    size_mib = 8 if ctx.quick else 64
    rounds = 3 if ctx.quick else 15
    try:
        cleanup(client)
        with (
            tempfile.TemporaryDirectory(prefix="kubecore-bench-streams-") as tmp,
            streaming_node(Path(tmp), kubectl) as node,
        ):
            node.start_pod(size_mib, ctx)
            rows = exec_rows(ctx, node, docker_cli, rounds)
            try:
                rows += port_forward_rows(ctx, node, size_mib, max(2, rounds // 3))
            except NotServed as refused:
                ctx.note(f"port-forward not measured: {refused}")
    finally:
        cleanup(client)
        client.close()
    return rows


# -- the agent and its pod ------------------------------------------------------------------


@attrs.define
class StreamingNode:
    """An agent process and a kubeconfig for it."""

    agent: subprocess.Popen[bytes]
    log: Path
    kubectl: str
    kubeconfig: Path
    home: Path

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
        }

    def command(self, *args: str) -> list[str]:
        return [self.kubectl, "-n", NAMESPACE, *args]

    def run(self, *args: str, stdin: str | None = None) -> str:
        done = self._run(*args, stdin=stdin)
        if done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def _run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args),
            env=self.env(),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def answers(self) -> bool:
        return self._run("get", "pods").returncode == 0

    def wait(self, what: str, until: Callable[[], bool], ctx: Context) -> None:
        deadline = time.monotonic() + min(90.0, max(10.0, ctx.time_left()))
        while not until():
            if self.agent.poll() is not None:
                raise RuntimeError(f"the agent exited ({self.agent.returncode}); see {self.log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not happen in time; see {self.log}")
            time.sleep(0.2)

    def start_pod(self, size_mib: int, ctx: Context) -> None:
        script = (
            f"dd if=/dev/urandom of=/www/blob bs=1048576 count={size_mib} 2>/dev/null; "
            f"httpd -p {PORT} -h /www; trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"
        )
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": POD, "namespace": NAMESPACE},
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [
                    {
                        "name": "main",
                        "image": TEST_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["sh", "-c", script],
                        "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 1},
                    }
                ],
            },
        }
        self.wait("the agent's API", self.answers, ctx)
        self.run("apply", "-f", "-", stdin=json.dumps(pod))
        self.wait(f"pod {POD} ready", self.ready, ctx)

    def pod(self) -> dict[str, Any]:
        return dict(json.loads(self.run("get", "pod", POD, "-o", "json")))

    def ready(self) -> bool:
        conditions = self.pod().get("status", {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    def container_id(self) -> str:
        status = self.pod()["status"]["containerStatuses"][0]
        return str(status["containerID"]).removeprefix("docker://")

    def pod_ip(self) -> str:
        return str(self.pod()["status"]["podIP"])


@contextlib.contextmanager
def streaming_node(tmp: Path, kubectl: str) -> Iterator[StreamingNode]:
    """``kubecore run --runtime docker`` serving its API over HTTPS with a token (as a user
    runs it), and a kubeconfig for it."""
    ca, cert, key = make_certs(tmp / "certs")
    (tmp / "token").write_text(TOKEN)
    port = free_port()
    command = [
        sys.executable, "-m", "kubecore", "run", "--runtime", "docker",
        "--runtime-option", f"base_url={base_url()}",
        "--runtime-option", f"sandbox_image={PAUSE_IMAGE}",
        "--root-dir", str(tmp / "root"), "--node-name", "bench-streams",
        "--port", str(port), "--api-token-file", str(tmp / "token"),
        "--tls-cert-file", str(cert), "--tls-private-key-file", str(key),
        "--relist-interval", "0.3", "--log-level", "warning",
    ]  # fmt: skip
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: node\n  cluster:\n    server: https://127.0.0.1:{port}\n"
        f"    certificate-authority: {ca}\n"
        f"users:\n- name: admin\n  user:\n    token: {TOKEN}\n"
        "contexts:\n- name: node\n  context: {cluster: node, user: admin}\n"
        "current-context: node\n"
    )
    (tmp / "home").mkdir()
    log_path = tmp / "agent.log"
    with open(log_path, "wb") as log:
        agent = subprocess.Popen(command, stdout=log, stderr=log)
    try:
        yield StreamingNode(agent, log_path, kubectl, kubeconfig, tmp / "home")
    finally:
        agent.send_signal(signal.SIGTERM)
        try:
            agent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait(10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_certs(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a serving certificate for 127.0.0.1 it signs (the ``openssl`` command)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise Skip("the openssl command is not installed (the agent's certificate)")
    directory.mkdir(parents=True)
    ca_key, ca, key, csr, cert = (
        directory / name for name in ("ca.key", "ca.crt", "server.key", "server.csr", "server.crt")
    )
    (directory / "ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    for args in (
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
         "-days", "1", "-subj", "/CN=kubecore bench CA"],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
         "-subj", "/CN=127.0.0.1"],
        ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
         "-out", cert, "-days", "1", "-extfile", directory / "ext"],
    ):  # fmt: skip
        subprocess.run([openssl, *map(str, args)], check=True, capture_output=True, timeout=60)
    return ca, cert, key


# -- exec -----------------------------------------------------------------------------------


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, timeout=60)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {done.stderr.decode(errors='replace').strip()}")
    return elapsed


def exec_rows(ctx: Context, node: StreamingNode, docker_cli: str, rounds: int) -> list[Row]:
    container = node.container_id()
    docker_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DOCKER_HOST": base_url()}
    kubectl_exec = node.command("exec", POD, "--", "true")
    docker_exec = [docker_cli, "exec", container, "true"]
    timed(kubectl_exec, node.env())  # warm: discovery cache, connections
    timed(docker_exec, docker_env)
    ours, theirs = alternate(
        ctx,
        rounds,
        lambda: timed(kubectl_exec, node.env()),
        lambda: timed(docker_exec, docker_env),
    )
    ctx.note(f"exec: {len(ours)} rounds; kubectl {fmt_ms(ours)}, docker exec {fmt_ms(theirs)}")
    return [
        Row(
            NAME,
            "kubectl exec POD -- true, round trip",
            median(ours) * 1000,
            "ms",
            baseline=median(theirs) * 1000,
            baseline_label="docker exec CONTAINER true on the same container",
        )
    ]


def alternate(ctx: Context, rounds: int, *measures: Callable[[], float]) -> list[list[float]]:
    """Each measure once a round, in turn, for ``rounds`` rounds (fewer when out of time)."""
    times: list[list[float]] = [[] for _ in measures]
    for done in range(rounds):
        if done and ctx.time_left() < 10:
            ctx.note(f"out of time after {done} rounds")
            break
        for measure, seen in zip(measures, times, strict=True):
            seen.append(measure())
    return times


def fmt_ms(values: list[float]) -> str:
    return "/".join(f"{v * 1000:.0f}" for v in sorted(values)) + " ms"


# -- port-forward ---------------------------------------------------------------------------


def port_forward_rows(ctx: Context, node: StreamingNode, size_mib: int, rounds: int) -> list[Row]:
    ip = node.pod_ip()
    size = size_mib * 1024 * 1024
    bundle = load_runtime("docker", base_url=base_url(), sandbox_image=PAUSE_IMAGE)
    runtime = cast(PortForwarder, bundle.runtime)
    sandbox = pod_sandbox(bundle.runtime)
    try:
        with forwarded(node, websockets=False) as spdy_port, forwarded(node) as tunnel_port:

            def through() -> float:
                return fetch(lambda: connect("127.0.0.1", spdy_port), size)

            def tunnelled() -> float:
                return fetch(lambda: connect("127.0.0.1", tunnel_port), size)

            def direct() -> float:
                return fetch(lambda: connect(ip, PORT), size)

            def own() -> float:
                return fetch(lambda: runtime.port_forward(sandbox, PORT, 10), size)

            python_client = python_client_socket(node)

            def websocket() -> float:
                return fetch(python_client, size)

            through()  # warm
            tunnelled()
            websocket()
            ours, theirs, adapter, channels, tunnel = alternate(
                ctx, rounds, through, direct, own, websocket, tunnelled
            )
    finally:
        bundle.runtime.close()
    rates = [size / median(times) / 1e6 for times in (ours, theirs, adapter, channels, tunnel)]
    ctx.note(
        f"port-forward: {len(ours)} GETs of {size_mib} MiB; through kubectl's SPDY upgrade "
        f"{rates[0]:.0f} MB/s, through kubectl's SPDY tunnelled in a WebSocket {rates[4]:.0f} "
        f"MB/s, direct to the pod IP {rates[1]:.0f} MB/s, on the runtime's own port_forward "
        f"socket (in this process, no kubectl, no protocol) {rates[2]:.0f} MB/s, through the "
        f"kubernetes client's WebSocket port-forward (v4.channel.k8s.io) {rates[3]:.0f} MB/s"
    )
    return [
        Row(
            NAME,
            f"GET {size_mib} MiB through the kubernetes client's portforward (WebSocket)",
            median(channels),
            "s",
            baseline=median(ours),
            baseline_label="the same GET through kubectl port-forward (SPDY upgrade), same run",
            note=f"{rates[3]:.0f} vs {rates[0]:.0f} MB/s; straight to the pod {rates[1]:.0f} MB/s",
        ),
        Row(
            NAME,
            f"GET {size_mib} MiB through kubectl port-forward (SPDY upgrade)",
            median(ours),
            "s",
            baseline=median(theirs),
            baseline_label="the same GET straight to the pod IP",
            note=f"{rates[0]:.0f} vs {rates[1]:.0f} MB/s",
        ),
        Row(
            NAME,
            f"GET {size_mib} MiB through kubectl port-forward (SPDY tunnelled in a WebSocket)",
            median(tunnel),
            "s",
            baseline=median(theirs),
            baseline_label="the same GET straight to the pod IP",
            note=f"{rates[4]:.0f} vs {rates[1]:.0f} MB/s",
        ),
        Row(
            NAME,
            f"GET {size_mib} MiB on the Docker runtime's port_forward socket",
            median(adapter),
            "s",
            baseline=median(theirs),
            baseline_label="the same GET straight to the pod IP",
            note=f"{rates[2]:.0f} vs {rates[1]:.0f} MB/s",
        ),
    ]


def python_client_socket(node: StreamingNode) -> Callable[[], socket.socket]:
    """A new socket to the pod's port through ``kubernetes.stream.portforward`` (one session a
    socket: closing it ends the session), with the node's kubeconfig."""
    try:
        from kubernetes import client, config, stream
    except ImportError:
        raise Skip("the kubernetes client is not installed (the test extra has it)") from None
    configuration = client.Configuration()
    config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(node.kubeconfig), client_configuration=configuration
    )
    api = client.CoreV1Api(client.ApiClient(configuration))

    def connect() -> socket.socket:
        session = stream.portforward(
            api.connect_get_namespaced_pod_portforward, POD, NAMESPACE, ports=str(PORT)
        )
        # The client's socket is a wrapper of one end of a socketpair: the end itself is what a
        # program reads (a plain socket, usable in a with block).
        sock: socket.socket = session.socket(PORT)._socket
        sock.setblocking(True)
        return sock

    return connect


def pod_sandbox(runtime: ContainerRuntime) -> str:
    """The id of the benchmark pod's ready sandbox."""
    for sandbox in runtime.list_sandboxes():
        labels = sandbox.labels
        ours = labels.get(POD_NAME_LABEL) == POD and labels.get(POD_NAMESPACE_LABEL) == NAMESPACE
        if ours and sandbox.state is SandboxState.READY:
            return sandbox.id
    raise RuntimeError(f"pod {POD} has no ready sandbox on the engine")


def connect(host: str, port: int) -> socket.socket:
    return socket.create_connection((host, port), timeout=60)


class NotServed(Exception):
    """kubectl port-forward ended before it forwarded anything: the node refused it."""


@contextlib.contextmanager
def forwarded(node: StreamingNode, *, websockets: bool = True) -> Iterator[int]:
    """``kubectl port-forward`` running, and the local port it listens on: its SPDY tunnelled
    in a WebSocket (kubectl's default since 1.31), or with ``websockets=False`` the legacy
    SPDY upgrade (``KUBECTL_PORT_FORWARD_WEBSOCKETS=false``)."""
    env = {**node.env(), "KUBECTL_PORT_FORWARD_WEBSOCKETS": "true" if websockets else "false"}
    process = subprocess.Popen(
        node.command("port-forward", f"pod/{POD}", f":{PORT}", "--address", "127.0.0.1"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        # "Forwarding from 127.0.0.1:PORT -> 8080": kubectl listens once it has printed it.
        line = process.stdout.readline()
        if "Forwarding from" not in line:
            try:
                _, stderr = process.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                stderr = "(still running)"
            raise NotServed(f"kubectl port-forward did not start: {line!r} {stderr.strip()!r}")
        yield int(line.split("127.0.0.1:", 1)[1].split()[0])
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def fetch(connect: Callable[[], socket.socket], size: int) -> float:
    """Seconds to GET the pod's blob on the socket ``connect`` gives, all ``size`` bytes read."""
    started = time.perf_counter()
    with connect() as sock:
        sock.settimeout(60)
        sock.sendall(b"GET /blob HTTP/1.0\r\nHost: pod\r\n\r\n")
        received = 0
        while chunk := sock.recv(1024 * 1024):
            received += len(chunk)
    elapsed = time.perf_counter() - started
    if received < size:
        raise RuntimeError(f"a GET ended after {received} of {size} bytes")
    return elapsed
