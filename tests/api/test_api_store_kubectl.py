"""The real ``kubectl`` over TLS, across a restart of the agent (fake runtime, real time): what
``kubectl apply`` and ``kubectl create`` wrote is there again, same uids, same ages, and the
containers kept running."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._api.server import ApiServerConfig, attach_api
from kubecore._config.static import StaticSource
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._manifest import load_pods_from_string
from kubecore._plugins.registry import RuntimeBundle, load_runtime
from tests.api.kubectl_support import (
    STATIC_POD,
    TOKEN,
    Certs,
    Kubectl,
    kubectl_for,
    make_certs,
    needs_kubectl,
    wait_for,
)

pytestmark = needs_kubectl

SECRET_VALUE = "kubectl-restart-hunter2"
WRITTEN = f"""
apiVersion: v1
kind: Pod
metadata: {{name: web, labels: {{app: web}}}}
spec:
  volumes: [{{name: scratch, emptyDir: {{}}}}]
  containers:
  - name: main
    image: busybox:1.35
    command: [sh, -c, "sleep 3600"]
    volumeMounts: [{{name: scratch, mountPath: /scratch}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: worker}}
spec:
  containers: [{{name: main, image: busybox:1.35, command: [sh, -c, "sleep 3600"]}}]
---
apiVersion: v1
kind: Secret
metadata: {{name: db}}
stringData: {{password: {SECRET_VALUE}}}
"""


@contextlib.contextmanager
def agent(bundle: RuntimeBundle, tmp: Path, certs: Certs, run: int) -> Iterator[Kubectl]:
    """One run of the agent on ``bundle``'s runtime and ``tmp/root``, as ``kubecore run`` wires
    it (manifest source, API, loop, HTTPS); kubectl for it."""
    kubelet = Kubelet.from_bundle(
        bundle,
        config=KubeletConfig(node_name="node-1", root_dir=str(tmp / "root")),
        sources=("file",),
    )
    StaticSource(load_pods_from_string(STATIC_POD), name="file", sink=kubelet.update)
    token_file = tmp / "token"
    token_file.write_text(TOKEN + "\n")
    api = attach_api(kubelet, ApiServerConfig(token_file=str(token_file)), address="127.0.0.1")
    kubelet.start()
    config = ServerConfig(
        port=0, tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key)
    )
    server = KubeletServer(kubelet, config, api=api).start()
    try:
        yield kubectl_for(tmp / f"kubectl-{run}", server.url, token=TOKEN, ca=certs.ca)
    finally:
        server.stop()
        kubelet.stop()


def running(bundle: RuntimeBundle) -> dict[str, str]:
    return {
        c.labels["io.kubernetes.pod.name"]: c.id
        for c in bundle.runtime.list_containers()
        if c.state.value == "running"
    }


def pods(kubectl: Kubectl) -> dict[str, Any]:
    listed = json.loads(kubectl.out("get", "pods", "-o", "json"))
    return {p["metadata"]["name"]: p["metadata"] for p in listed["items"]}


def test_what_kubectl_wrote_survives_a_restart(tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    bundle = load_runtime("fake")
    manifest = tmp_path / "written.yaml"
    manifest.write_text(WRITTEN)
    with agent(bundle, tmp_path, certs, 1) as kubectl:
        kubectl.out("apply", "-f", str(manifest))
        kubectl.out("create", "configmap", "settings", "--from-literal=level=debug")
        kubectl.out("wait", "--for=condition=Ready", "pod/web", "pod/worker", "--timeout=30s")
        before = pods(kubectl)
        ids = running(bundle)
        configmap = json.loads(kubectl.out("get", "configmap", "settings", "-o", "json"))
    assert set(ids) == {"talker", "web", "worker"}

    with agent(bundle, tmp_path, certs, 2) as kubectl:
        wait_for(lambda: pods(kubectl).keys() == before.keys(), what="the pods listed again")
        after = pods(kubectl)
        for name in ("web", "worker"):
            assert after[name]["uid"] == before[name]["uid"]
            assert after[name]["creationTimestamp"] == before[name]["creationTimestamp"]
        kubectl.out("wait", "--for=condition=Ready", "pod/web", "pod/worker", "--timeout=30s")
        assert running(bundle) == ids
        names = kubectl.out("get", "configmaps,secrets", "-o", "name").split()
        assert names == ["configmap/settings", "secret/db"]
        again = json.loads(kubectl.out("get", "configmap", "settings", "-o", "json"))
        assert again["data"] == {"level": "debug"}
        assert again["metadata"]["uid"] == configmap["metadata"]["uid"]
        password = kubectl.out("get", "secret", "db", "-o", "jsonpath={.data.password}")
        assert password == "a3ViZWN0bC1yZXN0YXJ0LWh1bnRlcjI="
        # kubectl delete removes a pod for good: it is not back after the next restart.
        deleted = kubectl.out("delete", "pod", "worker", "--grace-period=0")
        assert deleted.startswith('pod "worker" deleted')
    with agent(bundle, tmp_path, certs, 3) as kubectl:
        wait_for(lambda: set(pods(kubectl)) == {"talker", "web"}, what="web and talker only")
        assert running(bundle)["web"] == ids["web"]
