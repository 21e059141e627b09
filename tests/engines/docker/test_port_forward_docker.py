"""Port forwarding (``PortForwarder``) on a real engine: a socket made in the sandbox's network
namespace reaches a server in the pod, also one bound only to the pod's loopback."""

from __future__ import annotations

import contextlib
import os
import socket
from concurrent.futures import ThreadPoolExecutor

import pytest

from kubecore._contract.errors import ContainerRuntimeError, SandboxNotFound
from kubecore.runtime import PortForwarder
from kubecore_docker import DockerRuntime
from tests.engines.docker.conftest import ContainerFactory, SandboxFactory
from tests.engines.docker.helpers import run_pod, wait_for
from tests.engines.docker.stream_support import HTTPD, http_get

pytestmark = pytest.mark.docker


def serving(runtime: DockerRuntime, sandbox_id: str, port: int) -> socket.socket | None:
    try:
        return runtime.port_forward(sandbox_id, port, 2.0)
    except ContainerRuntimeError:
        return None


@pytest.fixture
def pod(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> str:
    """A pod serving HTTP on every address at 8080 and on its loopback only at 8081."""
    script = f"{HTTPD.format(address='127.0.0.1:8081')} & {HTTPD.format(address='8080')}"
    sandbox_id, _ = run_pod(runtime, make_sandbox, make_container(command=("sh", "-c", script)))
    for port in (8080, 8081):
        wait_for(lambda p=port: serving(runtime, sandbox_id, p), 15, 0.1, f"httpd on {port}")
    return sandbox_id


def test_the_runtime_forwards_ports(runtime: DockerRuntime) -> None:
    assert isinstance(runtime, PortForwarder)


def test_http_get_through_the_forwarded_socket(runtime: DockerRuntime, pod: str) -> None:
    sock = runtime.port_forward(pod, 8080, 5.0)
    assert sock.gettimeout() is None  # blocking, as the contract says
    answer = http_get(sock)
    assert answer.startswith(b"HTTP/1.")
    assert answer.endswith(b"hello-from-pod\n")


def test_a_server_on_the_pods_loopback_only(runtime: DockerRuntime, pod: str) -> None:
    ip = runtime.sandbox_status(pod).ip
    with socket.socket() as direct:  # from outside the pod, its IP does not reach it
        direct.settimeout(5)
        with pytest.raises(ConnectionRefusedError):
            direct.connect((ip, 8081))
    assert http_get(runtime.port_forward(pod, 8081, 5.0)).endswith(b"hello-from-pod\n")


def test_twenty_concurrent_connections(runtime: DockerRuntime, pod: str) -> None:
    socks = [runtime.port_forward(pod, 8080 + n % 2, 5.0) for n in range(20)]  # all open at once
    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(http_get, socks))
    assert all(a.endswith(b"hello-from-pod\n") for a in answers), answers


def test_a_port_nothing_listens_on(runtime: DockerRuntime, pod: str) -> None:
    with pytest.raises(ContainerRuntimeError, match="nothing listens on port 9"):
        runtime.port_forward(pod, 9, 5.0)
    with pytest.raises(ContainerRuntimeError, match="bad port"):
        runtime.port_forward(pod, 70000, 5.0)


def test_no_thread_of_the_agent_stays_in_the_pods_namespace(
    runtime: DockerRuntime, pod: str
) -> None:
    own = os.readlink("/proc/self/ns/net")  # the main thread's, which never joins a pod's
    runtime.port_forward(pod, 8081, 5.0).close()
    pod_pid = runtime.connection.api().inspect_container(pod)["State"]["Pid"]
    assert os.readlink(f"/proc/{pod_pid}/ns/net") != own
    # A dialing thread has ended its Python part when the call returns; its OS thread (still
    # in the pod's namespace) exits a moment later.
    wait_for(lambda: set(thread_namespaces().values()) == {own}, 5, 0.01, "every thread back home")


def thread_namespaces() -> dict[str, str]:
    """This process's threads and the network namespace each is in."""
    found = {}
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            found[tid] = os.readlink(f"/proc/self/task/{tid}/ns/net")
    return found


def test_missing_stopped_and_non_sandbox_ids(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    with pytest.raises(SandboxNotFound):
        runtime.port_forward("0" * 64, 80, 1.0)
    sandbox_id, (cid,) = run_pod(runtime, make_sandbox, make_container())
    with pytest.raises(SandboxNotFound):
        runtime.port_forward(cid, 80, 1.0)  # a container is not a sandbox
    runtime.stop_sandbox(sandbox_id)
    with pytest.raises(ContainerRuntimeError, match="not running"):
        runtime.port_forward(sandbox_id, 80, 1.0)
