"""``kubectl exec`` and ``attach`` with the real kubectl (each installed version) against a node on
the in-memory runtime: output, exit codes, stdin, a terminal driven through a pty, attach, and
the errors people meet (a wrong container, no token).

Exec runs commands in the pod, so it needs the token as writes do: kubectl sends it only over
HTTPS, so every session goes through a TLS server with a kubeconfig holding the CA and token.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.kubectl_support import (
    KUBECTL_TIMEOUT,
    Certs,
    Kubectl,
    Node,
    each_kubectl,
    kubectl_for,
    make_certs,
    running_node,
    wait_for,
)

pytestmark = each_kubectl


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as found:
        yield found


@pytest.fixture
def kubectl(node: Node, certs: Certs, kubectl_binary: str) -> Kubectl:
    return node.writer(certs, binary=kubectl_binary)


def test_exec_prints_the_output_and_exits_with_the_command(kubectl: Kubectl) -> None:
    done = kubectl.run("exec", "talker", "--", "echo", "hi")
    assert (done.returncode, done.stdout) == (0, "hi\n")
    failed = kubectl.run("exec", "talker", "--", "sh", "-c", "exit 3", check=False)
    assert failed.returncode == 3
    assert "command terminated with exit code 3" in failed.stderr
    missing = kubectl.run("exec", "talker", "--", "no-such-program", check=False)
    assert missing.returncode == 127
    assert "no-such-program" in missing.stderr


def test_exec_keeps_stdout_and_stderr_apart(kubectl: Kubectl) -> None:
    done = kubectl.run("exec", "talker", "--", "cat", "/no/such/file", check=False)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "can't open '/no/such/file'" in done.stderr


def test_exec_pipes_stdin_until_its_end(kubectl: Kubectl) -> None:
    done = kubectl.run("exec", "-i", "talker", "--", "cat", input="data\nmore data\n")
    assert done.stdout == "data\nmore data\n"
    shell = kubectl.run(
        "exec", "-i", "talker", "--", "sh", input="echo from-sh\nexit 4\n", check=False
    )
    assert (shell.returncode, shell.stdout) == (4, "from-sh\n")


def read_until(
    fd: int, wanted: bytes, seen: bytearray, times: int = 1, timeout: float = 20.0
) -> None:
    """Read the pty until ``wanted`` has appeared ``times`` times (in all that was read),
    bounded in time. (A typed line is echoed at once, and a prompt may come between the echo
    and the command's output, as on any terminal: look for the output, not what is around.)"""
    deadline = time.monotonic() + timeout
    while seen.count(wanted) < times:
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


def test_exec_with_a_terminal_drives_a_shell(kubectl: Kubectl) -> None:
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    assert kubectl.binary is not None
    process = subprocess.Popen(
        [kubectl.binary, "exec", "-it", "talker", "--", "sh"],
        env={**kubectl.env(), "TERM": "xterm"},
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        close_fds=True,
    )
    os.close(secondary)
    seen = bytearray()
    try:
        read_until(primary, b"/ # ", seen)
        os.write(primary, b"echo pty-works\r")
        read_until(primary, b"pty-works\r\n", seen, times=2)  # the echo, then the output
        os.write(primary, b"stty size\r")
        read_until(primary, b"30 100\r\n", seen)  # kubectl sent the terminal's size
        os.write(primary, b"exit 7\r")
        assert process.wait(KUBECTL_TIMEOUT) == 7
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        os.close(primary)


def test_attach_follows_the_container_from_now_on(node: Node, kubectl: Kubectl) -> None:
    container = node.running("talker")
    assert container is not None
    process = kubectl.popen("attach", "talker")
    assert process.stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
    reader.start()
    try:
        # kubectl attaches once the session is up: keep writing until a line comes through.
        def came_through() -> bool:
            node.runtime.write_log(container.id, "attached line")
            return any("attached line" in line for line in lines)

        wait_for(came_through, timeout=KUBECTL_TIMEOUT, what="a line written after attach")
        assert not any("hello" in line for line in lines), "only output from now on"
        node.runtime.exit(container.id, 0)
        assert process.wait(KUBECTL_TIMEOUT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_a_wrong_container_is_refused_clearly(kubectl: Kubectl) -> None:
    done = kubectl.run("exec", "talker", "-c", "nope", "--", "true", check=False)
    assert done.returncode != 0
    assert "container nope is not valid for pod talker" in done.stderr


def test_exec_needs_the_token(node: Node, certs: Certs, kubectl_binary: str) -> None:
    server = node.https(certs)
    anonymous = kubectl_for(node.tmp / "anonymous", server.url, ca=certs.ca, binary=kubectl_binary)
    done = anonymous.run("exec", "talker", "--", "echo", "hi", check=False)
    assert done.returncode != 0
    assert "hi" not in done.stdout  # (kubectl asks for a user name it is not given)
    wrong = kubectl_for(
        node.tmp / "wrong", server.url, ca=certs.ca, token="not-the-token", binary=kubectl_binary
    )
    refused = wrong.run("exec", "talker", "--", "echo", "hi", check=False)
    assert refused.returncode != 0 and "hi" not in refused.stdout
    # refused at discovery already: every read needs the token
    assert "provide credentials" in refused.stderr, refused.stderr


def test_cp_copies_into_the_container_and_back(kubectl: Kubectl, tmp_path: Path) -> None:
    source = tmp_path / "local.txt"
    source.write_bytes(b"copied by kubectl cp\n\xff\x00 and bytes that are not UTF-8\n")
    kubectl.run("cp", str(source), "talker:/tmp/copied.txt")
    shown = kubectl.run("exec", "talker", "--", "ls", "/tmp")
    assert shown.stdout.split() == ["copied.txt"]
    back = tmp_path / "back.txt"
    kubectl.run("cp", "talker:/tmp/copied.txt", str(back))
    assert back.read_bytes() == source.read_bytes()


SHELL_POD = """
apiVersion: v1
kind: Pod
metadata: {name: console}
spec:
  restartPolicy: Never
  containers:
  - {name: main, image: busybox:1.35, command: [sh], stdin: true, tty: true}
"""


def test_attach_with_a_terminal_drives_the_containers_shell(node: Node, kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", "-", input=SHELL_POD)
    wait_for(lambda: node.running("console"), what="the console pod to run")
    primary, secondary = pty.openpty()
    assert kubectl.binary is not None
    process = subprocess.Popen(
        [kubectl.binary, "attach", "-it", "console"],
        env={**kubectl.env(), "TERM": "xterm"},
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        close_fds=True,
    )
    os.close(secondary)
    seen = bytearray()
    try:
        os.write(primary, b"\r")  # as kubectl says: press enter for a prompt
        read_until(primary, b"/ # ", seen)
        os.write(primary, b"echo attached-shell\r")
        read_until(primary, b"attached-shell\r\n", seen, times=2)
        os.write(primary, b"exit 3\r")
        assert process.wait(KUBECTL_TIMEOUT) == 0  # attach ends when the container does

        def terminated() -> int | None:
            pod = node.kubelet.get_pod("default", "console")
            statuses = pod.status.container_statuses if pod and pod.status else []
            done = [s.state.terminated for s in statuses if s.state and s.state.terminated]
            return done[0].exit_code if done else None

        assert wait_for(lambda: terminated() == 3, what="the container to exit 3")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        os.close(primary)
