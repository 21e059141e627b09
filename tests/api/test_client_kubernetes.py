"""The official ``kubernetes`` Python client against a node (fake runtime, TLS, the bearer
token, a kubeconfig as ``kubecore kubeconfig`` writes one), as a user drives it: pods and
ConfigMaps listed, read, created, patched and deleted, watched from a list's resourceVersion,
the Node read. Each watch is bounded by its ``timeout_seconds``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch

from tests.api.client_support import CONFIG_MAP, TlsNode, tls_node, web_pod
from tests.api.kubectl_support import wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def v1(tmp_path: Path) -> Iterator[tuple[TlsNode, client.CoreV1Api]]:
    with tls_node(tmp_path) as node:
        yield node, client.CoreV1Api(config.new_client_from_config(str(node.kubeconfig)))


def _first(
    stream: Iterator[dict[str, Any]], wanted: str, name: str, label: str | None = None
) -> dict[str, Any]:
    """The first ``wanted`` event of ``name`` (whose object carries ``label``, if given)."""
    for event in stream:
        metadata = event["object"].metadata
        carried = label is None or label in (metadata.labels or {})
        if event["type"] == wanted and metadata.name == name and carried:
            return event
    raise AssertionError(f"the watch ended before {wanted} {name}")


def test_the_node_is_read(v1: tuple[TlsNode, client.CoreV1Api]) -> None:
    node, api = v1
    name = node.node.kubelet.config.node_name
    read = api.read_node(name)
    assert read.status.node_info.kube_proxy_version == ""
    assert [n.metadata.name for n in api.list_node().items] == [name]


def test_pods_are_created_read_patched_watched_and_deleted(
    v1: tuple[TlsNode, client.CoreV1Api],
) -> None:
    _, api = v1
    created = api.create_namespaced_pod("default", web_pod())
    assert created.metadata.name == "web" and created.metadata.uid
    version = api.list_namespaced_pod("default", label_selector="app=web").metadata.resource_version
    api.patch_namespaced_pod("web", "default", {"metadata": {"labels": {"tier": "front"}}})
    assert api.read_namespaced_pod("web", "default").metadata.labels["tier"] == "front"
    stream = watch.Watch().stream(
        api.list_namespaced_pod, "default", resource_version=version, timeout_seconds=10
    )
    # The agent's own status writes are MODIFIED events too, before the patch or after it.
    modified = _first(stream, "MODIFIED", "web", label="tier")
    assert modified["object"].metadata.labels["tier"] == "front"
    api.delete_namespaced_pod("web", "default", grace_period_seconds=0)
    wait_for(
        lambda: "web" not in {p.metadata.name for p in api.list_namespaced_pod("default").items},
        what="the pod to go",
    )


def test_config_maps_are_created_read_patched_watched_and_deleted(
    v1: tuple[TlsNode, client.CoreV1Api],
) -> None:
    _, api = v1
    api.create_namespaced_config_map("default", CONFIG_MAP)
    listed = api.list_namespaced_config_map("default", label_selector="app=clients")
    assert [c.metadata.name for c in listed.items] == ["settings"]
    api.patch_namespaced_config_map("settings", "default", {"data": {"mode": "slow"}})
    assert api.read_namespaced_config_map("settings", "default").data == {"mode": "slow"}
    api.delete_namespaced_config_map("settings", "default")
    stream = watch.Watch().stream(
        api.list_namespaced_config_map,
        "default",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=10,
    )
    assert _first(stream, "MODIFIED", "settings")["object"].data == {"mode": "slow"}
    assert _first(stream, "DELETED", "settings")
    assert api.list_namespaced_config_map("default").items == []
