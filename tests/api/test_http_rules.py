"""The rules the agent's HTTP endpoints share (``kubecore._apimachinery.rules``): one
bearer-token check, one v1 ``Status`` body with one mapping from kubecore's errors, one reading
of query-string parameters.
Each is checked on every endpoint that applies it: the kubelet API and the Kubernetes API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
import requests

from kubecore._apimachinery.rules import (
    Credentials,
    check_bearer,
    error_for,
    query_flag,
    query_int,
    reason_for,
    status_object,
)
from kubecore._contract.errors import (
    BadParameter,
    ContainerRuntimeError,
    FieldError,
    KubecoreError,
    LogRequestError,
    NotFound,
    RuntimeTimeout,
    ValidationError,
)
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._http.serving import status_response
from tests.api.kubectl_support import AUTH, TOKEN, Node, running_node

CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as started:
        yield started


@pytest.fixture
def exec_node(node: Node) -> Node:
    """The node with ``/run`` on, its exec token the API's token, on the server of the API."""
    config = ServerConfig(port=0, request_timeout=10.0, enable_exec=True, exec_token=TOKEN)
    node.servers.append(KubeletServer(node.kubelet, config, api=node.api).start())
    return node


def status_of(response: requests.Response) -> dict[str, Any]:
    body = response.json()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1", body
    assert body["status"] == "Failure" and body["code"] == response.status_code
    assert "Traceback" not in response.text
    return dict(body)


# --- bearer tokens --------------------------------------------------------------------------

CREDENTIALS = {
    "missing": {},
    "basic": {"Authorization": "Basic dXNlcjpwYXNz"},
    "empty": {"Authorization": "Bearer "},
    "wrong": {"Authorization": "Bearer not-the-token"},
    "longer": {"Authorization": f"Bearer {TOKEN}x"},
}


def guarded_requests(url: str, headers: dict[str, str]) -> dict[str, requests.Response]:
    """One request to each endpoint that needs the token, with ``headers``."""
    namespace = url + "/api/v1/namespaces/default"
    return {
        "exec": requests.post(
            url + "/run/default/talker/main?cmd=true", headers=headers, timeout=10
        ),
        "write": requests.post(
            namespace + "/configmaps", json=CONFIGMAP, headers=headers, timeout=10
        ),
        "secrets": requests.get(namespace + "/secrets", headers=headers, timeout=10),
        # With a token configured, reads need it too, the kubelet's own endpoints as well.
        **{
            path: requests.get(url + path, headers=headers, timeout=10)
            for path in (
                "/api/v1/pods",
                "/pods",
                "/containerLogs/default/talker/main",
                "/stats/summary",
                "/metrics",
            )
        },
    }


@pytest.mark.parametrize("case", sorted(CREDENTIALS))
def test_every_endpoint_refuses_a_missing_or_wrong_token_alike(exec_node: Node, case: str) -> None:
    # A wrong token (and another scheme) is 401 everywhere, as the API server and the kubelet
    # answer one; the API answered 403 to a wrong token, and Secrets 403 to "Basic ...".
    url = exec_node.servers[-1].url
    for endpoint, response in guarded_requests(url, CREDENTIALS[case]).items():
        assert response.status_code == 401, (endpoint, response.text)
        assert status_of(response)["reason"] == "Unauthorized", endpoint
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="kubecore"', endpoint
    assert exec_node.kubelet.views.objects.get_config_map("default", "c") is None


def test_every_endpoint_takes_the_token(exec_node: Node) -> None:
    url = exec_node.servers[-1].url
    answered = guarded_requests(url, {"Authorization": f"Bearer  {TOKEN} "})
    assert {name: r.status_code for name, r in answered.items()} == {
        "exec": 200,
        "write": 201,
        "secrets": 200,
        "/api/v1/pods": 200,
        "/pods": 200,
        "/containerLogs/default/talker/main": 200,
        "/stats/summary": 200,
        "/metrics": 200,
    }


def test_the_token_check() -> None:
    assert check_bearer(f"Bearer {TOKEN}", TOKEN) is Credentials.VALID
    assert check_bearer(f"bearer {TOKEN}", TOKEN) is Credentials.VALID
    assert check_bearer(f"Bearer {TOKEN[:-1]}", TOKEN) is Credentials.INVALID
    assert check_bearer("Bearer anything", None) is Credentials.INVALID
    assert check_bearer("Bearer anything", "") is Credentials.INVALID
    for header in ("", "Bearer", "Bearer   ", f"Basic {TOKEN}", TOKEN):
        assert check_bearer(header, TOKEN) is Credentials.MISSING, header


# --- v1 Status and the errors behind it -----------------------------------------------------


def test_reasons_are_apimachinery_s() -> None:
    assert reason_for(HTTPStatus.INTERNAL_SERVER_ERROR) == "InternalError"
    assert reason_for(HTTPStatus.BAD_GATEWAY) == "InternalError"
    assert reason_for(HTTPStatus.GATEWAY_TIMEOUT) == "Timeout"
    assert reason_for(HTTPStatus.UNPROCESSABLE_ENTITY) == "Invalid"
    assert reason_for(HTTPStatus.REQUEST_ENTITY_TOO_LARGE) == "RequestEntityTooLarge"
    assert reason_for(HTTPStatus.LENGTH_REQUIRED) == "LengthRequired"
    assert status_object(HTTPStatus.NOT_FOUND, "gone") == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "gone",
        "reason": "NotFound",
        "code": 404,
    }


def test_the_selector_s_refusals_are_the_same_status() -> None:
    answer = status_response(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "too big")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ")
    assert json.loads(body) == status_object(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "too big")


@pytest.mark.parametrize(
    ("error", "code", "reason"),
    [
        (BadParameter("follow: must be true or false"), 400, "BadRequest"),
        (LogRequestError("previous terminated container not found"), 400, "BadRequest"),
        (NotFound("no such container"), 404, "NotFound"),
        (RuntimeTimeout("exec timed out"), 504, "Timeout"),
        (ContainerRuntimeError("engine said no"), 502, "InternalError"),
    ],
)
def test_one_mapping_from_errors(error: KubecoreError, code: int, reason: str) -> None:
    answer = error_for(error)
    assert (answer.code, answer.reason, answer.message) == (code, reason, str(error))


def test_a_manifest_s_problems_are_invalid() -> None:
    error = ValidationError([FieldError("spec.containers[0].image", "required")])
    status = error_for(error, kind="Pod", name="web").status()
    assert status["code"] == 422 and status["reason"] == "Invalid"
    assert status["message"] == 'Pod "web" is invalid: spec.containers[0].image: required'
    assert status["details"] == {
        "name": "web",
        "kind": "Pod",
        "causes": [{"field": "spec.containers[0].image", "message": "required"}],
    }


@pytest.mark.parametrize(
    ("raised", "code", "reason"),
    [
        (ContainerRuntimeError("the engine is down"), 502, "InternalError"),
        (RuntimeTimeout("the engine is slow"), 504, "Timeout"),
    ],
    ids=["failed", "timed-out"],
)
def test_both_log_endpoints_answer_a_runtime_failure_alike(
    node: Node, monkeypatch: pytest.MonkeyPatch, raised: Exception, code: int, reason: str
) -> None:
    # The kubelet's endpoint answered "BadGateway" where the API said "InternalError", and
    # both answered a timeout as 502.
    def broken(*args: object, **kwargs: object) -> Iterator[bytes]:
        raise raised

    monkeypatch.setattr(node.kubelet.streams, "logs", broken)
    url = node.http.url
    answers = [
        requests.get(url + "/containerLogs/default/talker/main", timeout=10, headers=AUTH),
        requests.get(url + "/api/v1/namespaces/default/pods/talker/log", timeout=10, headers=AUTH),
    ]
    for answer in answers:
        assert answer.status_code == code, answer.text
        assert status_of(answer) == status_object(HTTPStatus(code), str(raised), reason)


# --- query-string parameters ----------------------------------------------------------------


def test_flags_read_as_the_api_server_reads_them() -> None:
    for value in ("", "1", "true", "True", "TRUE"):
        assert query_flag({"follow": [value]}, "follow") is True, value
    for value in ("0", "false", "False", "FALSE"):
        assert query_flag({"follow": [value]}, "follow") is False, value
    assert query_flag({}, "follow") is False
    for value in ("yes", "on", "no", "off", " false", "true ", "2"):
        with pytest.raises(BadParameter, match=f"follow: must be true or false, got {value!r}"):
            query_flag({"follow": [value]}, "follow")


def test_integers_read_as_go_reads_them() -> None:
    assert query_int({"tailLines": ["+12"]}, "tailLines") == 12
    assert query_int({"tailLines": ["007"]}, "tailLines") == 7
    assert query_int({"tailLines": [""]}, "tailLines") is None
    assert query_int({}, "tailLines") is None
    for value in ("1_0", " 5", "5 ", "1.5", "٣", "9" * 20, "9" * 5000):
        with pytest.raises(BadParameter, match="tailLines: must be an integer"):
            query_int({"tailLines": [value]}, "tailLines")
    with pytest.raises(BadParameter, match="tailLines: must be >= 0, got -1"):
        query_int({"tailLines": ["-1"]}, "tailLines")


@pytest.mark.parametrize("value", ["%20false", "yes", "on"])
def test_every_endpoint_refuses_the_same_flag_values(node: Node, value: str) -> None:
    # " false" was read as false by the log endpoints and refused by watch; "yes" and "on"
    # were taken by a third parser.
    url = node.http.url
    asked = {
        "follow": url + f"/containerLogs/default/talker/main?follow={value}",
        "timestamps": url + f"/api/v1/namespaces/default/pods/talker/log?timestamps={value}",
        "watch": url + f"/api/v1/pods?watch={value}",
    }
    for name, target in asked.items():
        answer = requests.get(target, timeout=10, headers=AUTH)
        assert answer.status_code == 400, (name, answer.text)
        status = status_of(answer)
        assert status["reason"] == "BadRequest"
        assert status["message"].startswith(f"{name}: must be true or false"), status


def test_every_endpoint_reads_the_same_flag_values(node: Node) -> None:
    url = node.http.url
    for value in ("", "1", "True"):
        for target in (
            url + f"/containerLogs/default/talker/main?timestamps={value}",
            url + f"/api/v1/namespaces/default/pods/talker/log?timestamps={value}",
        ):
            answer = requests.get(target, timeout=10, headers=AUTH)
            assert answer.status_code == 200 and answer.text.startswith("20"), answer.text
    listed = requests.get(url + "/api/v1/pods?watch=0", timeout=10, headers=AUTH)
    assert listed.status_code == 200 and listed.json()["kind"] == "PodList"


def test_an_integer_go_would_refuse_is_refused(node: Node) -> None:
    for target in (
        "/containerLogs/default/talker/main?tailLines=1_0",
        "/api/v1/namespaces/default/pods/talker/log?tailLines=1_0",
    ):
        answer = requests.get(node.http.url + target, timeout=10, headers=AUTH)
        assert answer.status_code == 400 and "tailLines: must be an integer" in answer.text
