"""Writes to a pod over the node's API as the API server judges them (no kubectl needed): a create
the node's pod-security policy forbids is a 403 in Pod Security Admission's words (and is
accepted under the looser level), an update may change only what ``ValidatePodUpdate`` lets it
(422 naming what else changed, whatever the patch type), ``pods/resize`` changes cpu and memory,
and a debug container is held to the policy too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import requests
import yaml

from tests.api.kubectl_support import TOKEN, WEB_POD, Node, running_node, wait_for

AUTH = {"Authorization": f"Bearer {TOKEN}"}
PODS = "/api/v1/namespaces/default/pods"
WEB = PODS + "/web"
STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
NOT_UPDATABLE = "pod updates may not change fields other than `spec.containers[*].image`"

ATTACK = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "attack"},
    "spec": {
        "hostNetwork": True,
        "containers": [
            {
                "name": "app",
                "image": "busybox:1.35",
                "command": ["sleep", "3600"],
                "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}},
                "volumeMounts": [{"name": "root", "mountPath": "/host"}],
            }
        ],
        "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
    },
}


@attrs.frozen
class Api:
    base: str

    def send(self, method: str, path: str, body: object = None, kind: str = "") -> Any:
        headers = {**AUTH, "Content-Type": kind or "application/json"}
        data = None if body is None else json.dumps(body)
        return requests.request(method, self.base + path, data=data, headers=headers, timeout=10)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as found:
        yield found


@pytest.fixture
def api(node: Node) -> Api:
    client = Api(node.http.url)
    created = client.send("POST", PODS, yaml.safe_load(WEB_POD))
    assert created.status_code == 201, created.text
    return client


def test_the_attack_pod_is_forbidden_with_every_violation(api: Api, node: Node) -> None:
    refused = api.send("POST", PODS, ATTACK)
    assert refused.status_code == 403, refused.text
    status = refused.json()
    assert status["reason"] == "Forbidden"
    assert status["message"] == (
        'pods "attack" is forbidden: violates PodSecurity "baseline:latest": host namespaces'
        ' (hostNetwork=true), non-default capabilities (container "app" must not include'
        ' "SYS_ADMIN" in securityContext.capabilities.add), hostPath volumes (volume "root")'
    )
    assert api.send("GET", PODS + "/attack").status_code == 404
    assert node.kubelet.get_pod("default", "attack") is None
    # server-side apply creates too: refused the same way
    applied = api.send("PATCH", PODS + "/attack?fieldManager=t", ATTACK, APPLY)
    assert applied.status_code == 403 and "hostPath volumes" in applied.json()["message"]


def test_the_looser_level_lets_it_in(tmp_path: Path) -> None:
    with running_node(tmp_path, pod_security="privileged", allow_privileged=True) as node:
        created = Api(node.http.url).send("POST", PODS, ATTACK)
        assert created.status_code == 201, created.text


def refused_update(response: Any) -> str:
    assert response.status_code == 422, response.text
    status = response.json()
    assert status["reason"] == "Invalid"
    message: str = status["message"]
    return message


@pytest.mark.parametrize(
    ("kind", "body", "changed"),
    [
        (MERGE, {"spec": {"hostNetwork": True}}, "spec.hostNetwork"),
        (
            STRATEGIC,
            {"spec": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}},
            "spec.volumes",
        ),
        (
            JSON_PATCH,
            [{"op": "add", "path": "/spec/hostPID", "value": True}],
            "spec.hostPID",
        ),
        (
            STRATEGIC,
            {
                "spec": {
                    "containers": [
                        {"name": "main", "securityContext": {"capabilities": {"add": ["ALL"]}}}
                    ]
                }
            },
            "spec.containers[0].securityContext",
        ),
    ],
)
def test_a_patch_may_not_change_the_running_pods_spec(
    api: Api, kind: str, body: object, changed: str
) -> None:
    before = api.send("GET", WEB).json()["spec"]
    message = refused_update(api.send("PATCH", WEB, body, kind))
    assert message.startswith(f'Pod "web" is invalid: spec: Forbidden: {NOT_UPDATABLE}')
    assert f"(changed: {changed})" in message
    assert api.send("GET", WEB).json()["spec"] == before


def test_a_replace_or_an_apply_may_not_change_it_either(api: Api) -> None:
    current = api.send("GET", WEB).json()
    current["metadata"]["labels"]["tier"] = "a"  # what it read, written back: no change of spec
    assert api.send("PUT", WEB, current).ok
    current = api.send("GET", WEB).json()
    current["spec"]["containers"][0]["command"] = ["sh", "-c", "id"]
    message = refused_update(api.send("PUT", WEB, current))
    assert "(changed: spec.containers[0].command[2])" in message
    config = yaml.safe_load(WEB_POD)
    config["spec"]["containers"].append({"name": "side", "image": "busybox:1.35"})
    message = refused_update(api.send("PATCH", WEB + "?fieldManager=t&force=true", config, APPLY))
    assert "spec.containers: Forbidden: pod updates may not add or remove containers" in message


def test_what_an_update_may_change(api: Api) -> None:
    assert api.send("PATCH", WEB, {"metadata": {"labels": {"tier": "a"}}}, MERGE).ok
    image = {"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}
    assert api.send("PATCH", WEB, image, STRATEGIC).ok
    assert api.send("PATCH", WEB, {"spec": {"activeDeadlineSeconds": 3600}}, MERGE).ok
    assert api.send("PATCH", WEB, {"spec": {"activeDeadlineSeconds": 1800}}, MERGE).ok
    tolerate = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    assert api.send("PATCH", WEB, {"spec": {"tolerations": [tolerate]}}, MERGE).ok
    got = api.send("GET", WEB).json()
    assert got["metadata"]["labels"]["tier"] == "a"
    assert got["spec"]["containers"][0]["image"] == "busybox:1.36"
    assert got["spec"]["activeDeadlineSeconds"] == 1800
    assert got["spec"]["tolerations"] == [tolerate]

    raised = refused_update(
        api.send("PATCH", WEB, {"spec": {"activeDeadlineSeconds": 7200}}, MERGE)
    )
    assert (
        "spec.activeDeadlineSeconds: Invalid value: 7200: must be less than or equal to" in raised
    )
    removed = refused_update(
        api.send("PATCH", WEB, {"spec": {"activeDeadlineSeconds": None}}, MERGE)
    )
    assert "must not update from a positive integer to nil value" in removed
    untolerated = refused_update(api.send("PATCH", WEB, {"spec": {"tolerations": []}}, MERGE))
    assert "spec.tolerations: Forbidden: existing toleration can not be modified" in untolerated


def test_resize_changes_cpu_and_memory_only(api: Api, node: Node) -> None:
    resources = {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"cpu": "200m"}}
    body = {
        "spec": {
            "hostNetwork": True,  # not the subresource's: dropped
            "containers": [{"name": "main", "resources": resources, "command": ["id"]}],
        }
    }
    resized = api.send("PATCH", WEB + "/resize", body, STRATEGIC)
    assert resized.status_code == 200, resized.text
    got = api.send("GET", WEB).json()["spec"]
    assert got["containers"][0]["resources"] == resources
    assert got["containers"][0]["command"] == ["sh", "-c", "echo serving; sleep 3600"]
    assert not got.get("hostNetwork")
    wait_for(
        lambda: (
            node.kubelet.get_pod("default", "web").spec.containers[0].resources.limits  # type: ignore[union-attr]
            == {"cpu": "200m"}
        ),
        what="the agent to take the new resources",
    )
    storage = {
        "containers": [{"name": "main", "resources": {"limits": {"ephemeral-storage": "1Gi"}}}]
    }
    message = refused_update(api.send("PATCH", WEB + "/resize", {"spec": storage}, STRATEGIC))
    assert "only cpu and memory resources are mutable (changed: ephemeral-storage)" in message


def test_a_privileged_debug_container_is_forbidden(api: Api) -> None:
    debugger = {
        "name": "debugger",
        "image": "busybox:1.35",
        "command": ["sleep", "1000"],
        "securityContext": {"privileged": True},
    }
    refused = api.send(
        "PATCH",
        WEB + "/ephemeralcontainers",
        {"spec": {"ephemeralContainers": [debugger]}},
        STRATEGIC,
    )
    assert refused.status_code == 403, refused.text
    assert refused.json()["message"] == (
        'pods "web" is forbidden: violates PodSecurity "baseline:latest": privileged (container'
        ' "debugger" must not set securityContext.privileged=true)'
    )
