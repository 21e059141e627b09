"""The real ``kubectl`` against an agent on the Docker engine: apply, get, logs, delete."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._api.server import ApiServerConfig, attach_api
from kubecore._contract.labels import POD_NAMESPACE_LABEL
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._util.clock import SystemClock
from kubecore_docker import DockerConnection, DockerOptions, DockerPuller, DockerRuntime
from tests.api.kubectl_support import (
    TOKEN,
    Kubectl,
    kubectl_for,
    make_certs,
    needs_kubectl,
    wait_for,
)
from tests.engines.docker.conftest import TestEngine, remove_labelled

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
    certs = make_certs(tmp_path / "certs")
    options = DockerOptions(base_url=engine.base_url, timeout=30, sandbox_image=engine.pause_image)
    runtime = DockerRuntime(DockerConnection(options))
    kubelet = Kubelet(
        runtime,
        DockerPuller(DockerConnection(options)),
        config=KubeletConfig(
            node_name="kubectl-node",
            root_dir=str(tmp_path / "root"),
            relist_interval=0.3,
            housekeeping_interval=0.5,
        ),
        clock=SystemClock(),
    )
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    api = attach_api(kubelet, ApiServerConfig(token_file=str(token_file)), address="127.0.0.1")
    kubelet.start()
    config = ServerConfig(
        port=0, tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key)
    )
    server = KubeletServer(kubelet, config, api=api).start()
    try:
        yield kubectl_for(tmp_path / "kubectl", server.url, token=TOKEN, ca=certs.ca)
    finally:
        server.stop()
        kubelet.stop(timeout=10)
        runtime.close()


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
    assert kubectl.out("delete", "-f", str(manifest)) == 'pod "hello" deleted\n'
    assert kubectl.run("get", "pod", "hello", "-n", namespace, check=False).returncode == 1
