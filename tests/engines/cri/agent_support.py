"""An agent on the test containerd (the ``cri`` plugin) serving its Kubernetes API over HTTPS
with a token, and a kubectl set up for it: what a real-kubectl test on containerd starts from."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import attrs

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._api.server import ApiServerConfig, attach_api
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._util.clock import SystemClock
from kubecore_cri._plugin import create_cri_runtime
from tests.api.kubectl_support import TOKEN, Kubectl, kubectl_for, make_certs
from tests.engines.cri.support import TestContainerd


@attrs.frozen
class CriApiNode:
    kubelet: Kubelet
    kubectl: Kubectl
    """kubectl with the token and the CA (its own home and kubeconfig under the test's dir)."""


@contextlib.contextmanager
def cri_api_node(containerd: TestContainerd, tmp: Path, name: str) -> Iterator[CriApiNode]:
    """An agent named ``name`` on the test containerd (its root, pod logs, certificates and
    kubectl under ``tmp``), started, its API served on 127.0.0.1 over HTTPS; stopped on
    leaving (the pods it made are the caller's to remove)."""
    certs = make_certs(tmp / "certs")
    bundle = create_cri_runtime(
        endpoint=containerd.endpoint, timeout=30, log_root=str(tmp / "pod-logs")
    )
    kubelet = Kubelet(
        bundle.runtime,
        bundle.puller,
        config=KubeletConfig(
            node_name=name,
            root_dir=str(tmp / "root"),
            relist_interval=0.3,
            housekeeping_interval=0.5,
            sandbox_image=containerd.pause_image,
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
        yield CriApiNode(kubelet, kubectl)
    finally:
        server.stop()
        kubelet.stop(timeout=10)
        bundle.runtime.close()
