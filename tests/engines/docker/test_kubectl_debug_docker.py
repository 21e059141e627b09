"""``kubectl debug`` on the Docker engine, by the real kubectl (Debian's 1.32 and PyPI's 1.37,
each where installed): a busybox debug container added to a running pod with ``--target`` sees
the app's processes (``kubectl exec ... -- ps`` in it), shows running, and restarts nothing;
``kubectl debug -it`` attaches a terminal to it and runs what is typed there.

One agent and one pod serve the whole module; kubectl sends its token only over HTTPS, so the
agent serves TLS."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from kubecore._agent.kubelet import Kubelet
from kubecore._contract.labels import POD_NAMESPACE_LABEL
from tests.api.kubectl_support import (
    KUBECTL_BINARIES,
    KUBECTL_TIMEOUT,
    Kubectl,
    wait_for,
)
from tests.engines.docker.conftest import TestEngine, remove_labelled
from tests.engines.docker.kubectl_agent import docker_api_node

pytestmark = pytest.mark.docker

POD = "debugged"
MARKER = f"app-marker-{uuid.uuid4().hex[:8]}"
BINARIES = KUBECTL_BINARIES


@attrs.frozen
class Site:
    kubectl: Kubectl
    namespace: str
    kubelet: Kubelet

    def run(self, binary: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``kubectl -n NAMESPACE ARGS`` with that binary."""
        done = subprocess.run(
            [binary, "-n", self.namespace, *args],
            env=self.kubectl.env(),
            capture_output=True,
            text=True,
            timeout=KUBECTL_TIMEOUT,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}")
        return done

    def jsonpath(self, binary: str, expression: str) -> str:
        return self.run(binary, "get", "pod", POD, "-o", f"jsonpath={expression}").stdout


@pytest.fixture(params=sorted(BINARIES))
def binary(request: pytest.FixtureRequest) -> str:
    path = BINARIES[request.param]
    if not os.path.exists(path):
        pytest.skip(f"{path} is not installed")
    return path


@pytest.fixture(scope="module")
def site(engine: TestEngine, raw: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("kubectl-debug")
    namespace = f"kdebug-{uuid.uuid4().hex[:10]}"
    try:
        with docker_api_node(engine, tmp, f"kubectl-debug-{uuid.uuid4().hex[:8]}") as node:
            kubelet = node.kubelet
            found = Site(node.kubectl, namespace, kubelet)
            manifest = tmp / "pod.json"
            manifest.write_text(json.dumps(pod_manifest(engine.image, namespace)))
            found.run(_installed(), "apply", "-f", str(manifest))
            wait_for(lambda: app_running(kubelet, namespace), 60, what=f"pod {POD} to run")
            yield found
    finally:
        remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={namespace}")


def _installed() -> str:
    for path in BINARIES.values():
        if os.path.exists(path):
            return path
    pytest.skip("no kubectl binary is installed")


def app_running(kubelet: Kubelet, namespace: str) -> bool:
    pod = kubelet.get_pod(namespace, POD)
    statuses = pod.status.container_statuses if pod is not None and pod.status else ()
    return bool(statuses) and all(s.state.running is not None for s in statuses)


def pod_manifest(image: str, namespace: str) -> dict[str, Any]:
    script = f"trap 'exit 0' TERM; echo {MARKER}; while :; do sleep 1 & wait $!; done"
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
                    "command": ["sh", "-c", script],
                }
            ],
        },
    }


def main_container_id(site: Site, binary: str) -> str:
    return site.jsonpath(binary, "{.status.containerStatuses[0].containerID}")


def test_kubectl_debug_adds_a_container_that_sees_the_apps_processes(
    site: Site, engine: TestEngine, binary: str
) -> None:
    name = f"dbg-{uuid.uuid4().hex[:6]}"
    before = main_container_id(site, binary)
    done = site.run(
        binary,
        "debug",
        POD,
        f"--image={engine.image}",
        "--target=main",
        "--profile=baseline",  # kubectl's general profile adds SYS_PTRACE: refused
        f"--container={name}",
        "--",
        "sleep",
        "1000",
    )
    assert 'Targeting container "main"' in done.stdout + done.stderr
    running = f'{{.status.ephemeralContainerStatuses[?(@.name=="{name}")].state.running}}'
    wait_for(lambda: site.jsonpath(binary, running), 60, what=f"{name} to show running")
    seen = site.run(binary, "exec", POD, "-c", name, "--", "ps").stdout
    assert MARKER in seen and "sleep 1000" in seen, seen
    assert site.jsonpath(binary, "{.status.containerStatuses[*].restartCount}") == "0"
    assert main_container_id(site, binary) == before  # the app was not restarted


def read_until(fd: int, wanted: bytes, seen: bytearray, timeout: float = 60.0) -> None:
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


def test_kubectl_debug_it_attaches_a_terminal_to_the_debug_container(
    site: Site, engine: TestEngine, binary: str
) -> None:
    name = f"dbg-it-{uuid.uuid4().hex[:6]}"
    before = main_container_id(site, binary)
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [
            binary,
            "-n",
            site.namespace,
            "debug",
            "-it",
            POD,
            f"--image={engine.image}",
            "--target=main",
            "--profile=baseline",  # kubectl's general profile adds SYS_PTRACE: refused
            f"--container={name}",
            "--",
            "sh",
        ],
        env={**site.kubectl.env(), "TERM": "xterm"},
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        close_fds=True,
    )
    os.close(secondary)
    seen = bytearray()
    try:
        read_until(primary, b"try pressing enter", seen)  # kubectl attached
        os.write(primary, b"\r")
        read_until(primary, b"# ", seen)
        os.write(primary, b"ps; echo done-$((6*7))\r")
        read_until(primary, b"done-42", seen)
        assert MARKER.encode() in seen, bytes(seen)
        os.write(primary, b"exit 0\r")
        assert process.wait(KUBECTL_TIMEOUT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        os.close(primary)
    terminated = f'{{.status.ephemeralContainerStatuses[?(@.name=="{name}")].state.terminated}}'
    wait_for(lambda: site.jsonpath(binary, terminated), 60, what=f"{name} to end")
    restarts = f'{{.status.ephemeralContainerStatuses[?(@.name=="{name}")].restartCount}}'
    assert site.jsonpath(binary, restarts) == "0"
    assert main_container_id(site, binary) == before
