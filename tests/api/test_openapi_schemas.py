"""The OpenAPI documents: generated from the decoding tables, every ``$ref`` resolves, every
field the node writes is described, names as upstream's, built once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kubecore._api import openapi
from kubecore._api.discovery import API_RESOURCES
from kubecore._api.schemas import REF, component_schemas
from kubecore._manifest import (
    load_manifest_lenient,
    object_to_dict,
    pod_status_to_dict,
    pod_to_dict,
)
from kubecore._model import v1
from tests.paths import CORPUS


def _document() -> dict[str, Any]:
    body, kind = openapi.openapi_document(("v3", "api", "v1"), "application/json")
    assert kind == "application/json"
    return json.loads(body)


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref":
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _resolve(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    while True:
        if "$ref" in schema:
            schema = schemas[schema["$ref"].removeprefix(REF)]
        elif len(schema.get("allOf", ())) == 1:
            schema = schema["allOf"][0]
        else:
            return schema


def _undescribed(
    value: Any, schema: dict[str, Any], schemas: dict[str, Any], path: str
) -> list[str]:
    """The paths in ``value`` (JSON) that ``schema`` has no property for."""
    schema = _resolve(schema, schemas)
    if isinstance(value, dict) and "properties" in schema:
        found = []
        for key, item in value.items():
            if key not in schema["properties"]:
                found.append(f"{path}.{key}")
            else:
                found += _undescribed(item, schema["properties"][key], schemas, f"{path}.{key}")
        return found
    if isinstance(value, list) and "items" in schema:
        return [
            problem
            for index, item in enumerate(value)
            for problem in _undescribed(item, schema["items"], schemas, f"{path}[{index}]")
        ]
    return []


def test_every_ref_resolves_and_kinds_carry_their_group_version_kind() -> None:
    document = _document()
    schemas = document["components"]["schemas"]
    for target in set(_refs(document)):
        assert target.startswith(REF) and target.removeprefix(REF) in schemas, target
    for kind in ("Pod", "ConfigMap", "Secret"):
        gvk = schemas[f"io.k8s.api.core.v1.{kind}"]["x-kubernetes-group-version-kind"]
        assert gvk == [{"group": "", "kind": kind, "version": "v1"}]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    assert "io.k8s.apimachinery.pkg.api.resource.Quantity" in schemas


def test_every_kind_discovery_lists_has_a_schema_with_its_group_version_kind() -> None:
    schemas = component_schemas()
    gvks = {
        gvk["kind"]
        for schema in schemas.values()
        for gvk in schema.get("x-kubernetes-group-version-kind", ())
    }
    listed = {r["kind"] for r in API_RESOURCES["resources"] if "/" not in r["name"]}
    assert listed <= gvks
    node = schemas["io.k8s.api.core.v1.Node"]
    assert node["x-kubernetes-preserve-unknown-fields"] is True
    assert set(node["properties"]) == {"apiVersion", "kind", "metadata"}


def test_fields_have_upstream_names_types_and_required() -> None:
    schemas = component_schemas()
    pod_spec = schemas["io.k8s.api.core.v1.PodSpec"]
    assert pod_spec["required"] == ["containers"]
    containers = pod_spec["properties"]["containers"]
    assert containers["type"] == "array"
    assert containers["items"] == {"allOf": [{"$ref": REF + "io.k8s.api.core.v1.Container"}]}
    container = schemas["io.k8s.api.core.v1.Container"]["properties"]
    assert container["livenessProbe"]["allOf"] == [{"$ref": REF + "io.k8s.api.core.v1.Probe"}]
    assert container["livenessProbe"]["description"]
    limits = schemas["io.k8s.api.core.v1.ResourceRequirements"]["properties"]["limits"]
    assert limits["additionalProperties"] == {
        "$ref": REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"
    }
    status = schemas["io.k8s.api.core.v1.PodStatus"]["properties"]
    assert {"hostIP", "podIPs", "containerStatuses"} <= set(status)
    assert schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["setHostnameAsFQDN"] == {
        "type": "boolean"
    }
    meta = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]
    assert {"resourceVersion", "managedFields", "ownerReferences", "deletionTimestamp"} <= set(meta)
    assert meta["creationTimestamp"]["allOf"] == [
        {"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.Time"}
    ]
    probe = schemas["io.k8s.api.core.v1.Probe"]
    assert "liveness" in probe["description"].lower()  # from the model's docstring


def _corpus_objects() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(CORPUS.glob("*.yaml")):
        pods, objects, _ = load_manifest_lenient(path)
        for pod in pods:
            yield "Pod", pod_to_dict(pod)
        for obj in objects:
            yield obj.kind, object_to_dict(obj)


def test_every_field_the_node_writes_is_in_the_schema() -> None:
    schemas = component_schemas()
    seen = 0
    for kind, body in _corpus_objects():
        seen += 1
        schema = schemas[f"io.k8s.api.core.v1.{kind}"]
        assert _undescribed(body, schema, schemas, kind) == []
    assert seen > 20
    status = v1.PodStatus(
        phase="Running",
        host_ips=(v1.HostIP("10.0.0.1"),),
        conditions=(v1.PodCondition("Ready", "True", last_transition_time="2026-01-01T00:00:00Z"),),
        container_statuses=(
            v1.ContainerStatus(
                "main",
                "busybox",
                state=v1.ContainerState(running=v1.ContainerStateRunning("2026-01-01T00:00:00Z")),
                last_state=v1.ContainerState(terminated=v1.ContainerStateTerminated(1)),
            ),
        ),
    )
    pod_status = schemas["io.k8s.api.core.v1.PodStatus"]
    assert _undescribed(pod_status_to_dict(status), pod_status, schemas, "status") == []


def test_the_v2_document_holds_the_same_schemas_in_swagger_form() -> None:
    body, _ = openapi.openapi_document(("v2",), "application/json")
    document = json.loads(body)
    definitions = document["definitions"]
    assert set(definitions) == set(component_schemas())
    for target in set(_refs(document)):
        assert target.removeprefix("#/definitions/") in definitions, target
    containers = definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}
    quantity = definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    assert quantity["type"] == "string" and "oneOf" not in quantity


def test_the_index_names_the_document_by_its_hash_and_it_is_built_once() -> None:
    index, _ = openapi.openapi_document(("v3",), "application/json")
    url = json.loads(index)["paths"]["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=") and len(url.split("=")[1]) == 32
    first, _ = openapi.openapi_document(("v3", "api", "v1"), "")
    again, _ = openapi.openapi_document(("v3", "api", "v1"), "")
    assert first is again


@pytest.mark.parametrize("kind", ["pods", "configmaps", "secrets"])
def test_writes_declare_field_validation_and_no_strategic_merge_patch_body(kind: str) -> None:
    path = _document()["paths"][f"/api/v1/namespaces/{{namespace}}/{kind}/{{name}}"]
    for method in ("put", "patch"):
        names = [p["name"] for p in path[method]["parameters"]]
        assert "fieldValidation" in names
    # without a strategic merge patch body kubectl computes apply's patch from its built-in types
    patches = path["patch"]["requestBody"]["content"]
    assert "application/merge-patch+json" in patches
    assert "application/strategic-merge-patch+json" not in patches
