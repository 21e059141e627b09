"""RFC 6902 JSON patches and RFC 6901 pointers (``kubecore._api.json_patch``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._api.errors import ApiError
from kubecore._api.json_patch import PatchFailed, json_patch, parse_pointer

DOC: dict[str, Any] = {"foo": ["bar", "baz"], "": 0, "a/b": 1, "m~n": 8, "k": {"x": True}}


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


@pytest.mark.parametrize(
    ("pointer", "tokens"),
    [("", []), ("/foo", ["foo"]), ("/foo/0", ["foo", "0"]), ("/", [""]),
     ("/a~1b", ["a/b"]), ("/m~0n", ["m~n"]), ("/~01", ["~1"])],
)  # fmt: skip
def test_pointers_as_rfc_6901_reads_them(pointer: str, tokens: list[str]) -> None:
    assert parse_pointer(pointer) == tokens


@given(st.lists(st.text(max_size=8), max_size=5))
@example(["~1", "/", "~", "~0/"])
def test_an_escaped_pointer_reads_back_its_tokens(tokens: list[str]) -> None:
    assert parse_pointer("".join("/" + escape(t) for t in tokens)) == tokens


@pytest.mark.parametrize("pointer", ["foo", "/a~2", "/~", 3])
def test_a_bad_pointer_is_refused(pointer: object) -> None:
    with pytest.raises(PatchFailed):
        parse_pointer(pointer)


def test_every_operation() -> None:
    patch = [
        {"op": "add", "path": "/foo/1", "value": "qux"},
        {"op": "add", "path": "/foo/-", "value": "end"},
        {"op": "remove", "path": "/a~1b"},
        {"op": "replace", "path": "/m~0n", "value": 9},
        {"op": "copy", "from": "/k", "path": "/copied"},
        {"op": "move", "from": "/foo/0", "path": "/first"},
        {"op": "test", "path": "/k/x", "value": True},
        {"op": "add", "path": "/k/x", "value": False},
    ]
    assert json_patch(DOC, patch) == {
        "foo": ["qux", "baz", "end"],
        "": 0,
        "m~n": 9,
        "k": {"x": False},
        "copied": {"x": True},
        "first": "bar",
    }
    assert DOC["foo"] == ["bar", "baz"] and DOC["k"] == {"x": True}  # left as it was


@pytest.mark.parametrize(
    ("op", "why"),
    [
        ({"op": "test", "path": "/k/x", "value": 1}, "test failed"),
        ({"op": "test", "path": "/", "value": 1}, "test failed"),
        ({"op": "replace", "path": "/nope", "value": 1}, "/nope is missing"),
        ({"op": "remove", "path": "/foo/2"}, "out of the list's range"),
        ({"op": "add", "path": "/foo/01", "value": 1}, "not an index"),
        ({"op": "add", "path": "/nope/x", "value": 1}, "/nope is missing"),
        ({"op": "move", "from": "/k", "path": "/k/y"}, "into itself"),
        ({"op": "add", "path": "/k"}, "no value"),
    ],
)
def test_an_operation_that_does_not_apply_is_a_422_naming_it(op: dict[str, Any], why: str) -> None:
    patch = [{"op": "test", "path": "/foo/0", "value": "bar"}, op]
    with pytest.raises(ApiError) as raised:
        json_patch(DOC, patch)
    assert raised.value.code == 422
    message = raised.value.message
    assert f"operation 1 ({op['op']} {op['path']!r})" in message and why in message, message


@pytest.mark.parametrize("patch", [{}, [1], [{"op": "frob", "path": "/"}], [{"path": "/"}]])
def test_a_patch_that_is_not_a_list_of_operations_is_a_400(patch: object) -> None:
    with pytest.raises(ApiError) as raised:
        json_patch(DOC, patch)
    assert raised.value.code == 400
