"""An agent on the test engine serving its Kubernetes API over HTTPS with a token, and a kubectl
set up for it: what every real-kubectl test on Docker starts from."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import attrs

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._api.server import ApiServerConfig, KubeApi, attach_api
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._util.clock import SystemClock
from kubecore_docker import DockerConnection, DockerOptions, DockerPuller, DockerRuntime
from tests.api.kubectl_support import TOKEN, Kubectl, kubectl_for, make_certs
from tests.engines.docker.conftest import TestEngine


@attrs.frozen
class DockerApiNode:
    kubelet: Kubelet
    api: KubeApi
    kubectl: Kubectl
    """kubectl with the token and the CA (its own home and kubeconfig under the test's dir)."""
    name: str
    """The node's name."""


@contextlib.contextmanager
def docker_api_node(engine: TestEngine, tmp: Path, name: str) -> Iterator[DockerApiNode]:
    """An agent named ``name`` on ``engine`` (its root, certificates and kubectl under ``tmp``),
    started, its API served on 127.0.0.1 over HTTPS; stopped on leaving."""
    certs = make_certs(tmp / "certs")
    options = DockerOptions(base_url=engine.base_url, timeout=30, sandbox_image=engine.pause_image)
    runtime = DockerRuntime(DockerConnection(options))
    kubelet = Kubelet(
        runtime,
        DockerPuller(DockerConnection(options)),
        config=KubeletConfig(
            node_name=name,
            root_dir=str(tmp / "root"),
            relist_interval=0.3,
            housekeeping_interval=0.5,
        ),
        clock=SystemClock(),
    )
    token_file = tmp / "token"
    token_file.write_text(TOKEN)
    api = attach_api(kubelet, ApiServerConfig(token_file=str(token_file)), address="127.0.0.1")
    kubelet.start()
    config = ServerConfig(
        port=0, tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key)
    )
    server = KubeletServer(kubelet, config, api=api).start()
    try:
        kubectl = kubectl_for(tmp / "kubectl", server.url, token=TOKEN, ca=certs.ca)
        yield DockerApiNode(kubelet, api, kubectl, name)
    finally:
        server.stop()
        kubelet.stop(timeout=10)
        runtime.close()
