"""The agent (Kubelet) end to end on the real Docker engine, in real time.

Each test runs its pods in a namespace of its own (``e2e-<uid>``) and removes every container of
that namespace afterwards (by the ``io.kubernetes.pod.namespace`` label), after its agents stopped.
The agents relist every 0.3 s with 1 s grace periods (the executor's floor is 2 s, and every test
command exits at once on TERM). CrashLoopBackOff keeps Kubernetes' 10 s initial delay: the
backoff is not configurable through ``KubeletConfig``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet
from kubecore._contract.protocols import Puller
from kubecore._kuberuntime.credentials import DockerKeyring
from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import (
    SERVER,
    AgentFactory,
    ScopedPuller,
    all_running,
    container,
    docker_config,
    engine_containers,
    get_pod,
    make_pod,
    wait_pod,
)
from tests.engines.docker.helpers import TEST_LABEL, free_port, wait_for

pytestmark = pytest.mark.docker

# busybox httpd serving one page, exiting at once on TERM (httpd as PID 1 would ignore it).
HTTPD = [
    "sh",
    "-c",
    "trap 'exit 0' TERM; mkdir -p /www; echo \"$GREETING\" > /www/index.html;"
    " httpd -f -p 8080 -h /www & wait $!",
]
GREETING = "hello from the server container"


def http_get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            body: bytes = response.read()
            return body
    except (OSError, urllib.error.URLError):
        return None


def reasons(kubelet: Kubelet, namespace: str, name: str) -> list[str]:
    return kubelet._rooms.events.reasons(namespace=namespace, name=name)


# --- (a) two containers, one network ---------------------------------------------------------


# --- (b) emptyDir ----------------------------------------------------------------------------


# --- (c) hostPort ----------------------------------------------------------------------------


def test_a_host_port_is_reachable_on_loopback(
    make_agent: AgentFactory, engine: TestEngine, namespace: str
) -> None:
    port = free_port()
    pod = make_pod(
        "exposed",
        namespace,
        [
            container(
                "server",
                engine.image,
                HTTPD,
                env=[{"name": "GREETING", "value": "hello over the host port"}],
                ports=[{"containerPort": 8080, "hostPort": port}],
            )
        ],
    )
    kubelet = make_agent([pod])
    wait_pod(kubelet, namespace, "exposed", all_running)
    body = wait_for(
        lambda: http_get(f"http://127.0.0.1:{port}/"), timeout=10, what=f"127.0.0.1:{port}"
    )
    assert body == b"hello over the host port\n"


# --- (d) restart policy and CrashLoopBackOff -------------------------------------------------


# --- (e) liveness probe ----------------------------------------------------------------------


# --- (f) postStart failure -------------------------------------------------------------------


# --- (g) logs and exec -----------------------------------------------------------------------


# --- (h) garbage collection ------------------------------------------------------------------


def commit_image(raw: Any, base: str, repository: str, tag: str, marker: str) -> str:
    """A new local image (its own id) on top of ``base``, made without any registry."""
    created = raw.create_container(base, command=["true"], labels={TEST_LABEL: marker})
    try:
        committed = raw.commit(
            created["Id"], repository=repository, tag=tag, changes=[f"ENV KUBECORE_E2E={marker}"]
        )
    finally:
        raw.remove_container(created["Id"], force=True)
    image_id: str = committed["Id"]
    return image_id


def test_image_gc_removes_an_unused_image_and_keeps_the_used_one(
    make_agent: AgentFactory,
    engine: TestEngine,
    namespace: str,
    raw: Any,
    test_uid: str,
    own_images: list[str],
) -> None:
    # The disk cannot be filled for the test: thresholds of 0 % make every pass collect, and the
    # puller shows image GC only this test's two images (the engine is shared).
    repository = f"kubecore-e2e/gc-{test_uid}"
    used = f"{repository}:used"
    unused = f"{repository}:unused"
    own_images.extend([used, unused])
    used_id = commit_image(raw, engine.image, repository, "used", f"{test_uid}-used")
    unused_id = commit_image(raw, engine.image, repository, "unused", f"{test_uid}-unused")
    assert used_id != unused_id

    scoped: list[ScopedPuller] = []

    def wrap(puller: Puller) -> Puller:
        scoped.append(ScopedPuller(puller))
        return scoped[-1]

    pod = make_pod("imgc", namespace, [container("app", used, imagePullPolicy="Never")])
    kubelet = make_agent(
        [pod],
        wrap=wrap,
        image_gc_interval=0.3,
        image_gc_high=0,
        image_gc_low=0,
        image_min_age=0.0,
    )
    wait_pod(kubelet, namespace, "imgc", all_running)
    scoped[0].prefixes.add(repository + ":")  # from now on image GC sees both images

    def gone(ref: str) -> bool:
        return not raw.images(name=ref)

    assert wait_for(lambda: gone(unused), timeout=10, what="the unused image removed")
    assert scoped[0].removed == [unused_id]
    time.sleep(1.0)  # a few more passes
    assert not gone(used)
    assert all_running(get_pod(kubelet, namespace, "imgc"))


# --- (i) registries --------------------------------------------------------------------------


def write_docker_config(path: Path, auths: dict[str, tuple[str, str]]) -> DockerKeyring:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(docker_config(auths)))
    return DockerKeyring.from_file(path)


# --- (j) adoption after an agent restart -----------------------------------------------------


def test_cli_run_once_pulls_with_registry_config(
    engine: TestEngine, namespace: str, raw: Any, own_images: list[str], tmp_path: Path
) -> None:
    """``kubecore run --runtime docker --once --registry-config FILE`` on the real engine."""
    image = engine.auth_registry_image
    own_images.append(image)
    registry = image.split("/")[0]
    config = tmp_path / "docker" / "config.json"
    write_docker_config(config, {registry: (engine.auth_user, engine.auth_password)})
    manifests = tmp_path / "pods"
    manifests.mkdir()
    (manifests / "private.yaml").write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "cli-private", "namespace": namespace},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "app",
                            "image": image,
                            "imagePullPolicy": "Always",
                            "command": SERVER,
                        }
                    ],
                },
            }
        )
    )
    base = [
        sys.executable, "-m", "kubecore", "run", str(manifests), "--runtime", "docker",
        "--runtime-option", f"base_url={engine.base_url}",
        "--runtime-option", f"sandbox_image={engine.pause_image}",
        "--root-dir", str(tmp_path / "root"), "--once", "--deadline", "30", "--port", "0",
        "--log-level", "warning",
    ]  # fmt: skip
    env = {**os.environ, "DOCKER_CONFIG": str(tmp_path / "empty-docker-config")}
    refused = subprocess.run(base, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "cli-private" in refused.stdout
    done = subprocess.run(
        [*base, "--registry-config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    running = [c for c in engine_containers(raw, namespace, "app") if c["State"] == "running"]
    assert len(running) == 1
    assert running[0]["Names"][0].startswith(f"/k8s_app_cli-private_{namespace}_")
