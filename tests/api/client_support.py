"""A node for the Python Kubernetes clients' tests (``kubernetes``, ``lightkube``, ``kr8s``,
``schemathesis``): the agent of ``kubectl_support.running_node`` (fake runtime, the static pod
``talker``) served over TLS on 127.0.0.1, with the CA, the bearer token and a kubeconfig that
names them, as ``kubecore kubeconfig`` writes one; and the objects of every kind it serves, read
as a client reads them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import requests

from tests.api.kubectl_support import (
    TOKEN,
    Node,
    make_certs,
    running_node,
    wait_for,
    write_kubeconfig,
)


@attrs.frozen
class TlsNode:
    """A running node's API over HTTPS, and what a client needs to reach it."""

    node: Node
    url: str
    ca: Path
    kubeconfig: Path
    token: str = TOKEN

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """``method path`` with the token, the node's CA checked (passed on each request:
        ``REQUESTS_CA_BUNDLE`` would override a session's)."""
        headers = {"Authorization": f"Bearer {self.token}", **kwargs.pop("headers", {})}
        return requests.request(
            method, self.url + path, headers=headers, verify=str(self.ca), timeout=10, **kwargs
        )

    def get(self, path: str) -> dict[str, Any]:
        answer = self.request("GET", path)
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body


@contextlib.contextmanager
def tls_node(tmp_path: Path) -> Iterator[TlsNode]:
    """``running_node`` served over TLS too, a kubeconfig with its CA and the token beside."""
    with running_node(tmp_path) as node:
        certs = make_certs(tmp_path / "certs")
        server = node.https(certs)
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url, token=TOKEN, ca=certs.ca)
        yield TlsNode(node, server.url, certs.ca, kubeconfig)


CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "settings", "labels": {"app": "clients"}},
    "data": {"mode": "fast"},
}
SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "password", "labels": {"app": "clients"}},
    "stringData": {"password": "hunter2"},
}


def served_objects(served: TlsNode) -> dict[str, dict[str, Any]]:
    """One object and one list of every kind the node serves, read over HTTPS, keyed by the
    kind (``Pod``, ``PodList``, ...): a ConfigMap and a Secret are created first, and an event
    waited for."""
    for body, name in ((CONFIG_MAP, "configmaps"), (SECRET, "secrets")):
        created = served.request("POST", f"/api/v1/namespaces/default/{name}", json=body)
        assert created.status_code == 201, created.text
    node = served.node.kubelet.config.node_name
    wait_for(lambda: served.get("/api/v1/namespaces/default/events")["items"], what="an event")
    event = served.get("/api/v1/namespaces/default/events")["items"][0]["metadata"]["name"]
    reads = {
        "Node": f"/api/v1/nodes/{node}",
        "NodeList": "/api/v1/nodes",
        "Pod": "/api/v1/namespaces/default/pods/talker",
        "PodList": "/api/v1/pods",
        "Event": f"/api/v1/namespaces/default/events/{event}",
        "EventList": "/api/v1/events",
        "Lease": f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}",
        "LeaseList": "/apis/coordination.k8s.io/v1/leases",
        "ConfigMap": "/api/v1/namespaces/default/configmaps/settings",
        "ConfigMapList": "/api/v1/configmaps",
        "Secret": "/api/v1/namespaces/default/secrets/password",
        "SecretList": "/api/v1/secrets",
        "Namespace": "/api/v1/namespaces/default",
        "NamespaceList": "/api/v1/namespaces",
    }
    return {kind: served.get(path) for kind, path in reads.items()}


def web_pod(name: str = "web") -> dict[str, Any]:
    """A pod a client creates (its container sleeps; it stops at once when deleted)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": "busybox:1.35", "command": ["sleep", "3600"]}],
        },
    }
