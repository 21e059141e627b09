"""The node's OpenAPI v3 document is complete enough for schema-driven tools: schemathesis
generates requests for every operation it declares (path and query parameters, bodies) and
sends them to a live node (fake runtime, TLS on 127.0.0.1, the bearer token); no answer may be a
server error (500) or differ from what the document says of it (status code, content type,
schema). How strictly the node reads requests is not what this checks. Bounded: a fixed seed
(derandomized), a few examples per operation, a time limit per operation. Watches are left to
``test_object_watch`` (a watch streams events, not one document): ``watch`` is taken off each
generated request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis import Case
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from kubecore._api.openapi import openapi_v3
from tests.api.client_support import TlsNode, tls_node

CONFIG = SchemathesisConfig.from_dict(
    # Examples generated from the schemas only: the coverage phase's every edge of every
    # parameter takes minutes (and its TRACE requests are the HTTP server's to refuse, 501).
    {"phases": {"coverage": {"enabled": False}}}
)
SCHEMA = schemathesis.openapi.from_dict(openapi_v3(), config=CONFIG)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
"""What the answers must be: no server error, and as the document says. How strictly the node
reads a request (it refuses unknown fields, takes a negative grace period as none) is left to
the tests of each rule."""
EXAMPLES_PER_OPERATION = 6
SECONDS_PER_OPERATION = 120


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsNode]:
    tmp: Path = tmp_path_factory.mktemp("schemathesis")
    with tls_node(tmp) as node:
        yield node


def test_the_node_serves_the_document_schemathesis_reads(served: TlsNode) -> None:
    assert served.get("/openapi/v3/api/v1") == json.loads(json.dumps(openapi_v3()))
    operations = [
        (path, method)
        for path, item in openapi_v3()["paths"].items()
        for method in item
        if method != "parameters"
    ]
    assert len(operations) == 29
    document = openapi_v3()
    listed = document["paths"]["/api/v1/namespaces/{namespace}/pods"]["get"]["responses"]["200"]
    schema = listed["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/io.k8s.api.core.v1.PodList"}
    meta = document["components"]["schemas"]["io.k8s.api.core.v1.PodList"]["properties"]
    assert meta["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"}
    ]


@pytest.mark.timeout(SECONDS_PER_OPERATION)
@SCHEMA.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_as_the_document_says(case: Case, served: TlsNode) -> None:
    if case.query:
        case.query.pop("watch", None)
    case.call_and_validate(
        base_url=served.url,
        headers={"Authorization": f"Bearer {served.token}"},
        verify=str(served.ca),
        timeout=10,
        checks=CHECKS,
    )
