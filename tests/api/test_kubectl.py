"""The real ``kubectl`` against a running agent (fake runtime, real time) over its Kubernetes API.

Reads go over plain HTTP on 127.0.0.1 with default kubectl flags; writes need a bearer token,
which kubectl sends only over HTTPS, so they go through a second server with TLS and a kubeconfig
holding the CA and the token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from kubecore._api.server import ApiServerConfig, attach_api
from kubecore._http.server import KubeletServer, ServerConfig
from tests.api.kubectl_support import (
    STATIC_POD,
    TOKEN,
    WEB_POD,
    Certs,
    Kubectl,
    Node,
    is_ready,
    make_certs,
    needs_kubectl,
    read_until,
    running_node,
    wait_for,
)

pytestmark = needs_kubectl


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as found:
        yield found


def pod_phase(node: Node, name: str) -> str:
    pod = node.kubelet.get_pod("default", name)
    return pod.status.phase if pod is not None and pod.status is not None else ""


def table(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


# --- discovery ----------------------------------------------------------------------------


def test_version_and_api_resources(node: Node) -> None:
    kubectl = node.reader()
    versions = json.loads(kubectl.out("version", "-o", "json"))
    assert versions["serverVersion"]["major"] == "1"
    assert "kubecore" in versions["serverVersion"]["gitVersion"]
    resources = table(kubectl.out("api-resources", "--no-headers"))
    names = {row[0] for row in resources}
    assert {"pods", "events", "namespaces"} <= names
    assert {"v1", "metrics.k8s.io/v1beta1", "coordination.k8s.io/v1"} <= set(
        kubectl.out("api-versions").split()
    )


def test_discovery_documents_answer_as_the_api_server_does(node: Node) -> None:
    url = node.http.url
    groups = requests.get(url + "/apis", timeout=10).json()
    assert (groups["kind"], groups["apiVersion"]) == ("APIGroupList", "v1")
    assert {"metrics.k8s.io", "coordination.k8s.io"} <= {
        group["name"] for group in groups["groups"]
    }
    resources = requests.get(url + "/api/v1", timeout=10).json()
    assert resources["kind"] == "APIResourceList"
    pods = next(r for r in resources["resources"] if r["name"] == "pods")
    assert {"create", "delete", "get", "list", "watch", "patch"} <= set(pods["verbs"])
    assert "pods/log" in {r["name"] for r in resources["resources"]}
    v3 = requests.get(url + "/openapi/v3", timeout=10).json()
    document = requests.get(url + v3["paths"]["api/v1"]["serverRelativeURL"], timeout=10).json()
    assert "io.k8s.api.core.v1.Pod" in document["components"]["schemas"]
    missing = requests.get(url + "/api/v1/nothing", timeout=10)
    assert missing.status_code == 404 and missing.json()["kind"] == "Status"


# --- reading ------------------------------------------------------------------------------


def test_server_flag_alone_is_enough_to_read(node: Node) -> None:
    bare = Kubectl(node.tmp / "bare", node.tmp / "bare" / "no-such-kubeconfig")
    bare.home.mkdir()
    rows = table(bare.out("--server", node.http.url, "get", "pods"))
    assert rows[1][:3] == ["talker", "1/1", "Running"]


def test_get_pods_in_kubectls_own_columns(node: Node) -> None:
    kubectl = node.reader()
    rows = table(kubectl.out("get", "pods"))
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert rows[1][:4] == ["talker", "1/1", "Running", "0"]

    wide = table(kubectl.out("get", "pods", "-o", "wide"))
    assert wide[0][:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    assert wide[1][6] == "node-1" and wide[1][5].count(".") == 3

    everywhere = table(kubectl.out("get", "pods", "-A"))
    assert everywhere[0][:2] == ["NAMESPACE", "NAME"]
    assert everywhere[1][:2] == ["default", "talker"]

    other = kubectl.run("get", "pods", "-n", "other")
    assert other.stdout == "" and "No resources found in other namespace." in other.stderr
    assert table(kubectl.out("get", "pods", "-l", "app=talker", "--no-headers"))[0][0] == "talker"
    assert kubectl.run("get", "pods", "-l", "app=nobody").stdout == ""

    single = table(kubectl.out("get", "pod", "talker"))
    assert single[1][0] == "talker"


def test_get_pod_as_json_and_yaml(node: Node) -> None:
    kubectl = node.reader()
    pod = json.loads(kubectl.out("get", "pod", "talker", "-o", "json"))
    assert pod["kind"] == "Pod" and pod["metadata"]["name"] == "talker"
    assert pod["status"]["phase"] == "Running"
    assert pod["metadata"]["annotations"]["kubernetes.io/config.source"] == "file"
    assert pod["metadata"]["resourceVersion"].isdigit()
    listed = yaml.safe_load(kubectl.out("get", "pods", "-o", "yaml"))
    assert listed["kind"] == "List"
    assert [item["metadata"]["name"] for item in listed["items"]] == ["talker"]
    missing = kubectl.run("get", "pod", "nobody", check=False)
    assert missing.returncode == 1
    assert 'pods "nobody" not found' in missing.stderr


def test_the_table_form_is_answered_when_asked(node: Node) -> None:
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    body = requests.get(
        node.http.url + "/api/v1/namespaces/default/pods", headers={"Accept": accept}, timeout=10
    ).json()
    assert body["kind"] == "Table"
    assert [c["name"] for c in body["columnDefinitions"]][:5] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
    ]
    (row,) = body["rows"]
    assert row["cells"][:3] == ["talker", "1/1", "Running"]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    plain = requests.get(node.http.url + "/api/v1/pods", timeout=10).json()
    assert plain["kind"] == "PodList"


def test_get_events_and_describe(node: Node) -> None:
    kubectl = node.reader()
    events = table(kubectl.out("get", "events"))
    assert events[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    reasons = {row[2] for row in events[1:]}
    assert {"Pulled", "Created", "Started"} <= reasons
    assert all(row[3] == "pod/talker" for row in events[1:])

    described = kubectl.out("describe", "pod", "talker")
    assert "Name:         talker" in described
    assert "Status:       Running" in described
    assert "Node:         node-1" in described
    events_part = described.split("Events:", 1)[1]
    assert "Started" in events_part and "Started container main" in events_part


def test_logs_with_tail_container_since_and_previous(node: Node) -> None:
    kubectl = node.reader()
    assert kubectl.out("logs", "talker") == "hello\nworld\n"
    assert kubectl.out("logs", "talker", "-c", "main", "--tail", "1") == "world\n"
    assert kubectl.out("logs", "talker", "--since", "1h") == "hello\nworld\n"
    stamped = kubectl.out("logs", "talker", "--timestamps").splitlines()
    assert stamped[0].endswith(" hello") and stamped[0][:4].isdigit()
    assert kubectl.out("logs", "talker", "--limit-bytes", "3") == "hel"
    no_previous = kubectl.run("logs", "talker", "--previous", check=False)
    assert no_previous.returncode == 1
    assert 'previous terminated container "main" in pod "talker" not found' in no_previous.stderr
    wrong = kubectl.run("logs", "talker", "-c", "nope", check=False)
    assert "container nope is not valid for pod talker" in wrong.stderr

    first = node.running("talker")
    node.runtime.write_log(first.id, "last words\n")
    node.runtime.crash(first.id, 1)
    wait_for(
        lambda: (c := node.running("talker")) is not None and c.id != first.id,
        what="the restarted container",
    )
    assert kubectl.out("logs", "talker", "--previous") == "hello\nworld\nlast words\n"
    assert kubectl.out("logs", "talker") == "hello\nworld\n"
    wait_for(
        lambda: table(kubectl.out("get", "pod", "talker", "--no-headers"))[0][3] == "1",
        what="RESTARTS to show 1",
    )


def test_logs_follow_streams_until_the_container_stops(node: Node) -> None:
    kubectl = node.reader()
    container = node.running("talker")
    follower = kubectl.popen("logs", "-f", "talker", "--tail", "1")
    try:
        lines: list[str] = []
        assert follower.stdout is not None
        read_until(follower.stdout, lambda line: line == "world\n", lines)
        node.runtime.write_log(container.id, "third\n")
        read_until(follower.stdout, lambda line: line == "third\n", lines)
        node.runtime.crash(container.id, 1)
        assert follower.wait(timeout=30) == 0
        assert lines == ["world\n", "third\n"]
    finally:
        follower.kill()
        follower.communicate()


def test_get_watch_shows_changes(node: Node, certs: Certs) -> None:
    watcher = node.reader().popen("get", "pods", "-w")
    writer = node.writer(certs)
    manifest = node.tmp / "web.yaml"
    manifest.write_text(WEB_POD)
    try:
        lines: list[str] = []
        assert watcher.stdout is not None
        read_until(watcher.stdout, lambda line: line.startswith("talker "), lines)
        writer.out("apply", "-f", str(manifest))
        read_until(
            watcher.stdout, lambda line: line.split()[:3] == ["web", "1/1", "Running"], lines
        )
        assert lines[0].split()[0] == "NAME"
    finally:
        watcher.kill()
        watcher.communicate()


# --- writing ------------------------------------------------------------------------------


def test_apply_create_and_delete_an_api_pod(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    manifest = node.tmp / "web.yaml"
    manifest.write_text(WEB_POD)

    assert kubectl.out("apply", "-f", str(manifest)) == "pod/web created\n"
    wait_for(lambda: is_ready(node.kubelet, "web"), what="web to be ready")
    pod = node.kubelet.get_pod("default", "web")
    assert pod is not None
    assert pod.metadata.annotations["kubernetes.io/config.source"] == "kube-apiserver"
    assert kubectl.out("wait", "--for=condition=Ready", "pod/web", "--timeout=30s") == (
        "pod/web condition met\n"
    )
    assert kubectl.out("logs", "web") == "serving\n"
    assert kubectl.out("apply", "-f", str(manifest)) == "pod/web unchanged\n"

    # A running pod's command is not changed (the API server's ValidatePodUpdate), its labels are.
    manifest.write_text(WEB_POD.replace("echo serving", "echo serving again"))
    refused = kubectl.run("apply", "-f", str(manifest), check=False)
    assert refused.returncode == 1
    assert "pod updates may not change fields other than `spec.containers[*].image`" in (
        refused.stderr
    )
    manifest.write_text(WEB_POD.replace("labels: {app: web}", "labels: {app: web, tier: a}"))
    assert kubectl.out("apply", "-f", str(manifest)) == "pod/web configured\n"
    assert node.kubelet.get_pod("default", "web").metadata.labels["tier"] == "a"  # type: ignore[union-attr]

    again = kubectl.run("create", "-f", str(manifest), check=False)
    assert again.returncode == 1
    assert 'pods "web" already exists' in again.stderr

    # kubectl 1.33 and later add " from default namespace".
    assert kubectl.out("delete", "-f", str(manifest)).startswith('pod "web" deleted')
    wait_for(lambda: not node.containers("web") or not node.running("web"), what="web to stop")
    assert node.kubelet.get_pod("default", "web") is None
    gone = kubectl.run("delete", "pod", "web", check=False)
    assert gone.returncode == 1 and 'pods "web" not found' in gone.stderr

    assert kubectl.out("create", "-f", str(manifest)) == "pod/web created\n"
    wait_for(lambda: pod_phase(node, "web") == "Running", what="web to run again")


def test_delete_with_a_grace_period_stops_with_that_period(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    manifest = node.tmp / "web.yaml"
    manifest.write_text(WEB_POD)
    kubectl.out("create", "-f", str(manifest))
    wait_for(lambda: node.running("web"), what="web to run")
    container = node.running("web")
    # The spec says 2 s; the agent stops at least 2 s, so ask for more to see it used.
    deleted = kubectl.out("delete", "pod", "web", "--grace-period", "3")
    assert deleted.startswith('pod "web" deleted')
    wait_for(lambda: node.running("web") is None, what="web to stop")
    stops = [args for op, args in node.runtime.calls if op == "stop_container"]
    assert any(args[0] == container.id and abs(float(args[1]) - 3.0) < 0.5 for args in stops), stops


def test_a_static_pod_is_read_only_over_the_api(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    refused = kubectl.run("delete", "pod", "talker", check=False)
    assert refused.returncode == 1
    assert 'pods "talker" is forbidden' in refused.stderr
    assert 'comes from the "file" source' in refused.stderr
    manifest = node.tmp / "talker.yaml"
    manifest.write_text(STATIC_POD.replace("echo hello", "echo changed"))
    changed = kubectl.run("apply", "-f", str(manifest), check=False)
    assert changed.returncode == 1 and "forbidden" in changed.stderr
    assert node.running("talker") is not None
    assert pod_phase(node, "talker") == "Running"


def test_an_invalid_pod_is_refused_with_every_problem(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    manifest = node.tmp / "bad.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\n"
        "spec:\n  containers:\n  - {name: Main, image: ''}\n"
    )
    refused = kubectl.run("create", "-f", str(manifest), check=False)
    assert refused.returncode == 1
    assert 'Pod "bad" is invalid' in refused.stderr
    assert "spec.containers[0].name" in refused.stderr
    assert node.kubelet.get_pod("default", "bad") is None


# --- security -----------------------------------------------------------------------------


def status_of(response: requests.Response) -> dict[str, Any]:
    body = response.json()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["code"] == response.status_code
    return dict(body)


def test_writes_need_the_token(node: Node, certs: Certs) -> None:
    pod = yaml.safe_load(WEB_POD)
    url = node.http.url + "/api/v1/namespaces/default/pods"
    anonymous = requests.post(url, json=pod, timeout=10)
    assert anonymous.status_code == 401
    assert status_of(anonymous)["reason"] == "Unauthorized"
    assert "only over HTTPS" in anonymous.json()["message"]
    # A wrong token is 401, as the API server answers an invalid bearer token (client-go then
    # knows to get new credentials); 403 is for what valid credentials may not do.
    wrong = requests.post(url, json=pod, headers={"Authorization": "Bearer nope"}, timeout=10)
    assert wrong.status_code == 401 and status_of(wrong)["reason"] == "Unauthorized"
    assert "not valid" in wrong.json()["message"]
    deleting = requests.delete(url + "/talker", timeout=10)
    assert deleting.status_code == 401
    assert node.kubelet.get_pod("default", "web") is None

    # kubectl over HTTPS: no token, then a wrong one.
    server = node.https(certs)
    manifest = node.tmp / "web.yaml"
    manifest.write_text(WEB_POD)
    anonymous_tls = requests.post(
        server.url + "/api/v1/namespaces/default/pods", json=pod, verify=str(certs.ca), timeout=10
    )
    assert anonymous_tls.status_code == 401
    assert "only over HTTPS" not in status_of(anonymous_tls)["message"]
    impostor = node.writer(certs, token="not-the-token")
    refused = impostor.run("apply", "-f", str(manifest), check=False)
    assert refused.returncode == 1 and "logged in" in refused.stderr, refused.stderr
    assert node.kubelet.get_pod("default", "web") is None


def test_reads_need_the_token_off_loopback(node: Node) -> None:
    # The API as it is attached for a non-loopback address, served here on 127.0.0.1.
    token_file = node.tmp / "token"
    remote_api = attach_api(
        node.kubelet, ApiServerConfig(token_file=str(token_file)), address="192.0.2.10", tls=True
    )
    server = KubeletServer(node.kubelet, ServerConfig(port=0), api=remote_api).start()
    node.servers.append(server)
    url = server.url + "/api/v1/pods"
    anonymous = requests.get(url, timeout=10)
    assert anonymous.status_code == 401 and status_of(anonymous)["reason"] == "Unauthorized"
    wrong = requests.get(url, headers={"Authorization": "Bearer nope"}, timeout=10)
    assert wrong.status_code == 401 and status_of(wrong)["reason"] == "Unauthorized"
    good = requests.get(url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert good.status_code == 200 and good.json()["kind"] == "PodList"
    with pytest.raises(ValueError, match="needs --api-token-file"):
        attach_api(node.kubelet, ApiServerConfig(), address="0.0.0.0", tls=True)
    with pytest.raises(ValueError, match="needs --tls-cert-file"):
        attach_api(node.kubelet, ApiServerConfig(token_file=str(token_file)), address="0.0.0.0")


def test_tls_serves_the_kubelet_endpoints_too(node: Node, certs: Certs) -> None:
    server = node.https(certs)
    assert server.url.startswith("https://127.0.0.1:")
    response = requests.get(server.url + "/healthz", verify=str(certs.ca), timeout=10)
    assert response.status_code == 200
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(server.url + "/healthz", timeout=10)  # an unknown CA
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(server.url.replace("https:", "http:") + "/healthz", timeout=10)
    answered = requests.get(server.url + "/healthz", verify=str(certs.ca), timeout=10)
    assert answered.text == "ok\n"


def test_apply_removes_an_annotation_dropped_from_the_file(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    manifest = node.tmp / "two.yaml"
    two = yaml.safe_load(WEB_POD)
    two["metadata"]["annotations"] = {"a": "1", "b": "2"}
    manifest.write_text(yaml.safe_dump(two))
    assert kubectl.out("apply", "-f", str(manifest)) == "pod/web created\n"
    kubectl.out("label", "pod", "web", "owner=someone-else")
    del two["metadata"]["annotations"]["b"]
    manifest.write_text(yaml.safe_dump(two))
    assert kubectl.out("apply", "-f", str(manifest)) == "pod/web configured\n"
    pod = json.loads(kubectl.out("get", "pod", "web", "-o", "json"))
    assert "b" not in pod["metadata"]["annotations"] and pod["metadata"]["annotations"]["a"] == "1"
    assert pod["metadata"]["labels"] == {"app": "web", "owner": "someone-else"}
