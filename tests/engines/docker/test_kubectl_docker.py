"""The real ``kubectl`` against an agent on the Docker engine: apply, get, logs, delete."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubecore._contract.labels import POD_NAMESPACE_LABEL
from tests.api.kubectl_support import (
    Kubectl,
    needs_kubectl,
    wait_for,
)
from tests.engines.docker.conftest import TestEngine, remove_labelled
from tests.engines.docker.kubectl_agent import docker_api_node

pytestmark = [pytest.mark.docker, needs_kubectl]

SCRIPT = "trap 'exit 0' TERM; echo hello from docker; while :; do sleep 1 & wait $!; done"


@pytest.fixture
def namespace(raw: Any, test_uid: str) -> Iterator[str]:
    ns = f"kubectl-{test_uid}"
    yield ns
    remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={ns}")


@pytest.fixture
def kubectl(engine: TestEngine, namespace: str, tmp_path: Path) -> Iterator[Kubectl]:
    """kubectl with a token and the CA, against an agent on the engine serving HTTPS."""
    with docker_api_node(engine, tmp_path, f"{namespace}-node") as node:
        yield node.kubectl


def test_apply_get_logs_and_delete_on_docker(
    kubectl: Kubectl, engine: TestEngine, namespace: str, tmp_path: Path
) -> None:
    manifest = tmp_path / "hello.yaml"
    manifest.write_text(
        f"""
apiVersion: v1
kind: Pod
metadata: {{name: hello, namespace: {namespace}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: {engine.image}
    imagePullPolicy: IfNotPresent
    command: [sh, -c, {json.dumps(SCRIPT)}]
"""
    )
    assert kubectl.out("apply", "-f", str(manifest)) == "pod/hello created\n"
    kubectl.out("wait", "--for=condition=Ready", "pod/hello", "-n", namespace, "--timeout=60s")
    rows = [line.split() for line in kubectl.out("get", "pods", "-n", namespace).splitlines()]
    assert rows[0][:3] == ["NAME", "READY", "STATUS"]
    assert rows[1][:3] == ["hello", "1/1", "Running"]
    pod = json.loads(kubectl.out("get", "pod", "hello", "-n", namespace, "-o", "json"))
    assert pod["status"]["containerStatuses"][0]["containerID"].startswith("docker://")
    wait_for(
        lambda: kubectl.out("logs", "hello", "-n", namespace) == "hello from docker\n",
        timeout=20,
        what="the container's output",
    )
    assert kubectl.out("logs", "hello", "-n", namespace, "--since", "1h") == ("hello from docker\n")
    assert kubectl.out("delete", "-f", str(manifest)).startswith('pod "hello" deleted')
    assert kubectl.run("get", "pod", "hello", "-n", namespace, check=False).returncode == 1


def test_a_graceful_delete_on_docker_waits_for_the_kill(
    kubectl: Kubectl, engine: TestEngine, namespace: str, tmp_path: Path, raw: Any
) -> None:
    grace = 5
    manifest = tmp_path / "stubborn.yaml"
    manifest.write_text(
        f"""
apiVersion: v1
kind: Pod
metadata: {{name: stubborn, namespace: {namespace}}}
spec:
  terminationGracePeriodSeconds: {grace}
  containers:
  - name: main
    image: {engine.image}
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "trap '' TERM; while :; do sleep 1; done"]
"""
    )
    kubectl.out("apply", "-f", str(manifest))
    kubectl.out("wait", "--for=condition=Ready", "pod/stubborn", "-n", namespace, "--timeout=60s")

    def running() -> list[Any]:
        label = f"{POD_NAMESPACE_LABEL}={namespace}"
        return list(raw.containers(filters={"label": [label, "io.kubernetes.pod.name=stubborn"]}))

    started = time.monotonic()
    deleting = kubectl.popen("delete", "pod", "stubborn", "-n", namespace)

    def status() -> str:
        done = kubectl.run("get", "pod", "stubborn", "-n", namespace, "--no-headers", check=False)
        return done.stdout.split()[2] if done.returncode == 0 else ""

    wait_for(lambda: status() == "Terminating", timeout=20, what="Terminating")
    # TERM is ignored: the container runs until the KILL at the end of the grace period.
    wait_for(lambda: time.monotonic() - started >= grace - 2, timeout=20, what="the grace to near")
    assert running() and deleting.poll() is None and status() == "Terminating"
    _out, err = deleting.communicate(timeout=60)
    assert deleting.returncode == 0, err
    assert time.monotonic() - started >= grace - 1
    assert not running() and status() == ""
