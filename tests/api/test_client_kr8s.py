"""kr8s against a node (fake runtime, TLS, the bearer token, a kubeconfig as ``kubecore
kubeconfig`` writes one), as a user drives it: pods and ConfigMaps listed, read, created,
patched and deleted, watched from a list's resourceVersion, the Node read. Each watch is
bounded: it is left at the event waited for, and the node ends it after ``timeoutSeconds``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kr8s
import pytest
from kr8s.objects import ConfigMap, Node, Pod

from tests.api.client_support import CONFIG_MAP, TlsNode, tls_node, web_pod
from tests.api.kubectl_support import wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TlsNode, Any]]:
    with tls_node(tmp_path) as node:
        yield node, kr8s.api(kubeconfig=str(node.kubeconfig))


def _first(
    stream: Iterator[tuple[str, Any]], wanted: str, name: str, label: str | None = None
) -> Any:
    """The first ``wanted`` event of ``name`` (whose object carries ``label``, if given)."""
    for kind, obj in stream:
        if kind == wanted and obj.name == name and (label is None or label in obj.labels):
            return obj
    raise AssertionError(f"the watch ended before {wanted} {name}")


def _version(served: TlsNode, resource: str) -> str:
    listed = served.get(f"/api/v1/namespaces/default/{resource}")
    version: str = listed["metadata"]["resourceVersion"]
    return version


def test_the_node_is_read(api: tuple[TlsNode, Any]) -> None:
    node, client = api
    name = node.node.kubelet.config.node_name
    read = Node.get(name, api=client)
    assert read.raw["status"]["nodeInfo"]["kubeProxyVersion"] == ""
    assert [n.name for n in client.get("nodes")] == [name]


def test_pods_are_created_read_patched_watched_and_deleted(api: tuple[TlsNode, Any]) -> None:
    node, client = api
    pod = Pod(web_pod(), api=client)
    pod.create()
    assert [p.name for p in client.get("pods", namespace="default", label_selector="app=web")] == [
        "web"
    ]
    version = _version(node, "pods")
    pod.patch({"metadata": {"labels": {"tier": "front"}}})
    assert Pod.get("web", namespace="default", api=client).labels["tier"] == "front"
    stream = client.watch("pods", namespace="default", since=version)
    # The agent's own status writes are MODIFIED events too, before the patch or after it.
    assert _first(stream, "MODIFIED", "web", label="tier").labels["tier"] == "front"
    pod.delete(grace_period=0)
    wait_for(
        lambda: "web" not in {p.name for p in client.get("pods", namespace="default")},
        what="the pod to go",
    )


def test_config_maps_are_created_read_patched_watched_and_deleted(
    api: tuple[TlsNode, Any],
) -> None:
    node, client = api
    settings = ConfigMap(CONFIG_MAP, api=client)
    settings.create()
    listed = client.get("configmaps", namespace="default", label_selector="app=clients")
    assert [c.name for c in listed] == ["settings"]
    version = _version(node, "configmaps")
    settings.patch({"data": {"mode": "slow"}})
    assert ConfigMap.get("settings", namespace="default", api=client).data == {"mode": "slow"}
    settings.delete()
    stream = client.watch("configmaps", namespace="default", since=version)
    assert _first(stream, "MODIFIED", "settings").data == {"mode": "slow"}
    assert _first(stream, "DELETED", "settings")
    assert list(client.get("configmaps", namespace="default")) == []
