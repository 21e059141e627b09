"""``deletecollection`` (``DELETE`` of a collection, ``labelSelector`` and ``fieldSelector`` as a
list takes them) on pods, ConfigMaps and Secrets: each of the API's objects selected is deleted
as a delete of it would be (pods gracefully: ``deletionTimestamp`` set, shown until their
containers stop), objects of another source (the static pod) are left, ``dryRun`` deletes
nothing, and the answer lists what was deleted; discovery lists the verb."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.api.client_support import CONFIG_MAP, SECRET, TlsNode, tls_node
from tests.api.kubectl_support import wait_for

CONFIG_MAPS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[TlsNode]:
    with tls_node(tmp_path) as node:
        yield node


def _named(body: dict[str, Any], name: str, app: str) -> dict[str, Any]:
    return {**body, "metadata": {"name": name, "labels": {"app": app}}}


def _pod(name: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {
            "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "main", "image": "busybox:1.35", "command": ["sleep", "3600"]}],
        },
    }


def _create(served: TlsNode, path: str, *bodies: dict[str, Any]) -> None:
    for body in bodies:
        created = served.request("POST", path, json=body)
        assert created.status_code == 201, created.text


def _names(served: TlsNode, path: str) -> set[str]:
    return {item["metadata"]["name"] for item in served.get(path)["items"]}


def test_discovery_lists_deletecollection(served: TlsNode) -> None:
    resources = {r["name"]: r for r in served.get("/api/v1")["resources"]}
    for name in ("pods", "configmaps", "secrets"):
        assert "deletecollection" in resources[name]["verbs"], name


def test_a_label_selector_deletes_the_config_maps_it_selects(served: TlsNode) -> None:
    _create(
        served,
        CONFIG_MAPS,
        _named(CONFIG_MAP, "one", "clients"),
        _named(CONFIG_MAP, "two", "clients"),
        _named(CONFIG_MAP, "three", "else"),
    )
    answer = served.request("DELETE", CONFIG_MAPS, params={"labelSelector": "app=clients"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["kind"] == "ConfigMapList"
    assert {item["metadata"]["name"] for item in body["items"]} == {"one", "two"}
    assert _names(served, CONFIG_MAPS) == {"three"}


def test_a_field_selector_and_dry_run_are_honoured(served: TlsNode) -> None:
    _create(served, CONFIG_MAPS, _named(CONFIG_MAP, "one", "a"), _named(CONFIG_MAP, "two", "a"))
    dry = served.request("DELETE", CONFIG_MAPS, params={"dryRun": "All"})
    assert dry.status_code == 200 and len(dry.json()["items"]) == 2
    assert _names(served, CONFIG_MAPS) == {"one", "two"}
    only = served.request("DELETE", CONFIG_MAPS, params={"fieldSelector": "metadata.name=two"})
    assert [item["metadata"]["name"] for item in only.json()["items"]] == ["two"]
    assert _names(served, CONFIG_MAPS) == {"one"}
    unknown = served.request("DELETE", CONFIG_MAPS, params={"fieldSelector": "spec.x=1"})
    assert unknown.status_code == 400 and _names(served, CONFIG_MAPS) == {"one"}


def test_the_kubernetes_client_deletes_a_collection_of_secrets(served: TlsNode) -> None:
    secrets = "/api/v1/namespaces/default/secrets"
    _create(served, secrets, _named(SECRET, "one", "clients"), _named(SECRET, "two", "else"))
    v1 = client.CoreV1Api(config.new_client_from_config(str(served.kubeconfig)))
    v1.delete_collection_namespaced_secret("default", label_selector="app=clients")
    assert _names(served, secrets) == {"two"}


def test_pods_are_deleted_gracefully_and_the_static_pod_is_left(served: TlsNode) -> None:
    _create(served, PODS, _pod("web-1", "web"), _pod("web-2", "web"), _pod("db", "db"))
    kubelet = served.node.kubelet
    wait_for(lambda: kubelet.get_pod("default", "web-2") is not None, what="the pods to start")
    answer = served.request("DELETE", PODS, params={"labelSelector": "app in (web, talker)"})
    assert answer.status_code == 200, answer.text
    deleted = answer.json()["items"]
    assert {pod["metadata"]["name"] for pod in deleted} == {"web-1", "web-2"}
    assert all(pod["metadata"]["deletionGracePeriodSeconds"] == 30 for pod in deleted)
    assert all("deletionTimestamp" in pod["metadata"] for pod in deleted)
    assert _names(served, PODS) == {"talker", "web-1", "web-2", "db"}  # still terminating
    now = served.request(
        "DELETE", PODS, params={"labelSelector": "app=web", "gracePeriodSeconds": "0"}
    )
    assert now.status_code == 200, now.text
    wait_for(lambda: _names(served, PODS) == {"talker", "db"}, what="the web pods to go")
