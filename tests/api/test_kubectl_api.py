"""The node's Kubernetes API without kubectl: its pure parts, and HTTP requests as kubectl sends
them (these run where the kubectl binary is absent)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import attrs
import pytest
import requests
import yaml

from kubecore._api.errors import ApiError
from kubecore._api.patch import merge_patch, strategic_merge_patch
from kubecore._api.selectors import field_selector, label_selector
from kubecore._api.tables import wants_table
from kubecore._api.watch import Gone, PodLog
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._model.v1 import Container, ObjectMeta, Pod, PodSpec
from tests.api.kubectl_support import (
    TOKEN,
    WEB_POD,
    Node,
    is_ready,
    make_certs,
    running_node,
    wait_for,
)

AUTH = {"Authorization": f"Bearer {TOKEN}"}
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


# --- pure parts -------------------------------------------------------------------------------


def test_label_selectors() -> None:
    labels = {"app": "web", "tier": "front"}
    assert label_selector("")(labels)
    assert label_selector("app=web,tier==front")(labels)
    assert not label_selector("app!=web")(labels)
    assert label_selector("tier in (front, back),!missing")(labels)
    assert not label_selector("tier notin (front)")(labels)
    assert label_selector("app")(labels) and not label_selector("!app")(labels)
    with pytest.raises(ApiError) as bad:
        label_selector("app in ")
    assert bad.value.code == HTTPStatus.BAD_REQUEST


def test_field_selectors_name_the_fields_they_know() -> None:
    match = field_selector(
        "metadata.name=web,status.phase!=Failed", ["metadata.name", "status.phase"]
    )
    assert match({"metadata.name": "web", "status.phase": "Running"})
    assert not match({"metadata.name": "web", "status.phase": "Failed"})
    with pytest.raises(ApiError, match=r'field label "spec\.host" not supported'):
        field_selector("spec.host=x", ["metadata.name"])


def test_merge_patch_follows_rfc_7386() -> None:
    target = {"a": "b", "c": {"d": "e", "f": "g"}}
    patch = {"a": "z", "c": {"f": None}}
    assert merge_patch(target, patch) == {"a": "z", "c": {"d": "e"}}
    assert merge_patch({"a": [1, 2]}, {"a": [3]}) == {"a": [3]}


def test_strategic_merge_patch_merges_the_pod_lists_by_their_keys() -> None:
    current = {
        "metadata": {"labels": {"app": "web", "tier": "front"}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "a:1",
                    "command": ["x"],
                    "ports": [{"containerPort": 80}, {"containerPort": 443}],
                    "env": [{"name": "A", "value": "1"}],
                },
                {"name": "side", "image": "s:1"},
            ]
        },
    }
    patch = {
        "metadata": {"labels": {"tier": None}},
        "spec": {
            "$setElementOrder/containers": [{"name": "side"}, {"name": "main"}],
            "containers": [
                {
                    "name": "main",
                    "image": "a:2",
                    "ports": [{"containerPort": 443, "protocol": "TCP"}],
                    "env": [{"name": "B", "value": "2"}],
                }
            ],
        },
    }
    result = strategic_merge_patch(current, patch)
    assert result["metadata"]["labels"] == {"app": "web"}
    side, main = result["spec"]["containers"]
    assert side == {"name": "side", "image": "s:1"}
    assert main["image"] == "a:2" and main["command"] == ["x"]
    assert main["ports"] == [{"containerPort": 80}, {"containerPort": 443, "protocol": "TCP"}]
    assert main["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    deleted = strategic_merge_patch(
        current, {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}
    )
    assert [c["name"] for c in deleted["spec"]["containers"]] == ["main"]
    assert current["spec"]["containers"][1]["name"] == "side"  # the input is left alone


def test_the_table_form_is_chosen_only_when_asked_first() -> None:
    assert wants_table(TABLE)
    assert wants_table("application/json;as=Table;v=v1beta1;g=meta.k8s.io")
    assert not wants_table("application/json")
    assert not wants_table("application/json, application/json;as=Table;v=v1;g=meta.k8s.io")
    assert not wants_table("")


def pod(name: str, image: str = "busybox:1.35") -> Pod:
    return Pod(
        ObjectMeta(name=name, uid=f"uid-{name}"),
        PodSpec(containers=(Container(name="main", image=image),)),
    )


def test_the_pod_log_versions_each_change_and_keeps_a_bounded_history() -> None:
    log = PodLog(lambda: 1_700_000_000.0, history=3)
    first = log.refresh([pod("a")], "node")
    assert first[0]["metadata"]["resourceVersion"] == "2"
    assert first[0]["metadata"]["creationTimestamp"] == "2023-11-14T22:13:20Z"
    assert log.refresh([pod("a")], "node") == first and log.version == 2
    log.refresh([pod("a", "busybox:1.36"), pod("b")], "node")
    log.refresh([pod("b")], "node")
    assert [(e.type, e.object["metadata"]["name"]) for e in log.events_after(2)] == [
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]
    assert log.events_after(log.version) == []
    with pytest.raises(Gone):
        log.events_after(1)


# --- over HTTP ------------------------------------------------------------------------------


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as found:
        yield found


@attrs.frozen
class Client:
    base: str

    def url(self, path: str) -> str:
        return self.base + path

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return requests.get(self.url(path), timeout=10, **kwargs)

    def send(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("headers", AUTH)
        return requests.request(method, self.url(path), timeout=10, **kwargs)


@pytest.fixture
def client(node: Node) -> Client:
    return Client(node.http.url)


PODS = "/api/v1/namespaces/default/pods"


def web() -> dict[str, Any]:
    return dict(yaml.safe_load(WEB_POD))


def test_create_replace_patch_and_delete_over_http(node: Node, client: Client) -> None:
    created = client.send("POST", PODS, json=web())
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["metadata"]["annotations"]["kubernetes.io/config.source"] == "kube-apiserver"
    assert body["metadata"]["resourceVersion"].isdigit()
    wait_for(lambda: is_ready(node.kubelet, "web"), what="web to be ready")

    replaced = web()
    replaced["metadata"]["labels"] = {"app": "web", "replaced": "yes"}
    put = client.send("PUT", PODS + "/web", json=replaced)
    assert put.status_code == 200 and put.json()["metadata"]["labels"]["replaced"] == "yes"

    patched = client.send(
        "PATCH",
        PODS + "/web",
        data=json.dumps({"metadata": {"labels": {"patched": "yes"}}}),
        headers={**AUTH, "Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200
    assert patched.json()["metadata"]["labels"] == {
        "app": "web",
        "replaced": "yes",
        "patched": "yes",
    }
    json_patch = client.send(
        "PATCH",
        PODS + "/web",
        data='[{"op": "test", "path": "/metadata/labels/patched", "value": "no"}]',
        headers={**AUTH, "Content-Type": "application/json-patch+json"},
    )
    assert json_patch.status_code == 422 and json_patch.json()["reason"] == "Invalid"
    unknown = client.send(
        "PATCH",
        PODS + "/web",
        data="{}",
        headers={**AUTH, "Content-Type": "application/x-unknown-patch"},
    )
    assert unknown.status_code == 415 and unknown.json()["kind"] == "Status"

    deleted = client.send("DELETE", PODS + "/web")
    assert deleted.status_code == 200 and deleted.json()["metadata"]["name"] == "web"
    assert deleted.json()["metadata"]["deletionGracePeriodSeconds"] == 2
    assert node.kubelet.get_pod("default", "web") is None
    again = client.send("DELETE", PODS + "/web")  # terminating: the pod is answered again
    assert again.status_code == 200 and "deletionTimestamp" in again.json()["metadata"]
    wait_for(lambda: client.send("GET", PODS + "/web").status_code == 404, what="web to be gone")
    missing = client.send("DELETE", PODS + "/web")
    assert missing.status_code == 404
    assert missing.json()["reason"] == "NotFound"
    assert missing.json()["message"] == 'pods "web" not found'


def test_a_dry_run_stores_nothing(node: Node, client: Client) -> None:
    answer = client.send("POST", PODS + "?dryRun=All", json=web())
    assert answer.status_code == 201 and answer.json()["metadata"]["name"] == "web"
    assert node.kubelet.get_pod("default", "web") is None
    assert node.api.source.pods == ()


def test_bad_writes_are_answered_with_a_status(client: Client) -> None:
    elsewhere = web()
    elsewhere["metadata"]["namespace"] = "other"
    mismatch = client.send("POST", PODS, json=elsewhere)
    assert mismatch.status_code == 400 and "does not match" in mismatch.json()["message"]
    not_a_pod = client.send("POST", PODS, json={"kind": "Service", "apiVersion": "v1"})
    assert not_a_pod.status_code == 400
    garbage = client.send(
        "POST", PODS, data=b"{", headers={**AUTH, "Content-Type": "application/json"}
    )
    assert garbage.status_code == 400
    invalid = web()
    invalid["spec"]["containers"][0]["image"] = ""
    refused = client.send("POST", PODS, json=invalid)
    assert refused.status_code == 422
    body = refused.json()
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "spec.containers[0].image"
    exists = client.send("POST", PODS, json={**web(), "metadata": {"name": "talker"}})
    assert exists.status_code == 409 and exists.json()["reason"] == "AlreadyExists"
    put_static = client.send(
        "PUT", PODS + "/talker", json={**web(), "metadata": {"name": "talker"}}
    )
    assert put_static.status_code == 403
    exec_ = client.send("POST", PODS + "/talker/exec?command=ls&stdout=true")
    assert exec_.status_code == 400 and "SPDY is not served" in exec_.json()["message"]
    on_version = client.send("POST", "/version")
    assert on_version.status_code == 405
    collection = client.send("PUT", PODS, json=web())
    assert collection.status_code == 405 and collection.json()["message"] == (
        "PUT is not supported on pods"
    )
    services = client.get("/api/v1/namespaces/default/services")
    assert services.status_code == 404 and "services" in services.json()["message"]


@pytest.mark.parametrize("resource", ["pods", "configmaps"])
def test_every_kind_checks_a_written_body_before_it_looks_for_the_object(
    client: Client, resource: str
) -> None:
    """One write path for every kind: a body that is not an object, or a bad ``dryRun``, is a
    400 before the object is looked for (as the API server decodes a request first)."""
    url = f"/api/v1/namespaces/default/{resource}/missing"
    put = client.send("PUT", url, json=[1])
    assert put.status_code == 400 and put.json()["message"].startswith("the body must be")
    delete = client.send("DELETE", url + "?dryRun=Some")
    assert delete.status_code == 400 and delete.json()["message"].startswith("dryRun:")
    assert client.send("DELETE", url).status_code == 404


def test_watch_streams_changes_from_a_resource_version(node: Node, client: Client) -> None:
    listed = client.get(PODS).json()
    version = listed["metadata"]["resourceVersion"]
    with client.get(PODS + f"?watch=true&resourceVersion={version}", stream=True) as stream:
        lines = stream.iter_lines()
        assert client.send("POST", PODS, json=web()).status_code == 201
        added = json.loads(next(lines))
        assert added["type"] == "ADDED" and added["object"]["metadata"]["name"] == "web"
        assert int(added["object"]["metadata"]["resourceVersion"]) > int(version)
        while True:
            event = json.loads(next(lines))
            assert event["type"] == "MODIFIED"
            if event["object"]["status"].get("phase") == "Running":
                break
        client.send("DELETE", PODS + "/web")
        while (event := json.loads(next(lines)))["type"] != "DELETED":
            pass
        assert event["object"]["metadata"]["name"] == "web"


def test_a_watch_from_the_start_lists_first_and_ends_at_its_timeout(client: Client) -> None:
    url = PODS + "?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3Dtalker"
    with client.get(url, stream=True, headers={"Accept": TABLE}) as stream:
        events = [json.loads(line) for line in stream.iter_lines() if line]
    (added,) = events
    assert added["type"] == "ADDED"
    assert added["object"]["kind"] == "Table"
    assert added["object"]["rows"][0]["cells"][0] == "talker"


def test_a_watch_list_gets_the_state_then_the_bookmark_that_ends_it(client: Client) -> None:
    """client-go's watch-list (kubectl 1.35 and later waits on it): ``sendInitialEvents`` sends
    the current objects, whatever the resourceVersion, then a BOOKMARK marked as their end."""
    url = (
        PODS + "?watch=true&timeoutSeconds=1&sendInitialEvents=true&allowWatchBookmarks=true"
        "&resourceVersionMatch=NotOlderThan&resourceVersion=1"
    )
    with client.get(url, stream=True) as stream:
        events = [json.loads(line) for line in stream.iter_lines() if line]
    assert [e["type"] for e in events[:2]] == ["ADDED", "BOOKMARK"]
    assert events[0]["object"]["metadata"]["name"] == "talker"
    bookmark = events[1]["object"]
    assert bookmark["kind"] == "Pod"
    assert bookmark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(
        events[0]["object"]["metadata"]["resourceVersion"]
    )
    nodes = client.get(
        "/api/v1/nodes?watch=true&timeoutSeconds=1&sendInitialEvents=true", stream=True
    )
    node_events = [json.loads(line) for line in nodes.iter_lines() if line]
    assert [e["type"] for e in node_events[:2]] == ["ADDED", "BOOKMARK"]
    assert node_events[1]["object"]["kind"] == "Node"
    events = client.get(
        "/api/v1/events?watch=true&timeoutSeconds=1&sendInitialEvents=true", stream=True
    )
    kinds = [json.loads(line)["type"] for line in events.iter_lines() if line]
    assert "BOOKMARK" in kinds and set(kinds[: kinds.index("BOOKMARK")]) <= {"ADDED"}


def test_a_watch_from_a_forgotten_version_is_told_it_expired(node: Node, client: Client) -> None:
    node.api.pods.log = PodLog(node.kubelet.clock.now, history=1)
    node.api.pods.current_pods()
    client.send("POST", PODS, json=web())
    node.api.pods.current_pods()
    with client.get(PODS + "?watch=true&resourceVersion=1", stream=True) as stream:
        event = json.loads(next(stream.iter_lines()))
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"


def test_events_with_the_field_selector_kubectl_describe_sends(node: Node, client: Client) -> None:
    uid = client.get(PODS + "/talker").json()["metadata"]["uid"]
    selector = (
        f"involvedObject.name=talker,involvedObject.namespace=default,involvedObject.uid={uid}"
    )
    events = client.get("/api/v1/namespaces/default/events", params={"fieldSelector": selector})
    items = events.json()["items"]
    assert {"Pulled", "Created", "Started"} <= {e["reason"] for e in items}
    assert all(e["involvedObject"]["uid"] == uid for e in items)
    assert all(e["source"] == {"component": "kubelet", "host": "node-1"} for e in items)
    name = items[0]["metadata"]["name"]
    assert client.get(f"/api/v1/namespaces/default/events/{name}").json() == items[0]
    other = client.get("/api/v1/namespaces/other/events").json()["items"]
    assert other == []


def test_logs_need_a_container_name_when_there_are_several(node: Node, client: Client) -> None:
    two = web()
    two["spec"]["containers"].append({"name": "side", "image": "busybox:1.35"})
    assert client.send("POST", PODS, json=two).status_code == 201
    asked = client.get(PODS + "/web/log")
    assert asked.status_code == 400
    assert asked.json()["message"] == (
        "a container name must be specified for pod web, choose one of: [main side]"
    )
    both = client.get(PODS + "/talker/log?sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z")
    assert both.status_code == 400
    assert client.get(PODS + "/talker/log?sinceTime=2000-01-01T00:00:00Z").text == "hello\nworld\n"
    assert client.get(PODS + "/talker/log?sinceTime=yesterday").status_code == 400


def test_namespaces_and_head_requests(node: Node, client: Client) -> None:
    names = [ns["metadata"]["name"] for ns in client.get("/api/v1/namespaces").json()["items"]]
    assert names == ["default"]
    assert client.get("/api/v1/namespaces/anything").json()["status"] == {"phase": "Active"}
    head = requests.head(client.url("/version"), timeout=10)
    assert head.status_code == 200 and head.text == ""
    assert client.get("/healthz").text == "ok\n"  # the kubelet's own endpoints still answer


def test_a_refused_write_does_not_spoil_the_kept_alive_connection(client: Client) -> None:
    with requests.Session() as session:
        refused = session.post(client.url(PODS), json=web(), timeout=10)
        assert refused.status_code == 401
        listed = session.get(client.url(PODS), timeout=10)
        assert listed.status_code == 200 and listed.json()["kind"] == "PodList"
        bodied = session.request("GET", client.url("/api/v1/pods"), data=b"x" * 10, timeout=10)
        assert bodied.status_code == 200
        assert session.get(client.url("/version"), timeout=10).json()["major"] == "1"


def test_a_large_body_over_tls_is_read_whole(node: Node, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    config = ServerConfig(
        port=0, tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key)
    )
    server = KubeletServer(node.kubelet, config, api=node.api).start()
    node.servers.append(server)
    big = web()
    big["metadata"]["annotations"] = {"note": "x" * 200_000}
    created = requests.post(
        server.url + PODS, json=big, headers=AUTH, verify=str(certs.ca), timeout=10
    )
    assert created.status_code == 201, created.text
    assert created.json()["metadata"]["annotations"]["note"] == "x" * 200_000


def test_the_openapi_v2_document_is_served_in_protobuf_when_asked(client: Client) -> None:
    accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    answer = client.get("/openapi/v2", headers={"Accept": accept})
    assert answer.headers["Content-Type"] == "application/octet-stream"
    assert answer.content.startswith(b"\n\x032.0")  # field 1 (swagger) = "2.0"
    assert client.get("/openapi/v2").json()["swagger"] == "2.0"


def test_a_watch_with_a_selector_sees_pods_enter_and_leave_it(node: Node, client: Client) -> None:
    merge = {**AUTH, "Content-Type": "application/merge-patch+json"}
    url = PODS + "?watch=true&labelSelector=watched%3Dyes"
    with client.get(url, stream=True) as stream:
        lines = (json.loads(line) for line in stream.iter_lines() if line)
        labelled = json.dumps({"metadata": {"labels": {"watched": "yes"}}})
        assert (
            client.send("PATCH", PODS + "/talker", data=labelled, headers=merge).status_code == 403
        )
        assert client.send("POST", PODS, json=web()).status_code == 201
        assert client.send("PATCH", PODS + "/web", data=labelled, headers=merge).status_code == 200
        entered = next(lines)
        assert (entered["type"], entered["object"]["metadata"]["name"]) == ("ADDED", "web")
        unlabelled = json.dumps({"metadata": {"labels": {"watched": None}}})
        assert (
            client.send("PATCH", PODS + "/web", data=unlabelled, headers=merge).status_code == 200
        )
        while (event := next(lines))["type"] == "MODIFIED":
            pass
        assert (event["type"], event["object"]["metadata"]["name"]) == ("DELETED", "web")
        assert node.kubelet.get_pod("default", "web") is not None


def test_server_side_apply_creates_and_never_takes_a_static_pod(node: Node, client: Client) -> None:
    apply = {**AUTH, "Content-Type": "application/apply-patch+yaml"}
    created = client.send("PATCH", PODS + "/web?fieldManager=me", data=WEB_POD, headers=apply)
    assert created.status_code == 201 and created.json()["metadata"]["name"] == "web"
    again = client.send("PATCH", PODS + "/web?fieldManager=me", data=WEB_POD, headers=apply)
    assert again.status_code == 200
    static = WEB_POD.replace("name: web", "name: talker")
    refused = client.send("PATCH", PODS + "/talker?fieldManager=me", data=static, headers=apply)
    assert refused.status_code == 403 and refused.json()["reason"] == "Forbidden"
    misnamed = client.send("PATCH", PODS + "/other?fieldManager=me", data=WEB_POD, headers=apply)
    assert misnamed.status_code == 400


def test_a_watch_list_ends_its_initial_events_with_a_bookmark(client: Client) -> None:
    params = {
        "watch": "true",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "1",
    }
    answer = client.get(PODS, params=params, stream=True)
    lines = [json.loads(line) for line in answer.iter_lines() if line]
    assert [e["type"] for e in lines[:2]] == ["ADDED", "BOOKMARK"]
    assert lines[0]["object"]["metadata"]["name"] == "talker"
    meta = lines[1]["object"]["metadata"]
    assert meta["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(meta["resourceVersion"]) >= int(lines[0]["object"]["metadata"]["resourceVersion"])
