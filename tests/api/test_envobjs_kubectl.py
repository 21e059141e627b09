"""ConfigMaps and Secrets with the real ``kubectl`` over the node's Kubernetes API: apply,
create, get (kubectl's own columns), replace, delete; a pod waiting for a ConfigMap starts once
kubectl creates it; Secrets are never served to an anonymous reader."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from kubecore.v1 import ConfigMap, ObjectMeta
from tests.api.kubectl_support import (
    Certs,
    Node,
    kubectl_for,
    make_certs,
    needs_kubectl,
    running_node,
    wait_for,
)

pytestmark = needs_kubectl

SECRET_VALUE = "kubectl-hunter2"

OBJECTS = f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  level: debug
---
apiVersion: v1
kind: Secret
metadata:
  name: db
type: Opaque
stringData:
  password: {SECRET_VALUE}
"""

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: needs-config
spec:
  containers:
  - name: main
    image: busybox:1.35
    command: ["sh", "-c", "echo $(LEVEL); trap 'exit 0' TERM; while :; do sleep 1; done"]
    env:
    - name: LEVEL
      valueFrom:
        configMapKeyRef: {name: settings, key: level}
"""


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as found:
        yield found


def table(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def waiting_reason(node: Node, name: str) -> str:
    pod = node.kubelet.get_pod("default", name)
    statuses = pod.status.container_statuses if pod and pod.status else ()
    waiting = statuses[0].state.waiting if statuses else None
    return waiting.reason if waiting else ""


def test_objects_with_kubectl(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    pod = node.tmp / "pod.yaml"
    pod.write_text(POD)
    kubectl.out("apply", "-f", str(pod))
    wait_for(lambda: waiting_reason(node, "needs-config") == "CreateContainerConfigError")

    objects = node.tmp / "objects.yaml"
    objects.write_text(OBJECTS)
    assert kubectl.out("apply", "-f", str(objects)) == (
        "configmap/settings created\nsecret/db created\n"
    )
    wait_for(lambda: node.running("needs-config"), what="the pod to start")
    assert kubectl.out("logs", "needs-config") == "debug\n"
    # As with the API server: stringData is never stored, so kubectl always patches it again.
    assert kubectl.out("apply", "-f", str(objects)) == (
        "configmap/settings unchanged\nsecret/db configured\n"
    )
    objects.write_text(OBJECTS.replace("level: debug", "level: info"))
    assert kubectl.out("apply", "-f", str(objects)).startswith("configmap/settings configured\n")
    assert node.kubelet.views.objects.get_config_map("default", "settings").data == {
        "level": "info"
    }

    rows = table(kubectl.out("get", "configmaps"))
    assert rows[0] == ["NAME", "DATA", "AGE"] and rows[1][:2] == ["settings", "1"]
    rows = table(kubectl.out("get", "secrets"))
    assert rows[0] == ["NAME", "TYPE", "DATA", "AGE"] and rows[1][:3] == ["db", "Opaque", "1"]
    stored = json.loads(kubectl.out("get", "secret", "db", "-o", "json"))
    assert base64.b64decode(stored["data"]["password"]).decode() == SECRET_VALUE
    assert kubectl.out("get", "cm", "settings", "-o", "jsonpath={.data.level}") == "info"

    created = kubectl.run("create", "configmap", "extra", "--from-literal=a=b", check=False)
    assert created.returncode == 0, created.stderr
    assert node.kubelet.views.objects.get_config_map("default", "extra").data == {"a": "b"}
    made = kubectl.run(
        "create", "secret", "generic", "token", f"--from-literal=t={SECRET_VALUE}", check=False
    )
    assert made.returncode == 0, made.stderr
    secret = node.kubelet.views.objects.get_secret("default", "token")
    assert secret is not None and secret.data == {"t": SECRET_VALUE.encode()}
    assert secret.type == "Opaque"
    again = kubectl.run("create", "-f", str(objects), check=False)
    assert again.returncode == 1 and 'configmaps "settings" already exists' in again.stderr

    # kubectl 1.35 and later name the namespace too ("... deleted from default namespace").
    deleted = kubectl.out("delete", "-f", str(objects)).replace(" from default namespace", "")
    assert deleted == 'configmap "settings" deleted\nsecret "db" deleted\n'
    assert node.kubelet.views.objects.get_config_map("default", "settings") is None
    gone = kubectl.run("get", "configmap", "settings", check=False)
    assert gone.returncode == 1 and 'configmaps "settings" not found' in gone.stderr


def test_secrets_need_the_token_even_on_loopback(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    objects = node.tmp / "objects.yaml"
    objects.write_text(OBJECTS)
    kubectl.out("apply", "-f", str(objects))
    anonymous = requests.get(node.http.url + "/api/v1/namespaces/default/secrets", timeout=10)
    assert anonymous.status_code == 401
    assert SECRET_VALUE not in anonymous.text
    assert base64.b64encode(SECRET_VALUE.encode()).decode() not in anonymous.text
    refused = kubectl_for(node.tmp / "anonymous", node.http.url).run("get", "secrets", check=False)
    assert refused.returncode == 1
    # ConfigMaps read as pods do.
    assert table(node.reader().out("get", "configmaps"))[1][0] == "settings"


def test_objects_of_a_manifest_file_are_read_only(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    node.kubelet.views.objects.put(
        ConfigMap(ObjectMeta(name="static-config"), data={"k": "v"}),
        source="file",
    )
    refused = kubectl.run("delete", "configmap", "static-config", check=False)
    assert refused.returncode == 1
    assert 'configmaps "static-config" is forbidden' in refused.stderr


def test_an_immutable_config_map_cannot_change(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    manifest = node.tmp / "frozen.yaml"
    frozen = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: frozen}\nimmutable: true\n"
    manifest.write_text(frozen + "data: {a: '1'}\n")
    kubectl.out("apply", "-f", str(manifest))
    manifest.write_text(frozen + "data: {a: '2'}\n")
    refused = kubectl.run("apply", "-f", str(manifest), check=False)
    assert refused.returncode == 1
    assert "field is immutable when `immutable` is set" in refused.stderr
    assert node.kubelet.views.objects.get_config_map("default", "frozen").data == {"a": "1"}


def test_server_side_apply_describe_and_label(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    objects = node.tmp / "objects.yaml"
    objects.write_text(OBJECTS)
    assert kubectl.out("apply", "--server-side", "-f", str(objects)) == (
        "configmap/settings serverside-applied\nsecret/db serverside-applied\n"
    )
    described = kubectl.out("describe", "secret", "db")
    assert "password:  15 bytes" in described and SECRET_VALUE not in described
    assert kubectl.out("label", "cm", "settings", "tier=web") == "configmap/settings labeled\n"
    assert table(kubectl.out("get", "cm", "-l", "tier=web", "--no-headers"))[0][0] == "settings"
    assert kubectl.run("get", "cm", "-l", "tier=db").stdout == ""


def test_protobuf_bodies_read_into_the_json_shape() -> None:
    from kubecore._api.protobuf import (
        encode_varint,
        message_field,
        object_from_protobuf,
        string_field,
    )

    def entry(number: int, key: str, value: bytes) -> bytes:
        return message_field(number, string_field(1, key) + message_field(2, value))

    meta = string_field(1, "db") + string_field(3, "team") + entry(11, "app", b"web")
    secret = (
        message_field(1, meta)
        + entry(2, "password", SECRET_VALUE.encode())
        + string_field(3, "Opaque")
        + entry(4, "user", b"shop")
        + encode_varint(5 << 3)
        + encode_varint(1)
    )
    envelope = (
        b"k8s\x00"
        + message_field(1, string_field(1, "v1") + string_field(2, "Secret"))
        + message_field(2, secret)
    )
    assert object_from_protobuf(envelope) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "team", "labels": {"app": "web"}},
        "data": {"password": base64.b64encode(SECRET_VALUE.encode()).decode()},
        "type": "Opaque",
        "stringData": {"user": "shop"},
        "immutable": True,
    }
    with pytest.raises(ValueError, match="only ConfigMap and Secret"):
        object_from_protobuf(b"k8s\x00" + message_field(1, string_field(2, "Pod")))
    with pytest.raises(ValueError):
        object_from_protobuf(b"k8s\x00\x0a\xff")
