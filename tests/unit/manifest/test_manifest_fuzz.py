"""A bounded fuzz of the manifest loaders: whatever the text, only the manifest error escapes.

Malformed YAML and JSON, deep nesting, huge numbers, odd Unicode and wrong types at every level
of a valid pod. ``load_pods_from_string`` and the file loader may raise ``ValidationError`` and
nothing else; ``load_pods_lenient`` never raises. The fuzzer's first findings are pinned.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubecore._contract.errors import ValidationError
from kubecore._manifest import (
    load_pods_from_dict,
    load_pods_from_file,
    load_pods_from_string,
    load_pods_lenient,
    pod_to_dict,
)
from kubecore.testing.strategies import pods

FUZZ = settings(max_examples=60, deadline=None)

FOUND_BY_THE_FIRST_FUZZ = [
    "\udc80",
    "a: " + "1" * 4301,
    "[" + "1" * 4301 + "]",
    "[" * 994 + "]" * 994,
    "kind: 0x" + "f" * 3600,
]


def assert_only_manifest_errors(text: str) -> None:
    try:
        load_pods_from_string(text)
    except ValidationError as error:
        assert error.problems, "a manifest error names at least one problem"
        assert all(str(problem) for problem in error.problems)
    _, errors = load_pods_lenient(text)  # never raises
    assert all(isinstance(error, ValidationError) for error in errors)


def assert_file_loaders_agree(text: str) -> None:
    """The same text as a file's bytes (lone surrogates written as the invalid UTF-8 they are)."""
    fd, name = tempfile.mkstemp(suffix=".yaml")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(text.encode("utf-8", errors="surrogatepass"))
        try:
            load_pods_from_file(name)
        except ValidationError as error:
            assert error.problems
        load_pods_lenient(Path(name))  # never raises
    finally:
        os.unlink(name)


# --- text of every kind ----------------------------------------------------------------------

YAML_TOKENS = st.sampled_from(
    [
        *"[]{}:,-?&*!|>'\"#%@` \n\t0123456789abcxe.+_",
        "---\n",
        "...\n",
        "!!int ",
        "!!bool ",
        "!!float ",
        "!!timestamp ",
        "!!binary ",
        "!!str ",
        "!!map ",
        "!!seq ",
        "!!set ",
        "&a ",
        "*a",
        "<<: ",
        "apiVersion: v1\n",
        "kind: Pod\n",
        "kind: List\n",
        "items:\n",
        "metadata:\n  name: p\n",
        "spec:\n  containers:\n  - name: c\n    image: i\n",
        "\udc80",
        "\x00",
        "\ufeff",
        "\u2028",
        "é",
        "\U0001d54f",
        "0x" + "f" * 700,
        "1" * 700,
    ]
)
yamlish_text = st.lists(YAML_TOKENS, max_size=40).map("".join)
odd_text = st.text(st.characters(), max_size=80)


@FUZZ
@given(st.one_of(yamlish_text, odd_text))
@example(FOUND_BY_THE_FIRST_FUZZ[0])
@example(FOUND_BY_THE_FIRST_FUZZ[1])
@example(FOUND_BY_THE_FIRST_FUZZ[2])
@example(FOUND_BY_THE_FIRST_FUZZ[3])
@example(FOUND_BY_THE_FIRST_FUZZ[4])
@example("!!int ")  # found by this test: explicit tags on empty values
@example("!!timestamp ")
@example("!!map 0")
def test_any_text_raises_only_the_manifest_error(text: str) -> None:
    assert_only_manifest_errors(text)


@settings(max_examples=15, deadline=None)
@given(st.one_of(yamlish_text, odd_text))
@example(FOUND_BY_THE_FIRST_FUZZ[0])
@example(FOUND_BY_THE_FIRST_FUZZ[3])
def test_any_file_raises_only_the_manifest_error(text: str) -> None:
    assert_file_loaders_agree(text)


OPENERS = st.sampled_from(["[", "{", '{"a": ', "{a: ", "- ", "a:\n", "[{", "!!seq ["])


@FUZZ
@given(OPENERS, st.integers(1, 3000), st.booleans())
@example("[", 994, True)
def test_deep_nesting_raises_only_the_manifest_error(opener: str, depth: int, close: bool) -> None:
    closer = {"[": "]", "{": "}", "[{": "}]", "!!seq [": "]"}.get(opener, "")
    indent = "\n" if opener == "a:\n" else ""
    text = opener * depth if not indent else "".join(" " * i + "a:\n" for i in range(depth))
    if close:
        text += closer * depth
    assert_only_manifest_errors(text)


NUMBER_PLACES = st.sampled_from(
    [
        "a: {}",
        "[{}]",
        "kind: {}",
        '{{"kind": {}}}',
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {}}}\n",
        "spec:\n  containers:\n  - name: c\n    image: i\n    ports: [{{containerPort: {}}}]\n",
        "spec: {{containers: [{{name: c, image: i, resources: {{limits: {{cpu: {}}}}}}}]}}",
        "metadata: {{labels: {{{}: x}}}}",
    ]
)
NUMBER_FORMS = st.sampled_from(["{}", "-{}", "0x{}", "0o{}", "0b{}", "{}.5", "1{}e5", "1:{}"])


@FUZZ
@given(NUMBER_PLACES, NUMBER_FORMS, st.integers(600, 6000), st.sampled_from("1790f_"))
@example("a: {}", "{}", 4301, "1")
@example("[{}]", "{}", 4301, "1")
@example("kind: {}", "0x{}", 3600, "f")
def test_huge_numbers_raise_only_the_manifest_error(
    place: str, form: str, digits: int, digit: str
) -> None:
    assert_only_manifest_errors(place.format(form.format(digit * digits)))


# --- wrong types at every level of a valid pod -----------------------------------------------


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in plain JSON data: mapping keys and list indices, outermost first."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def replaced(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(data)
    target = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return out


odd_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([-1, 0, 2**31, 2**63, -(2**63) - 1, 10**700, 10**5000]),
    st.floats(),
    odd_text,
    st.lists(st.integers(), max_size=3),
    st.dictionaries(odd_text, st.integers(), max_size=3),
    st.sampled_from([[[]], {"": None}, {"name": {}}, [{"name": 1}]]),
)


@FUZZ
@given(pods(), st.data())
def test_a_wrong_value_anywhere_in_a_pod_raises_only_the_manifest_error(
    pod: Any, data: st.DataObject
) -> None:
    document = pod_to_dict(pod)
    places = list(paths(document))
    path = data.draw(st.sampled_from(places), label="path")
    value = data.draw(odd_values, label="value")
    broken = replaced(document, path, value)
    try:
        load_pods_from_dict(broken)
    except ValidationError as error:
        assert error.problems
    if not (isinstance(value, int) and abs(value) > 10**4000):  # json.dumps cannot write it
        assert_only_manifest_errors(json.dumps(broken))
