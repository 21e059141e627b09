"""The agent's own Node over its Kubernetes API, read by the real ``kubectl`` (``get nodes``,
``-o wide``, ``-o json``, ``describe node``), over TLS with the bearer token."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import requests

from tests.api.kubectl_support import (
    AUTH,
    Certs,
    Kubectl,
    Node,
    make_certs,
    needs_kubectl,
    read_until,
    running_node,
)

pytestmark = needs_kubectl


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with running_node(tmp_path_factory.mktemp("node")) as found:
        yield found


@pytest.fixture(scope="module")
def kubectl(node: Node, certs: Certs) -> Kubectl:
    return node.writer(certs)


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def test_get_nodes_shows_the_node_ready(kubectl: Kubectl) -> None:
    table = rows(kubectl.out("get", "nodes"))
    assert table[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert len(table) == 2
    name, status, roles, _age, version = table[1]
    assert (name, status, roles) == ("node-1", "Ready", "<none>")
    assert version.startswith("kubecore/")
    assert rows(kubectl.out("get", "no"))[1][0] == "node-1"


def test_get_nodes_wide(kubectl: Kubectl) -> None:
    header, *lines = kubectl.out("get", "nodes", "-o", "wide").strip().splitlines()
    assert header.split() == [
        "NAME",
        "STATUS",
        "ROLES",
        "AGE",
        "VERSION",
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]
    assert len(lines) == 1 and lines[0].split()[:2] == ["node-1", "Ready"]
    assert "<none>" in lines[0]  # no ExternalIP


def test_get_node_as_json(kubectl: Kubectl) -> None:
    node = json.loads(kubectl.out("get", "node", "node-1", "-o", "json"))
    assert node["kind"] == "Node" and node["apiVersion"] == "v1"
    assert node["metadata"]["name"] == "node-1"
    assert node["metadata"]["creationTimestamp"]
    assert node["metadata"]["labels"]["kubernetes.io/hostname"]
    status = node["status"]
    ready = [c for c in status["conditions"] if c["type"] == "Ready"]
    assert ready and ready[0]["status"] == "True" and ready[0]["reason"] == "KubeletReady"
    assert int(status["capacity"]["pods"]) == 110
    assert status["allocatable"] == status["capacity"]
    assert {a["type"] for a in status["addresses"]} >= {"Hostname"}
    info = status["nodeInfo"]
    assert info["kubeletVersion"].startswith("kubecore/")
    assert info["operatingSystem"] == "linux"
    assert info["containerRuntimeVersion"]
    listed = json.loads(kubectl.out("get", "nodes", "-o", "json"))
    assert listed["kind"] == "List" and [i["metadata"]["name"] for i in listed["items"]] == [
        "node-1"
    ]


def test_describe_node_names_it(kubectl: Kubectl) -> None:
    described = kubectl.run("describe", "node", "node-1")
    assert described.returncode == 0, described.stderr
    assert "Name:" in described.stdout and "node-1" in described.stdout
    assert "Ready" in described.stdout


def test_get_nodes_watch_shows_the_node(kubectl: Kubectl) -> None:
    watcher = kubectl.popen("get", "nodes", "-w")
    try:
        lines: list[str] = []
        assert watcher.stdout is not None
        read_until(watcher.stdout, lambda line: line.split()[:2] == ["node-1", "Ready"], lines)
        assert lines[0].split()[:2] == ["NAME", "STATUS"]
    finally:
        watcher.kill()
        watcher.communicate()


def test_a_watch_streams_the_node_until_its_timeout(node: Node) -> None:
    answer = requests.get(
        node.http.url + "/api/v1/nodes?watch=true&timeoutSeconds=1",
        stream=True,
        timeout=10,
        headers=AUTH,
    )
    events = [json.loads(line) for line in answer.iter_lines() if line]
    assert events[0]["type"] == "ADDED"
    assert events[0]["object"]["metadata"]["name"] == "node-1"


def test_a_watch_from_the_listed_version_does_not_send_the_node_again(node: Node) -> None:
    """``kubectl get nodes -w`` lists, then watches from the list's resourceVersion: the node
    as listed is not sent a second time."""
    url = node.http.url + "/api/v1/nodes"
    version = requests.get(url, timeout=10, headers=AUTH).json()["metadata"]["resourceVersion"]
    answer = requests.get(
        url + f"?watch=true&timeoutSeconds=1&resourceVersion={version}",
        stream=True,
        timeout=10,
        headers=AUTH,
    )
    events = [json.loads(line) for line in answer.iter_lines() if line]
    assert all(event["type"] == "MODIFIED" for event in events), events
    stale = requests.get(
        url + "?watch=true&timeoutSeconds=1&resourceVersion=999999", stream=True, headers=AUTH
    )
    assert [json.loads(line)["type"] for line in stale.iter_lines() if line][:1] == ["MODIFIED"]


def test_selectors_choose_the_node_or_none(node: Node, kubectl: Kubectl) -> None:
    assert rows(kubectl.out("get", "nodes", "-l", "kubernetes.io/os=linux"))[1][0] == "node-1"
    missing = kubectl.run("get", "nodes", "-l", "team=none")
    assert missing.stdout == "" and "No resources found" in missing.stderr
    url = node.http.url + "/api/v1/nodes?fieldSelector=metadata.name%3Dother"
    assert requests.get(url, timeout=10, headers=AUTH).json()["items"] == []
    watched = requests.get(
        url + "&watch=true&timeoutSeconds=1", stream=True, timeout=10, headers=AUTH
    )
    assert [line for line in watched.iter_lines() if line] == []


def test_another_node_is_not_found(kubectl: Kubectl) -> None:
    result = kubectl.run("get", "nodes", "other", check=False)
    assert result.returncode != 0
    assert 'nodes "other" not found' in result.stderr


def test_nodes_are_not_created_or_deleted(node: Node, certs: Certs) -> None:
    server = node.https(certs)
    headers = {"Authorization": "Bearer kubectl-test-token"}
    for method in ("POST", "DELETE"):
        path = "/api/v1/nodes" if method == "POST" else "/api/v1/nodes/node-1"
        answer = requests.request(
            method, server.url + path, json={}, headers=headers, verify=str(certs.ca), timeout=10
        )
        assert answer.status_code == 405, (method, answer.text)
        assert answer.json()["reason"] == "MethodNotAllowed"


def test_discovery_lists_nodes_cluster_scoped(node: Node) -> None:
    resources = requests.get(node.http.url + "/api/v1", timeout=10, headers=AUTH).json()[
        "resources"
    ]
    (nodes,) = [r for r in resources if r["name"] == "nodes"]
    assert nodes["namespaced"] is False
    assert nodes["kind"] == "Node"
    assert nodes["shortNames"] == ["no"]
    assert set(nodes["verbs"]) >= {"get", "list", "patch", "watch"}
