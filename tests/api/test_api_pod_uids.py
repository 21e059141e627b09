"""A pod created over the node's API gets a new random UID at each create, as the API server
gives one (uuid4), kept by replaces and patches: a pod deleted and made again under the same
name is a new pod, with its own events and its own containers. On the fake runtime, in virtual
time; the API is driven over HTTP as kubectl drives it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from kubecore._api.server import ApiServerConfig, attach_api
from kubecore._contract.labels import POD_NAME_LABEL, POD_UID_LABEL
from kubecore._http.server import KubeletServer, ServerConfig
from tests.agent.support import Node, make_node

TOKEN = "uid-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PODS = "/api/v1/namespaces/default/pods"
EVENTS = "/api/v1/namespaces/default/events"
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "app", "image": "busybox:1.36", "command": ["server"]}],
    },
}


class Api:
    def __init__(self, node: Node, url: str) -> None:
        self.node = node
        self.url = url

    def send(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, self.url + path, headers=AUTH, timeout=10, **kwargs)

    def create(self) -> str:
        created = self.send("POST", PODS, json=POD)
        assert created.status_code == 201, created.text
        uid = created.json()["metadata"]["uid"]
        assert isinstance(uid, str)
        return uid

    def delete(self) -> None:
        answer = self.send("DELETE", PODS + "/web")
        assert answer.status_code == 200, answer.text

    def events_of(self, uid: str) -> list[dict[str, Any]]:
        # as kubectl describe asks for a pod's events
        selector = ",".join(
            (
                "involvedObject.name=web",
                "involvedObject.namespace=default",
                f"involvedObject.uid={uid}",
            )
        )
        answer = self.send("GET", EVENTS, params={"fieldSelector": selector})
        assert answer.status_code == 200, answer.text
        items = answer.json()["items"]
        assert isinstance(items, list)
        return items


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    node = make_node(tmp_path)
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    api = attach_api(node.kubelet, ApiServerConfig(token_file=str(token)), address="127.0.0.1")
    server = KubeletServer(node.kubelet, ServerConfig(port=0, request_timeout=10.0), api=api)
    server.start()
    try:
        yield Api(node, server.url)
    finally:
        server.stop()


def gone(node: Node) -> bool:
    return not node.all(pod="web")


def test_a_pod_made_again_over_the_api_is_a_new_pod(api: Api) -> None:
    node = api.node
    first = api.create()
    assert uuid.UUID(first).version == 4
    node.converge()
    old_reasons = {e["reason"] for e in api.events_of(first)}
    assert "Started" in old_reasons
    api.delete()
    node.run_until(lambda: gone(node))
    assert "Killing" in {e["reason"] for e in api.events_of(first)}

    second = api.create()
    node.converge()

    assert second != first
    (running,) = node.running(pod="web")
    assert running.labels[POD_UID_LABEL] == second
    reasons = [e["reason"] for e in api.events_of(second)]
    assert "Started" in reasons and "Killing" not in reasons  # none of the old pod's events
    # A replace keeps the uid the create gave (a uid the client sends is not taken).
    current = api.send("GET", PODS + "/web").json()
    current["metadata"]["labels"] = {"app": "web", "replaced": "yes"}
    replaced = api.send("PUT", PODS + "/web", json=current)
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["metadata"]["uid"] == second


def test_a_uid_in_the_created_body_is_not_taken(api: Api) -> None:
    sent = {**POD, "metadata": {**POD["metadata"], "uid": "chosen-by-the-client"}}  # type: ignore[dict-item]
    created = api.send("POST", PODS, json=sent)
    assert created.status_code == 201, created.text
    assert created.json()["metadata"]["uid"] != "chosen-by-the-client"


def test_a_fast_delete_and_create_converges(api: Api) -> None:
    node = api.node
    first = api.create()
    node.kubelet.sync()  # the first pass has begun making the pod
    api.delete()  # deleted before it ran
    second = api.create()
    node.converge()

    (running,) = node.running(pod="web")
    assert running.labels[POD_UID_LABEL] == second != first
    assert [c.labels[POD_NAME_LABEL] for c in node.all(pod="web")] == ["web"]
    warnings = [e for e in api.events_of(second) if e["type"] == "Warning"]
    assert warnings == []
    phase = api.send("GET", PODS + "/web").json()["status"]["phase"]
    assert phase == "Running"
