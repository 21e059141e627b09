"""The ``cri`` runtime's streams on the test containerd, beyond the conformance suite: what a
closed or refused port-forward leaves behind (nothing), the refusal in the Docker runtime's
words, an attach with stdin and a terminal, and the runtime's close ending every session."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubecore import ContainerRuntimeError
from kubecore.runtime import (
    ContainerConfig,
    RuntimeState,
    SandboxConfig,
    StreamSession,
    container_labels,
    sandbox_labels,
)
from kubecore_cri._plugin import create_cri_runtime
from kubecore_cri._runtime import CriRuntime
from tests.engines.cri.support import CriScope, TestContainerd

pytestmark = pytest.mark.cri

HTTPD = "mkdir -p /www; echo hello > /www/index.html; exec httpd -f -p 8080 -h /www"


@pytest.fixture
def runtime(containerd: TestContainerd, tmp_path: Path) -> Iterator[CriRuntime]:
    bundle = create_cri_runtime(endpoint=containerd.endpoint, log_root=str(tmp_path / "pods"))
    assert isinstance(bundle.runtime, CriRuntime)
    yield bundle.runtime
    bundle.runtime.close()


def wait_until(condition: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def start_pod(
    runtime: CriRuntime,
    scope: CriScope,
    image: str,
    *command: str,
    stdin: bool = False,
    tty: bool = False,
) -> tuple[str, str]:
    """A sandbox and a running container in it: their ids."""
    uid = uuid.uuid4().hex
    labels = {**sandbox_labels("pod", scope.namespace, uid, "node-a"), **scope.labels}
    sandbox = SandboxConfig(name="pod", namespace=scope.namespace, uid=uid, labels=labels)
    sandbox_id = runtime.run_sandbox(sandbox)
    container = ContainerConfig(
        name="app",
        image=image,
        command=command,
        stdin=stdin,
        tty=tty,
        labels={**container_labels("pod", scope.namespace, uid, "app", "node-a"), **scope.labels},
    )
    container_id = runtime.create_container(sandbox_id, container, sandbox)
    runtime.start_container(container_id)
    wait_until(
        lambda: runtime.container_status(container_id).state is RuntimeState.RUNNING,
        "the container to run",
    )
    return sandbox_id, container_id


def forward_threads() -> int:
    return sum(t.name.startswith("kubecore-cri-portforward") for t in threading.enumerate())


def connect(runtime: CriRuntime, sandbox_id: str, port: int) -> socket.socket:
    found: list[socket.socket] = []

    def connected() -> bool:
        try:
            found.append(runtime.port_forward(sandbox_id, port, 5.0))
        except ContainerRuntimeError:
            return False  # httpd may still be binding its port
        return True

    wait_until(connected, f"port {port} to accept")
    return found[0]


def http_get(sock: socket.socket) -> bytes:
    with sock:
        sock.settimeout(20)
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def test_a_closed_forward_leaves_nothing_behind(
    runtime: CriRuntime, containerd: TestContainerd, cri_scope: CriScope
) -> None:
    sandbox_id, _ = start_pod(runtime, cri_scope, containerd.image, "sh", "-c", HTTPD)
    before = forward_threads()
    assert http_get(connect(runtime, sandbox_id, 8080)).endswith(b"hello\n")
    idle = connect(runtime, sandbox_id, 8080)
    idle.close()  # nothing sent: the caller hung up
    wait_until(lambda: forward_threads() == before, "the forwards' threads to end")
    wait_until(lambda: len(runtime._live) == 0, "the runtime to forget the forwards")


def test_a_port_nothing_listens_on_is_refused_in_the_docker_runtimes_words(
    runtime: CriRuntime, containerd: TestContainerd, cri_scope: CriScope
) -> None:
    sandbox_id, _ = start_pod(runtime, cri_scope, containerd.image, "sleep", "600")
    with pytest.raises(ContainerRuntimeError) as refused:
        runtime.port_forward(sandbox_id, 8081, 5.0)
    assert str(refused.value) == f"nothing listens on port 8081 in sandbox {sandbox_id}"
    assert len(runtime._live) == 0


class Output:
    def __init__(self, session: StreamSession) -> None:
        self.data = b""
        self.ended = threading.Event()
        threading.Thread(target=self._read, args=(session,), daemon=True).start()

    def _read(self, session: StreamSession) -> None:
        for _, chunk in session.output():
            self.data += chunk
        self.ended.set()


def test_an_attach_with_stdin_and_a_terminal(
    runtime: CriRuntime, containerd: TestContainerd, cri_scope: CriScope
) -> None:
    script = 'while read line; do echo "got $line"; [ "$line" = bye ] && exit 3; done'
    _, container_id = start_pod(
        runtime, cri_scope, containerd.image, "sh", "-c", script, stdin=True, tty=True
    )
    session = runtime.attach(container_id, stdin=True, tty=False)
    try:
        assert session.tty, "a terminal, as the container was made"
        output = Output(session)
        session.write_stdin(b"hello\r")
        wait_until(lambda: b"got hello" in output.data, "the answer")
        session.write_stdin(b"bye\r")
        wait_until(output.ended.is_set, "the session to end with the container")
        assert session.wait(20) == 3
    finally:
        session.close()


def test_closing_the_runtime_ends_its_sessions(
    containerd: TestContainerd, cri_scope: CriScope, tmp_path: Path
) -> None:
    bundle = create_cri_runtime(endpoint=containerd.endpoint, log_root=str(tmp_path / "pods"))
    runtime = bundle.runtime
    assert isinstance(runtime, CriRuntime)
    try:
        sandbox_id, container_id = start_pod(
            runtime, cri_scope, containerd.image, "sh", "-c", HTTPD
        )
        session = runtime.exec_stream(container_id, ["cat"], stdin=True, tty=False)
        output = Output(session)
        session.write_stdin(b"ping\n")
        wait_until(lambda: output.data == b"ping\n", "cat's answer")
        forwarded = connect(runtime, sandbox_id, 8080)
        forwarded.settimeout(20)
    finally:
        runtime.close()
    wait_until(output.ended.is_set, "the exec's output to end")
    assert forwarded.recv(100) == b""
    forwarded.close()
    with pytest.raises(ContainerRuntimeError):
        runtime.exec_stream(container_id, ["true"], stdin=False, tty=False)
