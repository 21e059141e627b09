"""``pods/{name}/ephemeralcontainers`` over HTTP as kubectl sends it (no kubectl needed): added
with a strategic merge patch (or a merge patch or PUT), started by the agent without restarting
anything, stored, and never changed, removed, created with the pod or set by a pod write."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import requests
import yaml

from kubecore._contract.values import NamespaceMode
from tests.api.kubectl_support import TOKEN, WEB_POD, Node, is_ready, running_node, wait_for

AUTH = {"Authorization": f"Bearer {TOKEN}"}
PODS = "/api/v1/namespaces/default/pods"
SUB = PODS + "/web/ephemeralcontainers"
STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


@attrs.frozen
class Api:
    base: str

    def send(self, method: str, path: str, body: object = None, kind: str = "") -> Any:
        headers = {**AUTH, "Content-Type": kind or "application/json"}
        data = None if body is None else json.dumps(body)
        return requests.request(method, self.base + path, data=data, headers=headers, timeout=10)

    def patch(self, body: object, kind: str = STRATEGIC, path: str = SUB) -> Any:
        return self.send("PATCH", path, body, kind)


def debugger(name: str = "debugger", **extra: object) -> dict[str, Any]:
    return {
        "name": name,
        "image": "busybox:1.35",
        "command": ["sleep", "1000"],
        "targetContainerName": "main",
        "terminationMessagePolicy": "File",
        "resources": {},
        **extra,
    }


def add(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"ephemeralContainers": list(containers)}}


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as found:
        yield found


@pytest.fixture
def api(node: Node) -> Api:
    client = Api(node.http.url)
    created = client.send("POST", PODS, yaml.safe_load(WEB_POD))
    assert created.status_code == 201, created.text
    wait_for(lambda: is_ready(node.kubelet, "web"), what="web to be ready")
    return client


def ephemeral_status(api: Api, name: str = "debugger") -> dict[str, Any] | None:
    pod = api.send("GET", PODS + "/web").json()
    found = pod["status"].get("ephemeralContainerStatuses", [])
    return next((s for s in found if s["name"] == name), None)


def running(api: Api, name: str = "debugger") -> bool:
    status = ephemeral_status(api, name)
    return status is not None and "running" in status["state"]


def causes(answer: Any) -> list[tuple[str, str]]:
    body = answer.json()
    assert body["kind"] == "Status" and body["reason"] == "Invalid", body
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


def test_a_strategic_merge_patch_adds_one_that_runs_in_the_targets_pid_namespace(
    node: Node, api: Api
) -> None:
    main = node.running("web")
    answer = api.patch(add(debugger()))
    assert answer.status_code == 200, answer.text
    assert answer.json()["kind"] == "Pod"
    assert [c["name"] for c in answer.json()["spec"]["ephemeralContainers"]] == ["debugger"]
    wait_for(lambda: running(api), what="the ephemeral container to run")

    status = ephemeral_status(api)
    assert status is not None and status["restartCount"] == 0 and status["ready"] is False
    (dbg,) = [c for c in node.containers("web", "debugger") if c.state.value == "running"]
    options = node.runtime.container_config(dbg.id).namespace_options
    assert options.pid is NamespaceMode.TARGET and options.target_id == main.id
    pod = api.send("GET", PODS + "/web").json()
    assert [c["restartCount"] for c in pod["status"]["containerStatuses"]] == [0]
    assert node.running("web").id == main.id  # the app container was not restarted
    # GET of the subresource reads the pod; the store keeps the ephemeral container.
    read = api.send("GET", SUB).json()
    assert read["kind"] == "Pod" and read["spec"]["ephemeralContainers"][0]["name"] == "debugger"
    assert node.api.store is not None
    (stored,) = [p for p in node.api.store.load().pods if p.metadata.name == "web"]
    assert [c.name for c in stored.spec.ephemeral_containers] == ["debugger"]


def test_a_second_one_is_added_beside_the_first(node: Node, api: Api) -> None:
    assert api.patch(add(debugger("one"))).status_code == 200
    # kubectl's patch of a pod that has one: $setElementOrder and only the new container.
    second = {
        "spec": {
            "$setElementOrder/ephemeralContainers": [{"name": "one"}, {"name": "two"}],
            "ephemeralContainers": [debugger("two")],
        }
    }
    answer = api.patch(second)
    assert answer.status_code == 200, answer.text
    names = [c["name"] for c in answer.json()["spec"]["ephemeralContainers"]]
    assert names == ["one", "two"]
    wait_for(lambda: running(api, "one") and running(api, "two"), what="both to run")


def test_existing_ones_are_never_changed_nor_removed(api: Api) -> None:
    assert api.patch(add(debugger())).status_code == 200
    changed = api.patch(add(debugger(image="busybox:1.36")))
    assert changed.status_code == 422
    assert causes(changed) == [
        (
            "spec.ephemeralContainers[0]",
            'Forbidden: existing ephemeral container "debugger" may not be changed',
        )
    ]
    removed = api.patch({"spec": {"ephemeralContainers": []}}, MERGE)
    assert removed.status_code == 422
    assert causes(removed)[0][1].endswith('"debugger" may not be removed')
    # A merge patch that keeps it and adds one is taken.
    kept = api.patch(add(debugger(), debugger("more")), MERGE)
    assert kept.status_code == 200, kept.text


def test_the_fields_an_ephemeral_container_may_not_have_are_refused(api: Api) -> None:
    bad = debugger(
        ports=[{"containerPort": 80}],
        readinessProbe={"exec": {"command": ["true"]}},
        resources={"limits": {"cpu": "1"}},
    )
    answer = api.patch(add(bad))
    assert answer.status_code == 422
    assert sorted(causes(answer)) == [
        ("spec.ephemeralContainers[0].ports", "cannot be set for an Ephemeral Container"),
        ("spec.ephemeralContainers[0].readinessProbe", "cannot be set for an Ephemeral Container"),
        ("spec.ephemeralContainers[0].resources", "cannot be set for an Ephemeral Container"),
    ]
    unknown = api.patch(add(debugger(targetContainerName="nope")))
    assert unknown.status_code == 422
    assert causes(unknown)[0][0] == "spec.ephemeralContainers[0].targetContainerName"
    clash = api.patch(add(debugger("main")))
    assert clash.status_code == 422
    assert causes(clash)[0][0] == "spec.ephemeralContainers[0].name"
    assert ephemeral_status(api) is None


def test_only_ephemeral_containers_change_there(api: Api) -> None:
    body = add(debugger())
    body["metadata"] = {"labels": {"sneaked": "in"}}
    body["spec"]["containers"] = [{"name": "main", "image": "busybox:1.36"}]
    answer = api.patch(body)
    assert answer.status_code == 200, answer.text
    pod = answer.json()
    assert "sneaked" not in pod["metadata"].get("labels", {})
    assert pod["spec"]["containers"][0]["image"] == "busybox:1.35"
    # PUT: the pod with its ephemeral containers.
    put = dict(pod)
    put["spec"] = dict(pod["spec"], ephemeralContainers=[debugger(), debugger("put")])
    answer = api.send("PUT", SUB, put)
    assert answer.status_code == 200, answer.text
    assert [c["name"] for c in answer.json()["spec"]["ephemeralContainers"]] == ["debugger", "put"]


def test_a_write_of_the_pod_itself_cannot_add_change_or_drop_them(api: Api) -> None:
    assert api.patch(add(debugger())).status_code == 200
    added = api.patch(add(debugger(), debugger("sneaky")), path=PODS + "/web")
    assert added.status_code == 422
    assert causes(added)[0][0] == "spec.ephemeralContainers"
    # A pod written whole without the field keeps them.
    replaced = yaml.safe_load(WEB_POD)
    replaced["metadata"]["labels"]["replaced"] = "yes"
    put = api.send("PUT", PODS + "/web", replaced)
    assert put.status_code == 200, put.text
    assert [c["name"] for c in put.json()["spec"]["ephemeralContainers"]] == ["debugger"]
    labelled = api.patch({"metadata": {"labels": {"x": "y"}}}, MERGE, path=PODS + "/web")
    assert labelled.status_code == 200 and labelled.json()["spec"]["ephemeralContainers"]
    # Nor is a pod created with one.
    other = yaml.safe_load(WEB_POD)
    other["metadata"]["name"] = "other"
    other["spec"]["ephemeralContainers"] = [debugger()]
    created = api.send("POST", PODS, other)
    assert created.status_code == 422
    assert causes(created) == [("spec.ephemeralContainers", "Forbidden: cannot be set on create")]


def test_a_static_pod_and_a_missing_pod(api: Api) -> None:
    static = api.patch(add(debugger()), path=PODS + "/talker/ephemeralcontainers")
    assert static.status_code == 403 and static.json()["reason"] == "Forbidden"
    missing = api.patch(add(debugger()), path=PODS + "/nope/ephemeralcontainers")
    assert missing.status_code == 404 and missing.json()["reason"] == "NotFound"
    wrong = api.send("POST", SUB, add(debugger()))
    assert wrong.status_code == 405


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"spec": []},
        {"spec": {"ephemeralContainers": {"name": "x"}}},
        {"kind": "Service", "spec": {}},
        {"metadata": [], "spec": {"ephemeralContainers": "x"}},
        {"spec": {"ephemeralContainers": [1, None, "x"]}},
    ],
)
def test_a_malformed_body_is_a_status_and_changes_nothing(api: Api, body: object) -> None:
    answer = api.send("PUT", SUB, body)
    assert answer.status_code in (400, 422), answer.text
    assert answer.json()["kind"] == "Status"
    assert api.send("GET", PODS + "/web").json()["spec"].get("ephemeralContainers") is None
