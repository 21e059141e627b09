"""The real ``kubectl patch --type=json`` and ``kubectl apply --server-side`` against a running
agent (fake runtime, real time): RFC 6902 patches, and server-side apply that keeps the fields
other managers own (``metadata.managedFields``), removes those the applier dropped, and answers a
conflict with the manager named unless forced."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.kubectl_support import (
    Certs,
    Kubectl,
    Node,
    make_certs,
    needs_kubectl,
    running_node,
    wait_for,
)

pytestmark = needs_kubectl


def applied_pod(labels: dict[str, str], image: str = "busybox:1.35") -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "labels": labels},
            "spec": {
                "terminationGracePeriodSeconds": 2,
                "containers": [
                    {
                        "name": "main",
                        "image": image,
                        "command": ["sh", "-c", "sleep 3600"],
                        "env": [{"name": "MODE", "value": "a"}],
                    }
                ],
            },
        }
    )


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as found:
        yield found


def pod(kubectl: Kubectl) -> dict[str, Any]:
    return json.loads(kubectl.out("get", "pod", "web", "-o", "json", "--show-managed-fields"))


def managers(kubectl: Kubectl) -> dict[tuple[str, str], Any]:
    return {
        (e["manager"], e["operation"]): e["fieldsV1"]
        for e in pod(kubectl)["metadata"]["managedFields"]
    }


def test_server_side_apply_keeps_what_other_managers_set(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    manifest = node.tmp / "web.json"
    manifest.write_text(applied_pod({"app": "web", "tier": "front"}))
    assert (
        kubectl.out("apply", "--server-side", "-f", str(manifest)) == "pod/web serverside-applied\n"
    )
    wait_for(lambda: node.running("web"), what="web to run")
    assert kubectl.out("label", "pod", "web", "team=a") == "pod/web labeled\n"
    owned = managers(kubectl)
    assert owned[("kubectl-label", "Update")] == {"f:metadata": {"f:labels": {"f:team": {}}}}
    applied = owned[("kubectl", "Apply")]
    assert "f:tier" in applied["f:metadata"]["f:labels"]
    assert applied["f:spec"]["f:containers"]['k:{"name":"main"}']["."] == {}

    # The same configuration again, without the label kubectl label set: the label stays.
    assert (
        kubectl.out("apply", "--server-side", "-f", str(manifest)) == "pod/web serverside-applied\n"
    )
    assert pod(kubectl)["metadata"]["labels"] == {"app": "web", "tier": "front", "team": "a"}

    # A label the applier owned and now omits is removed; the other manager's stays.
    manifest.write_text(applied_pod({"app": "web"}))
    kubectl.out("apply", "--server-side", "-f", str(manifest))
    assert pod(kubectl)["metadata"]["labels"] == {"app": "web", "team": "a"}

    # Setting another manager's field is a conflict, named, unless forced.
    manifest.write_text(applied_pod({"app": "web", "team": "b"}))
    conflict = kubectl.run("apply", "--server-side", "-f", str(manifest), check=False)
    assert conflict.returncode == 1
    assert (
        'conflict with "kubectl-label"' in conflict.stderr
        and ".metadata.labels.team" in conflict.stderr
    )
    assert pod(kubectl)["metadata"]["labels"]["team"] == "a"
    kubectl.out("apply", "--server-side", "--force-conflicts", "-f", str(manifest))
    assert pod(kubectl)["metadata"]["labels"]["team"] == "b"
    assert ("kubectl-label", "Update") not in managers(kubectl)  # its only field was taken


def test_json_patch(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    manifest = node.tmp / "web.json"
    manifest.write_text(applied_pod({"app": "web", "example.com/a": "x", "example.com/c": "y"}))
    kubectl.out("apply", "-f", str(manifest))
    patch = [
        {"op": "add", "path": "/metadata/labels/team", "value": "a"},
        {"op": "replace", "path": "/metadata/labels/example.com~1a", "value": "slash"},
        {"op": "remove", "path": "/metadata/labels/example.com~1c"},
        {"op": "copy", "from": "/metadata/labels/team", "path": "/metadata/labels/owner"},
        {"op": "move", "from": "/metadata/labels/owner", "path": "/metadata/labels/lead"},
        {"op": "test", "path": "/spec/containers/0/name", "value": "main"},
        {"op": "add", "path": "/spec/activeDeadlineSeconds", "value": 3600},
    ]
    out = kubectl.out("patch", "pod", "web", "--type=json", "-p", json.dumps(patch))
    assert out == "pod/web patched\n"
    got = pod(kubectl)
    assert got["metadata"]["labels"] == {
        "app": "web",
        "example.com/a": "slash",
        "team": "a",
        "lead": "a",
    }
    assert got["spec"]["activeDeadlineSeconds"] == 3600
    assert ("kubectl-patch", "Update") in managers(kubectl)
    more = [{"op": "add", "path": "/spec/containers/0/env/-", "value": {"name": "M", "value": "1"}}]
    refused = kubectl.run("patch", "pod", "web", "--type=json", "-p", json.dumps(more), check=False)
    assert refused.returncode == 1
    assert 'The Pod "web" is invalid: spec: Forbidden: pod updates may not change fields' in (
        refused.stderr
    )
    assert "(changed: spec.containers[0].env)" in refused.stderr

    failed = kubectl.run(
        "patch", "pod", "web", "--type=json",
        "-p", json.dumps([{"op": "test", "path": "/metadata/labels/team", "value": "b"}]),
        check=False,
    )  # fmt: skip
    assert failed.returncode == 1
    assert "operation 0 (test '/metadata/labels/team')" in failed.stderr, failed.stderr
    missing = kubectl.run(
        "patch", "pod", "web", "--type=json",
        "-p", json.dumps([{"op": "replace", "path": "/metadata/nope/x", "value": 1}]),
        check=False,
    )  # fmt: skip
    assert missing.returncode == 1 and "/metadata/nope is missing" in missing.stderr, missing.stderr
    assert pod(kubectl)["metadata"]["labels"]["team"] == "a"  # nothing changed


def test_server_side_apply_of_a_config_map_merges_its_data_by_key(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    manifest = node.tmp / "settings.json"
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
    manifest.write_text(json.dumps({**config, "data": {"level": "debug", "mode": "x"}}))
    kubectl.out("apply", "--server-side", "-f", str(manifest))
    kubectl.out("patch", "configmap", "settings", "--type=merge", "-p", '{"data":{"extra":"1"}}')
    manifest.write_text(json.dumps({**config, "data": {"level": "info"}}))
    kubectl.out("apply", "--server-side", "-f", str(manifest))
    got = json.loads(
        kubectl.out("get", "configmap", "settings", "-o", "json", "--show-managed-fields")
    )
    assert got["data"] == {"level": "info", "extra": "1"}  # mode was the applier's: removed
    owners = {e["manager"]: e["fieldsV1"] for e in got["metadata"]["managedFields"]}
    assert owners["kubectl-patch"] == {"f:data": {"f:extra": {}}}
    assert owners["kubectl"] == {"f:data": {"f:level": {}}}


def test_a_client_side_applied_pod_moves_to_server_side_apply(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    manifest = node.tmp / "web.json"
    manifest.write_text(applied_pod({"app": "web"}))
    kubectl.out("apply", "-f", str(manifest))
    kubectl.out("label", "pod", "web", "team=a")
    assert set(managers(kubectl)) == {
        ("kubectl-client-side-apply", "Update"),
        ("kubectl-label", "Update"),
    }
    # kubectl moves client-side apply's fields to its server-side apply with a JSON patch
    # (guarded by a test of the resourceVersion) before it applies.
    moved = kubectl.run("apply", "--server-side", "-f", str(manifest))
    assert moved.stdout == "pod/web serverside-applied\n" and "Warning" not in moved.stderr
    owned = managers(kubectl)
    # As on a cluster, the last-applied annotation goes to its own manager.
    assert set(owned) == {
        ("kubectl", "Apply"),
        ("kubectl-label", "Update"),
        ("kubectl-last-applied", "Apply"),
    }
    assert pod(kubectl)["metadata"]["labels"] == {"app": "web", "team": "a"}


def test_kubectl_resizes_through_the_resize_subresource(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    manifest = node.tmp / "web.json"
    manifest.write_text(applied_pod({"app": "web"}))
    kubectl.out("apply", "-f", str(manifest))
    limits = {"spec": {"containers": [{"name": "main", "resources": {"limits": {"cpu": "300m"}}}]}}
    refused = kubectl.run("patch", "pod", "web", "-p", json.dumps(limits), check=False)
    assert refused.returncode == 1 and "pod updates may not change fields" in refused.stderr
    out = kubectl.out("patch", "pod", "web", "--subresource", "resize", "-p", json.dumps(limits))
    assert out == "pod/web patched\n"
    assert pod(kubectl)["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "300m"}
