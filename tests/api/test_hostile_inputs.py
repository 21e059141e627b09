"""What an anonymous or hostile request sends cannot freeze the agent or end in a 500 (issue 27):
a JSON patch that copies a value into itself, a huge ``resourceVersion``, a JSON body with a
repeated key, a query string or a selector past its bound, a selector sent without the token
(401 before the query is read)."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from kubecore._api import json_patch as json_patch_module
from kubecore._api.errors import ApiError
from kubecore._api.json_patch import MAX_PATCH_OPERATIONS, MAX_PATCHED_WEIGHT, json_patch
from kubecore._api.patch import strategic_merge_patch
from kubecore._api.request import parse_body
from kubecore._http.handler import MAX_QUERY_BYTES
from kubecore._manifest.documents import MAX_NESTING_DEPTH
from tests.api.kubectl_support import TOKEN, Node, running_node

AUTH = {"Authorization": f"Bearer {TOKEN}"}
PODS = "/api/v1/namespaces/default/pods"
JSON_PATCH = {"Content-Type": "application/json-patch+json"}


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as running:
        yield running


def doubling_patch(count: int) -> list[dict[str, Any]]:
    """``count`` copies of the document's ``/a`` into itself: each doubles it."""
    return [{"op": "copy", "from": "/a", "path": f"/a/{i}"} for i in range(count)]


# --- JSON patch ----------------------------------------------------------------------------


def test_copies_that_double_the_document_stop_at_the_weight_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    copied: list[int] = []
    deepcopy = copy.deepcopy

    def counted(value: Any) -> Any:
        copied.append(1)
        return deepcopy(value)

    monkeypatch.setattr(json_patch_module.copy, "deepcopy", counted)
    with pytest.raises(ApiError) as raised:
        json_patch({"a": {"x": "y" * 1000}}, doubling_patch(26))
    assert raised.value.code == 422
    assert f"would weigh more than {MAX_PATCHED_WEIGHT}" in raised.value.message
    # 2**13 KB passes 8 Mi: refused at about the 13th copy, not built to 2**26.
    assert len(copied) < 20


def test_copies_into_itself_stop_at_the_depth_bound() -> None:
    # Each copy of /a into /a/a nests the document one level deeper (a RecursionError and a
    # 500 at 3,000 before the bound).
    patch = [{"op": "copy", "from": "/a", "path": "/a/a"} for _ in range(3000)]
    with pytest.raises(ApiError) as raised:
        json_patch({"a": {}}, patch)
    assert raised.value.code == 422
    assert f"nest more than {MAX_NESTING_DEPTH} levels" in raised.value.message


def test_a_patch_with_too_many_operations_is_a_400() -> None:
    patch = [{"op": "test", "path": "/a", "value": 1}] * (MAX_PATCH_OPERATIONS + 1)
    with pytest.raises(ApiError) as raised:
        json_patch({"a": 1}, patch)
    assert raised.value.code == 400
    assert f"at most {MAX_PATCH_OPERATIONS} operations" in raised.value.message


def test_a_patch_within_the_bounds_still_copies() -> None:
    assert json_patch({"a": {"x": 1}}, doubling_patch(3))["a"]["2"]["1"]["0"] == {"x": 1}


def test_a_doubling_patch_over_http_is_a_422_and_the_pod_kept(node: Node) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bomb", "annotations": {"a": "x" * 1000}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    url = node.http.url + PODS
    assert requests.post(url, json=pod, headers=AUTH, timeout=10).ok
    patch = [
        {"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/{i}"}
        for i in range(26)
    ]
    done: list[requests.Response] = []
    thread = threading.Thread(
        target=lambda: done.append(
            requests.patch(
                url + "/bomb", data=json.dumps(patch), headers={**AUTH, **JSON_PATCH}, timeout=60
            )
        ),
        daemon=True,
    )
    thread.start()
    thread.join(60)  # it took 87 s and 2.3 GB before the bound
    assert done and done[0].status_code == 422, done and done[0].text
    assert "weigh more" in done[0].json()["message"]
    kept = requests.get(url + "/bomb", headers=AUTH, timeout=10).json()
    assert kept["metadata"]["annotations"]["a"] == "x" * 1000
    assert "0" not in kept["metadata"]["annotations"]


def test_a_strategic_merge_key_that_is_not_a_scalar_is_a_400() -> None:
    with pytest.raises(ApiError) as raised:
        strategic_merge_patch({"containers": []}, {"containers": [{"name": ["a"]}]})
    assert raised.value.code == 400


def test_a_long_set_element_order_is_linear() -> None:
    names = [{"name": str(i)} for i in range(20_000)]
    done = threading.Event()

    def merge() -> None:
        patch = {"$setElementOrder/containers": names, "containers": names[:1]}
        strategic_merge_patch({"containers": names}, patch)
        done.set()

    threading.Thread(target=merge, daemon=True).start()
    assert done.wait(20.0)  # quadratic, 4e8 comparisons, before


# --- JSON bodies ---------------------------------------------------------------------------


def test_a_json_body_with_a_repeated_key_is_a_400_naming_key_and_path() -> None:
    body = b'{"metadata": {"name": "a"}, "spec": {"containers": [{"name": "x", "name": "y"}]}}'
    with pytest.raises(ApiError) as raised:
        parse_body(body, "application/json")
    assert raised.value.code == 400
    assert "duplicate key 'name' in spec.containers[0]" in raised.value.message


def test_a_json_body_with_a_repeated_key_is_refused_over_http(node: Node) -> None:
    body = (
        b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dup", "name": "other"},'
        b' "spec": {"containers": [{"name": "c", "image": "busybox"}]}}'
    )
    headers = {**AUTH, "Content-Type": "application/json"}
    response = requests.post(node.http.url + PODS, data=body, headers=headers, timeout=10)
    assert response.status_code == 400, response.text
    assert "duplicate key 'name' in metadata" in response.json()["message"]


# --- query parameters ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "watch=true&resourceVersion=" + "9" * 5000,
        "watch=true&resourceVersion=99999999999999999999",
        "watch=true&resourceVersion=abc",
        "limit=" + "9" * 5000,
    ],
    ids=["5000-digits", "past-int64", "not-a-number", "limit"],
)
def test_integer_parameters_past_their_bound_are_a_400(node: Node, query: str) -> None:
    for path in (PODS, "/api/v1/namespaces/default/events"):
        response = requests.get(f"{node.http.url}{path}?{query}", headers=AUTH, timeout=10)
        assert response.status_code == 400, (path, response.text)


def test_a_query_string_past_its_bound_is_a_400(node: Node) -> None:
    url = f"{node.http.url}{PODS}?labelSelector={'a' * (MAX_QUERY_BYTES + 1)}"
    response = requests.get(url, headers=AUTH, timeout=10)
    assert response.status_code == 400
    assert "query string" in response.json()["message"]


def test_a_long_selector_is_a_400_and_a_hostile_one_is_answered_at_once(node: Node) -> None:
    url = node.http.url + PODS
    long = requests.get(url, params={"labelSelector": "a" * 9000}, headers=AUTH, timeout=10)
    assert long.status_code == 400 and "longer than" in long.json()["message"]
    # 8,000 spaces: the regex backtracked over them, holding the interpreter for seconds.
    hostile = "a" + " " * 8000 + "!"
    answers: list[int] = []
    threads = [
        threading.Thread(
            target=lambda: answers.append(
                requests.get(
                    url, params={"labelSelector": hostile}, headers=AUTH, timeout=30
                ).status_code
            ),
            daemon=True,
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert answers == [400] * 4
    assert requests.get(url, headers=AUTH, params={"labelSelector": "app=talker"}, timeout=10).ok


def test_a_selector_without_the_token_is_a_401_before_it_is_read(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubecore._http import handler

    parsed: list[str] = []
    real = handler.parse_query
    monkeypatch.setattr(handler, "parse_query", lambda text: parsed.append(text) or real(text))
    selector = "a" + " " * 40_000 + "!"
    response = requests.get(node.http.url + PODS, params={"labelSelector": selector}, timeout=10)
    assert response.status_code == 401
    assert parsed == []
