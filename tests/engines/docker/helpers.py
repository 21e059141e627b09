"""Helpers shared by the Docker tests (plain functions; the fixtures live in conftest.py)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from kubecore._contract.values import ContainerConfig, SandboxConfig
from kubecore.runtime import container_labels
from kubecore_docker import DockerRuntime
from tests.engines.availability import engine_unavailable

TEST_LABEL = "io.kubecore.test"

ENGINE_STATE = Path(os.environ.get("KUBECORE_TEST_ENGINE_STATE", "/var/tmp/kubecore-test-engine"))
"""The state directory of scripts/test-engine.sh: the engine's socket, pid file and data root."""
ENV_FILE = ENGINE_STATE / "env"
DEFAULT_HOST = f"unix://{ENGINE_STATE / 'docker.sock'}"
"""The project's own engine (never the machine's /var/run/docker.sock unless told so)."""


def read_env_file(path: Path) -> dict[str, str]:
    """``export KEY=VALUE`` lines (as the script writes them) into a dict."""
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip("'\"")
    return values


@attrs.frozen
class TestEngine:
    base_url: str
    image: str
    pause_image: str
    registry_image: str
    pullable_image: str
    auth_registry_image: str
    auth_user: str
    auth_password: str

    __test__ = False  # not a test class


def _setting(values: dict[str, str], key: str, default: str) -> str:
    return os.environ.get(key) or values.get(key) or default


def find_docker_engine() -> TestEngine:
    """The test engine's settings, once it answers (a skip saying so when it does not; a
    failure when it lacks the test images)."""
    import docker

    values = read_env_file(ENV_FILE)
    base_url = _setting(values, "KUBECORE_DOCKER_HOST", DEFAULT_HOST)
    try:
        client = docker.APIClient(base_url=base_url, version="auto", timeout=5)
        client.ping()
    except Exception as error:
        engine_unavailable(
            f"no Docker engine answers at {base_url} ({type(error).__name__}); "
            "start one with `scripts/test-engine.sh up`"
        )
    found = TestEngine(
        base_url=base_url,
        image=_setting(values, "KUBECORE_TEST_IMAGE", "kubecore-test/busybox:1.35"),
        pause_image=_setting(values, "KUBECORE_TEST_PAUSE_IMAGE", "kubecore-test/pause:3.9"),
        registry_image=_setting(
            values, "KUBECORE_TEST_REGISTRY_IMAGE", "localhost:5000/kubecore/busybox:1.35"
        ),
        pullable_image=_setting(
            values, "KUBECORE_TEST_PULLABLE_IMAGE", "localhost:5000/kubecore/pullable:1"
        ),
        auth_registry_image=_setting(
            values, "KUBECORE_TEST_AUTH_REGISTRY_IMAGE", "localhost:5001/kubecore/busybox:1.35"
        ),
        auth_user=_setting(values, "KUBECORE_TEST_AUTH_USER", ""),
        auth_password=_setting(values, "KUBECORE_TEST_AUTH_PASSWORD", ""),
    )
    for image in (found.image, found.pause_image):
        try:
            client.inspect_image(image)
        except docker.errors.ImageNotFound:
            pytest.fail(f"the engine has no {image}: run `scripts/test-engine.sh up` first")
    client.close()
    return found


# A long-running command that exits at once on TERM (busybox sleep as PID 1 ignores it).
SLEEPER = ("sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done")

# Eats memory until its limit kills it. The hog is not PID 1: the engine sets OOMKilled only if
# its oom event beats the exit event, which is a race when PID 1 itself is killed; a shell that
# outlives the hog makes it certain.
OOM_HOG = ("sh", "-c", "tail /dev/zero; sleep 0.5; exit 137")


def wait_for(
    predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05, what: str = ""
) -> Any:
    """Poll until ``predicate()`` is truthy (bounded); return its value or fail the test."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bridge_gateway(raw: Any) -> str:
    """The IPv4 address of the engine's default bridge link (the containers' gateway).

    Read from the link itself: the ``bridge`` network's IPAM config has no ``Gateway`` on an
    engine's first start, only the link's name in its options."""
    import fcntl
    import struct

    options = raw.inspect_network("bridge").get("Options") or {}
    name = options.get("com.docker.network.bridge.name", "docker0")
    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            packed = fcntl.ioctl(
                sock.fileno(), siocgifaddr, struct.pack("256s", name.encode()[:15])
            )
        except OSError as error:
            pytest.fail(f"the engine's bridge {name} has no IPv4 address ({error})")
    return socket.inet_ntoa(packed[20:24])


def in_pod(container: ContainerConfig, sandbox: SandboxConfig) -> ContainerConfig:
    """``container`` with its pod's identity labels, as the core writes them (the adapter
    stores labels, it adds none of these)."""
    identity = container_labels(sandbox.name, sandbox.namespace, sandbox.uid, container.name)
    return attrs.evolve(container, labels={**identity, **container.labels})


def run_pod(
    runtime: DockerRuntime,
    make_sandbox: Callable[..., SandboxConfig],
    *containers: ContainerConfig,
    **sb: Any,
) -> tuple[str, list[str]]:
    """Run a sandbox (``make_sandbox(**sb)``) and start ``containers`` in it: the sandbox id and
    the container ids."""
    config = make_sandbox(**sb)
    sandbox_id = runtime.run_sandbox(config)
    ids = []
    for container in containers:
        cid = runtime.create_container(sandbox_id, in_pod(container, config), config)
        runtime.start_container(cid)
        ids.append(cid)
    return sandbox_id, ids
