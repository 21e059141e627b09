"""The in-memory runtime's port forwarding: an ``httpd`` serves the container's files, ``nc``
echoes, a test's own server answers a port, and nothing else is open."""

from __future__ import annotations

import socket

import pytest

from kubecore._contract.labels import CONTAINER_NAME_LABEL, MANAGED_LABEL, POD_UID_LABEL
from kubecore.runtime import (
    ContainerConfig,
    ContainerRuntimeError,
    PortForwarder,
    SandboxConfig,
    SandboxNotFound,
)
from kubecore_fake import FakeRuntime

IMAGE = "busybox:1.35"


@pytest.fixture
def fr() -> FakeRuntime:
    runtime = FakeRuntime()
    runtime.pull(IMAGE)
    return runtime


def _start(fr: FakeRuntime, *commands: tuple[str, ...]) -> str:
    config = SandboxConfig(
        name="web",
        namespace="default",
        uid="u1",
        labels={MANAGED_LABEL: "true", POD_UID_LABEL: "u1"},
    )
    sandbox_id = fr.run_sandbox(config)
    for index, command in enumerate(commands):
        name = f"c{index}"
        labels = {MANAGED_LABEL: "true", CONTAINER_NAME_LABEL: name, POD_UID_LABEL: "u1"}
        container = ContainerConfig(name=name, image=IMAGE, command=command, labels=labels)
        fr.start_container(fr.create_container(sandbox_id, container, config))
    return sandbox_id


def _exchange(sock: socket.socket, request: bytes) -> bytes:
    with sock:
        sock.settimeout(10)
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def test_httpd_serves_the_files_it_was_given(fr: FakeRuntime) -> None:
    assert isinstance(fr, PortForwarder)
    script = "mkdir -p /srv; echo hello > /srv/index.html; httpd -f -p 8080 -h /srv"
    sandbox_id = _start(fr, ("sh", "-c", script))
    answer = _exchange(fr.port_forward(sandbox_id, 8080, 5), b"GET / HTTP/1.0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.0 200 OK\r\n") and answer.endswith(b"\r\n\r\nhello\n")
    missing = _exchange(fr.port_forward(sandbox_id, 8080, 5), b"GET /nope HTTP/1.0\r\n\r\n")
    assert missing.startswith(b"HTTP/1.0 404 ")


def test_nc_echoes_and_a_test_server_answers_its_port(fr: FakeRuntime) -> None:
    sandbox_id = _start(fr, ("nc", "-lk", "-p", "9000"), ("nc", "-lk", "-p", "7000"))
    assert _exchange(fr.port_forward(sandbox_id, 9000, 5), b"x" * 100_000) == b"x" * 100_000

    def shout(sock: socket.socket) -> None:
        sock.sendall(sock.recv(100).upper())

    fr.serve_port(7000, shout)
    assert _exchange(fr.port_forward(sandbox_id, 7000, 5), b"quiet") == b"QUIET"


def test_only_ports_a_running_container_listens_on_are_open(fr: FakeRuntime) -> None:
    sandbox_id = _start(fr, ("nc", "-lk", "-p", "9000"))
    with pytest.raises(ContainerRuntimeError, match="nothing listens on port 9001"):
        fr.port_forward(sandbox_id, 9001, 5)
    with pytest.raises(SandboxNotFound):
        fr.port_forward("sandbox-404", 9000, 5)
    fr.stop_sandbox(sandbox_id)
    with pytest.raises(ContainerRuntimeError, match="not ready"):
        fr.port_forward(sandbox_id, 9000, 5)
