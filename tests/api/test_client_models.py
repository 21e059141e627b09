"""Every object the node serves reads into the models of the Python Kubernetes clients: the
official ``kubernetes`` client's (pydantic, every field its schema requires checked), lightkube's
(msgspec, strict) and kr8s's objects. A field the API's schema marks required and the node left
out (the Node's ``nodeInfo.kubeProxyVersion``) fails ``list_node()`` in one and ``get(Node)`` in
the other, so each object is checked, and each item of each list."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kr8s
import lightkube.models.coordination_v1 as lightkube_coordination
import lightkube.models.core_v1 as lightkube_core
import pytest
from kubernetes.client import ApiClient
from lightkube.resources import coordination_v1, core_v1

from tests.api.client_support import TlsNode, served_objects, tls_node

KUBERNETES_MODELS = {
    "Node": "V1Node",
    "NodeList": "V1NodeList",
    "Pod": "V1Pod",
    "PodList": "V1PodList",
    "Event": "CoreV1Event",
    "EventList": "CoreV1EventList",
    "Lease": "V1Lease",
    "LeaseList": "V1LeaseList",
    "ConfigMap": "V1ConfigMap",
    "ConfigMapList": "V1ConfigMapList",
    "Secret": "V1Secret",
    "SecretList": "V1SecretList",
    "Namespace": "V1Namespace",
    "NamespaceList": "V1NamespaceList",
}


def _lightkube_model(kind: str) -> Any:
    if kind.endswith("List"):
        module = lightkube_coordination if kind == "LeaseList" else lightkube_core
        return getattr(module, kind)
    return getattr(coordination_v1 if kind == "Lease" else core_v1, kind)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TlsNode, dict[str, Any]]]:
    tmp: Path = tmp_path_factory.mktemp("client-models")
    with tls_node(tmp) as node:
        yield node, served_objects(node)


@pytest.mark.parametrize("kind", sorted(KUBERNETES_MODELS))
def test_every_served_object_reads_into_the_kubernetes_clients_models(
    served: tuple[TlsNode, dict[str, Any]], kind: str
) -> None:
    body = served[1][kind]
    read = ApiClient().deserialize(json.dumps(body), KUBERNETES_MODELS[kind], "application/json")
    assert read.metadata is not None
    if kind.endswith("List"):
        assert len(read.items) == len(body["items"]) > 0
    else:
        assert read.metadata.name == body["metadata"]["name"]


@pytest.mark.parametrize("kind", sorted(KUBERNETES_MODELS))
def test_every_served_object_reads_into_lightkubes_models(
    served: tuple[TlsNode, dict[str, Any]], kind: str
) -> None:
    body = served[1][kind]
    read = _lightkube_model(kind).from_dict(body)
    if kind.endswith("List"):
        assert len(read.items) == len(body["items"]) > 0
        assert read.metadata.resourceVersion == body["metadata"]["resourceVersion"]
    else:
        assert read.metadata.name == body["metadata"]["name"]


@pytest.mark.parametrize("kind", sorted(KUBERNETES_MODELS))
def test_every_served_object_reads_into_kr8s_objects(
    served: tuple[TlsNode, dict[str, Any]], kind: str
) -> None:
    node, objects = served
    api = kr8s.api(kubeconfig=str(node.kubeconfig))
    body = objects[kind]
    item_kind = kind.removesuffix("List")
    version = "coordination.k8s.io/v1" if item_kind == "Lease" else "v1"
    items = body["items"] if kind.endswith("List") else [body]
    for item in items:
        # kr8s gives a list's items their kind, as the API server leaves it off them.
        spec = {"kind": item_kind, "apiVersion": version, **item}
        read = kr8s.objects.object_from_spec(spec, api=api, allow_unknown_type=True)
        assert read.kind == item_kind and read.name == item["metadata"]["name"]
        assert read.namespaced == ("namespace" in item["metadata"])


def test_the_node_has_every_field_of_node_system_info_the_schema_requires(
    served: tuple[TlsNode, dict[str, Any]],
) -> None:
    info = served[1]["Node"]["status"]["nodeInfo"]
    # kube-proxy's version is deprecated (1.31): the kubelet reports it empty.
    assert info["kubeProxyVersion"] == ""
    assert all(isinstance(value, str) for value in info.values())
