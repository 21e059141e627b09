"""A resource the node does not serve (Services, ReplicationControllers, Deployments) is not
found whatever the verb, as the API server answers for a resource it has no handler for: a write
gets the same 404 NotFound ``Status`` a read gets, never a 405 that tells a client the resource
is there but refuses the verb. A served resource still refuses a verb it does not serve (405)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tests.api.client_support import TlsNode, tls_node

UNSERVED = (
    "/api/v1/namespaces/default/services",
    "/api/v1/namespaces/default/replicationcontrollers",
    "/apis/apps/v1/namespaces/default/deployments",
    "/api/v1/persistentvolumes",
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsNode]:
    tmp: Path = tmp_path_factory.mktemp("unserved")
    with tls_node(tmp) as node:
        yield node


@pytest.mark.parametrize("path", UNSERVED)
@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
def test_every_verb_on_an_unserved_resource_is_not_found(
    served: TlsNode, path: str, method: str
) -> None:
    target = path if method in ("GET", "POST") else path + "/web"
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}}
    answer = served.request(
        method,
        target,
        json=None if method in ("GET", "DELETE") else body,
        headers={"Content-Type": "application/merge-patch+json"} if method == "PATCH" else {},
    )
    assert answer.status_code == 404, answer.text
    status = answer.json()
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "NotFound", 404)


def test_the_kubernetes_client_creating_a_service_gets_not_found(served: TlsNode) -> None:
    v1 = client.CoreV1Api(config.new_client_from_config(str(served.kubeconfig)))
    service = client.V1Service(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)]),
    )
    with pytest.raises(ApiException) as refused:
        v1.create_namespaced_service("default", service)
    assert refused.value.status == 404
    assert "services are not served" in str(refused.value.body)


def test_a_served_resource_still_refuses_a_verb_it_does_not_serve(served: TlsNode) -> None:
    for method, path in (("POST", "/api/v1/nodes"), ("DELETE", "/api/v1/namespaces/default")):
        answer = served.request(method, path, json={})
        assert answer.status_code == 405, answer.text
        assert answer.json()["reason"] == "MethodNotAllowed"
