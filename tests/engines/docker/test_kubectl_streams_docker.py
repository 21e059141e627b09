"""The real ``kubectl`` streaming into pods on the Docker engine: ``exec`` (piped and with a
terminal), ``cp`` both ways (a file and a directory) and ``port-forward`` (an HTTP GET to busybox
``httpd`` in the pod, two ports, 20 connections at once).

One agent and one pod serve the whole module (an agent on Docker takes seconds to start);
kubectl sends its token only over HTTPS, so the agent serves TLS."""

from __future__ import annotations

import contextlib
import fcntl
import filecmp
import json
import os
import pty
import select
import signal
import socket
import struct
import subprocess
import termios
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import pytest

from kubecore._agent.kubelet import Kubelet
from kubecore._contract.labels import POD_NAMESPACE_LABEL
from tests.api.kubectl_support import (
    KUBECTL_TIMEOUT,
    Kubectl,
    each_kubectl,
    needs_kubectl,
    wait_for,
)
from tests.engines.docker.conftest import TestEngine, remove_labelled
from tests.engines.docker.kubectl_agent import docker_api_node
from tests.engines.docker.stream_support import HTTPD, http_get

pytestmark = [pytest.mark.docker, needs_kubectl, each_kubectl]
both_tunnels = pytest.mark.parametrize("websockets", [True, False], ids=["websocket", "spdy"])
"""port-forward tunnelled in a WebSocket (kubectl 1.31 and later) and over the legacy SPDY
upgrade (``KUBECTL_PORT_FORWARD_WEBSOCKETS=false``)."""

POD = "streams"
POD_SCRIPT = (
    f"({HTTPD.format(address='8080')}) & ({HTTPD.format(address='127.0.0.1:8081')}) & "
    "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"
)
"""httpd on every address at 8080, and on the pod's loopback only at 8081."""


@attrs.frozen
class Site:
    kubectl: Kubectl
    namespace: str
    kubelet: Kubelet

    @property
    def binary(self) -> str:
        assert self.kubectl.binary is not None
        return self.kubectl.binary

    def run(
        self, *args: str, input: bytes | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        """``kubectl -n NAMESPACE ARGS`` with bytes in and out."""
        done = subprocess.run(
            [self.binary, "-n", self.namespace, *args],
            env=self.kubectl.env(),
            input=input,
            capture_output=True,
            timeout=KUBECTL_TIMEOUT,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr!r}")
        return done


@pytest.fixture(scope="module")
def agent_site(
    engine: TestEngine, raw: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("kubectl-streams")
    namespace = f"kstreams-{uuid.uuid4().hex[:10]}"
    try:
        with docker_api_node(engine, tmp, f"kubectl-streams-{uuid.uuid4().hex[:8]}") as node:
            kubelet = node.kubelet
            found = Site(node.kubectl, namespace, kubelet)
            manifest = tmp / "pod.json"
            manifest.write_text(json.dumps(pod_manifest(engine.image, namespace)))
            found.run("apply", "-f", str(manifest))
            wait_for(lambda: pod_ready(kubelet, namespace), 60, what=f"pod {POD} to be ready")
            yield found
    finally:
        remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={namespace}")


@pytest.fixture
def site(agent_site: Site, kubectl_binary: str) -> Site:
    """The module's agent and pod, driven by one of the installed kubectls."""
    return attrs.evolve(agent_site, kubectl=attrs.evolve(agent_site.kubectl, binary=kubectl_binary))


def pod_ready(kubelet: Kubelet, namespace: str, name: str = POD) -> bool:
    pod = kubelet.get_pod(namespace, name)
    conditions = pod.status.conditions if pod is not None and pod.status is not None else []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def pod_manifest(image: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": POD, "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", POD_SCRIPT],
                    "ports": [{"containerPort": 8080}],
                }
            ],
        },
    }


# -- exec -------------------------------------------------------------------------------------


def test_exec_output_and_exit_codes(site: Site) -> None:
    done = site.run("exec", POD, "--", "sh", "-c", "echo out; echo err >&2")
    assert (done.stdout, done.stderr) == (b"out\n", b"err\n")
    failed = site.run("exec", POD, "--", "sh", "-c", "exit 3", check=False)
    assert failed.returncode == 3
    assert b"command terminated with exit code 3" in failed.stderr
    missing = site.run("exec", POD, "--", "no-such-command", check=False)
    assert missing.returncode == 127
    assert b"no-such-command" in missing.stderr + missing.stdout


def test_exec_pipes_stdin_to_its_end(site: Site) -> None:
    data = os.urandom(2 * 1024 * 1024) + b"\x10\x11 the end\n"
    done = site.run("exec", "-i", POD, "--", "cat", input=data)
    assert done.stdout == data
    shell = site.run("exec", "-i", POD, "--", "sh", input=b"echo from-sh\nexit 4\n", check=False)
    assert (shell.returncode, shell.stdout) == (4, b"from-sh\n")


def read_until(fd: int, wanted: bytes, seen: bytearray, timeout: float = 30.0) -> None:
    """Read the pty until ``wanted`` has appeared (in all read so far), bounded in time."""
    deadline = time.monotonic() + timeout
    while wanted not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{wanted!r} did not appear; the terminal showed {bytes(seen)!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the other side closed
                chunk = b""
            if not chunk:
                raise AssertionError(f"the terminal closed before {wanted!r}: {bytes(seen)!r}")
            seen += chunk


def test_exec_with_a_terminal(site: Site) -> None:
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    process = subprocess.Popen(
        [site.binary, "exec", "-it", POD, "-n", site.namespace, "--", "sh"],
        env={**site.kubectl.env(), "TERM": "xterm"},
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        close_fds=True,
    )
    os.close(secondary)
    seen = bytearray()
    try:
        read_until(primary, b"# ", seen)
        os.write(primary, b"stty size\r")
        read_until(primary, b"\r\n30 100\r\n", seen)  # kubectl sent the terminal's size
        fcntl.ioctl(primary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        process.send_signal(signal.SIGWINCH)  # what the terminal sends its foreground process
        os.write(primary, b"stty size\r")
        read_until(primary, b"\r\n40 120\r\n", seen)  # and follows its resize
        os.write(primary, b"echo typed-\x10\x11-on\r")  # Docker's detach keys are only keys
        read_until(primary, b"-on\r\n", seen)
        os.write(primary, b"exit 7\r")
        assert process.wait(KUBECTL_TIMEOUT) == 7
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        os.close(primary)


# -- cp ---------------------------------------------------------------------------------------


def test_cp_a_file_in_and_out(site: Site, tmp_path: Path) -> None:
    source = tmp_path / "data.bin"
    source.write_bytes(os.urandom(1024 * 1024 + 3))
    site.run("cp", str(source), f"{POD}:/tmp/data.bin")
    inside = site.run("exec", POD, "--", "md5sum", "/tmp/data.bin").stdout.split()[0]
    assert inside.decode() == _md5(source)
    back = tmp_path / "back.bin"
    site.run("cp", f"{POD}:/tmp/data.bin", str(back))
    assert back.read_bytes() == source.read_bytes()


def test_cp_a_directory_in_and_out(site: Site, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub" / "deeper").mkdir(parents=True)
    (tree / "a.txt").write_text("alpha\n")
    (tree / "sub" / "b.bin").write_bytes(os.urandom(300_000))
    (tree / "sub" / "deeper" / "c.txt").write_text("gamma " * 1000)
    (tree / "empty").mkdir()
    inside = f"/tmp/tree-{uuid.uuid4().hex[:8]}"  # new: cp into an existing one nests
    site.run("cp", str(tree), f"{POD}:{inside}")
    listing = site.run("exec", POD, "--", "find", inside).stdout.decode().split()
    assert f"{inside}/sub/deeper/c.txt" in listing and f"{inside}/empty" in listing
    back = tmp_path / "back"
    site.run("cp", f"{POD}:{inside}", str(back))
    comparison = filecmp.dircmp(tree, back)
    assert _same_tree(comparison), (comparison.left_list, comparison.right_list)


def _same_tree(comparison: filecmp.dircmp[str]) -> bool:
    _, mismatch, errors = filecmp.cmpfiles(
        comparison.left, comparison.right, comparison.common_files, shallow=False
    )
    return (
        not comparison.left_only
        and not comparison.right_only
        and not mismatch
        and not errors
        and all(_same_tree(sub) for sub in comparison.subdirs.values())
    )


def _md5(path: Path) -> str:
    import hashlib

    return hashlib.md5(path.read_bytes()).hexdigest()


# -- port-forward ---------------------------------------------------------------------------


@contextlib.contextmanager
def port_forward(site: Site, *ports: int, websockets: bool) -> Iterator[list[int]]:
    """``kubectl port-forward pod/POD :PORT...`` running, tunnelled in a WebSocket or over the
    legacy SPDY upgrade: the local ports, in order."""
    args = [f":{port}" for port in ports]
    process = subprocess.Popen(
        [site.binary, "-n", site.namespace, "port-forward", f"pod/{POD}", *args],
        env={**site.kubectl.env(), "KUBECTL_PORT_FORWARD_WEBSOCKETS": str(websockets).lower()},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        local: list[int] = []
        # "Forwarding from 127.0.0.1:LOCAL -> PORT" (and "from [::1]:LOCAL") for each port in
        # turn, printed once it listens there.
        for _ in range(2 * len(ports)):
            line = process.stdout.readline()
            if "Forwarding from" not in line:
                _, stderr = process.communicate(timeout=10)
                raise AssertionError(f"kubectl port-forward did not start: {line!r} {stderr!r}")
            if "127.0.0.1:" in line:
                local.append(int(line.split("127.0.0.1:", 1)[1].split()[0]))
            if len(local) == len(ports):
                break
        yield local
    finally:
        process.terminate()
        process.wait(10)


def get(port: int) -> bytes:
    return http_get(socket.create_connection(("127.0.0.1", port), timeout=10))


@both_tunnels
def test_port_forward_to_httpd_in_the_pod(site: Site, websockets: bool) -> None:
    with port_forward(site, 8080, websockets=websockets) as (local,):
        answer = get(local)
        assert answer.startswith(b"HTTP/1.") and answer.endswith(b"hello-from-pod\n")
        assert get(local).endswith(b"hello-from-pod\n")  # a second connection


@both_tunnels
def test_port_forward_two_ports_one_on_the_pods_loopback_only(site: Site, websockets: bool) -> None:
    with port_forward(site, 8080, 8081, websockets=websockets) as (everywhere, loopback):
        assert get(everywhere).endswith(b"hello-from-pod\n")
        assert get(loopback).endswith(b"hello-from-pod\n")


@both_tunnels
def test_port_forward_twenty_concurrent_connections(site: Site, websockets: bool) -> None:
    with port_forward(site, 8080, websockets=websockets) as (local,):
        socks = [socket.create_connection(("127.0.0.1", local), timeout=10) for _ in range(20)]
        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(http_get, socks))
    assert all(a.endswith(b"hello-from-pod\n") for a in answers), answers


@both_tunnels
def test_port_forward_to_a_port_nothing_listens_on(site: Site, websockets: bool) -> None:
    with (
        port_forward(site, 9, websockets=websockets) as (local,),
        socket.create_connection(("127.0.0.1", local), timeout=10) as sock,
    ):
        sock.settimeout(20)
        assert sock.recv(100) == b""  # kubectl closes the connection it could not forward


# -- attach -----------------------------------------------------------------------------------


def test_attach_to_a_container_with_stdin_open(
    site: Site, engine: TestEngine, tmp_path: Path
) -> None:
    script = 'echo before; while read line; do echo "got $line"; [ "$line" = bye ] && exit 3; done'
    manifest = pod_manifest(engine.image, site.namespace)
    talker = f"talker-{uuid.uuid4().hex[:8]}"
    manifest["metadata"]["name"] = talker
    manifest["spec"]["restartPolicy"] = "Never"
    manifest["spec"]["containers"][0].update(command=["sh", "-c", script], stdin=True)
    del manifest["spec"]["containers"][0]["ports"]
    (tmp_path / "talker.json").write_text(json.dumps(manifest))
    site.run("apply", "-f", str(tmp_path / "talker.json"))
    wait_for(lambda: pod_ready(site.kubelet, site.namespace, talker), 60, what=f"{talker} ready")
    process = subprocess.Popen(
        [site.binary, "-n", site.namespace, "attach", "-i", talker],
        env=site.kubectl.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b"hello\n")
        process.stdin.flush()
        assert process.stdout.readline() == b"got hello\n"  # not "before": output from now on
        process.stdin.write(b"bye\n")
        process.stdin.flush()
        assert process.stdout.readline() == b"got bye\n"
        process.wait(KUBECTL_TIMEOUT)  # the container exited: the session ends
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
