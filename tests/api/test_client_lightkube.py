"""lightkube against a node (fake runtime, TLS, the bearer token, a kubeconfig as ``kubecore
kubeconfig`` writes one), as a user drives it: pods and ConfigMaps listed, read, created,
patched and deleted, watched from a list's resourceVersion, the Node read into lightkube's
strict models. Each watch is bounded by its ``server_timeout``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client, KubeConfig
from lightkube.codecs import from_dict
from lightkube.resources.core_v1 import ConfigMap, Node, Pod

from tests.api.client_support import CONFIG_MAP, TlsNode, tls_node, web_pod
from tests.api.kubectl_support import wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def lightkube(tmp_path: Path) -> Iterator[tuple[TlsNode, Client]]:
    with tls_node(tmp_path) as node:
        yield node, Client(KubeConfig.from_file(str(node.kubeconfig)), namespace="default")


def _first(
    stream: Iterator[tuple[str, Any]], wanted: str, name: str, label: str | None = None
) -> Any:
    """The first ``wanted`` event of ``name`` (whose object carries ``label``, if given)."""
    for kind, obj in stream:
        carried = label is None or label in (obj.metadata.labels or {})
        if kind == wanted and obj.metadata.name == name and carried:
            return obj
    raise AssertionError(f"the watch ended before {wanted} {name}")


def test_the_node_is_read(lightkube: tuple[TlsNode, Client]) -> None:
    node, api = lightkube
    name = node.node.kubelet.config.node_name
    assert api.get(Node, name).status.nodeInfo.kubeProxyVersion == ""
    assert [n.metadata.name for n in api.list(Node)] == [name]


def test_pods_are_created_read_patched_watched_and_deleted(
    lightkube: tuple[TlsNode, Client],
) -> None:
    _, api = lightkube
    created = api.create(from_dict(web_pod()))
    assert created.metadata.uid
    listed = api.list(Pod, labels={"app": "web"})
    assert [p.metadata.name for p in listed] == ["web"]
    version = listed.resourceVersion
    api.patch(Pod, "web", {"metadata": {"labels": {"tier": "front"}}})
    assert api.get(Pod, "web").metadata.labels["tier"] == "front"
    stream = api.watch(Pod, resource_version=version, server_timeout=10)
    # The agent's own status writes are MODIFIED events too, before the patch or after it.
    assert _first(stream, "MODIFIED", "web", label="tier").metadata.labels["tier"] == "front"
    api.delete(Pod, "web", grace_period=0)
    wait_for(lambda: "web" not in {p.metadata.name for p in api.list(Pod)}, what="the pod to go")


def test_config_maps_are_created_read_patched_watched_and_deleted(
    lightkube: tuple[TlsNode, Client],
) -> None:
    _, api = lightkube
    api.create(from_dict(CONFIG_MAP))
    listed = api.list(ConfigMap, labels={"app": "clients"})
    assert [c.metadata.name for c in listed] == ["settings"]
    version = listed.resourceVersion
    api.patch(ConfigMap, "settings", {"data": {"mode": "slow"}})
    assert api.get(ConfigMap, "settings").data == {"mode": "slow"}
    api.delete(ConfigMap, "settings")
    stream = api.watch(ConfigMap, resource_version=version, server_timeout=10)
    assert _first(stream, "MODIFIED", "settings").data == {"mode": "slow"}
    assert _first(stream, "DELETED", "settings")
    assert list(api.list(ConfigMap)) == []
