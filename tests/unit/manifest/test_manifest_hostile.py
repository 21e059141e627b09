"""Hostile manifests: every malformed input is a manifest error with a position or a field path,
the work is linear in the input, and files are read only when regular and small enough."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubecore._config.file import FileSource
from kubecore._config.listing import list_manifest_files
from kubecore._contract.errors import ValidationError
from kubecore._manifest import (
    MAX_MANIFEST_BYTES,
    DocumentError,
    load_pods_from_dict,
    load_pods_from_file,
    load_pods_from_string,
    load_pods_lenient,
    read_manifest_bytes,
)


def problems_of(text: str) -> list[str]:
    """Every problem line of ``text``; the lenient loader must agree with the strict one."""
    with pytest.raises(ValidationError) as info:
        load_pods_from_string(text)
    pods, errors = load_pods_lenient(text)
    assert pods == []
    assert [str(p) for e in errors for p in e.problems] == [str(p) for p in info.value.problems]
    return [str(p) for p in info.value.problems]


def pod(**container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox", **container}]},
    }


# --- the fuzzer's five findings, minimised ------------------------------------------------------


def test_a_lone_surrogate_is_invalid_text_with_its_position() -> None:
    assert problems_of("\udc80") == [
        "invalid text at line 1, column 1: '\\udc80' (surrogates not allowed)"
    ]
    assert problems_of("kind: Pod\nmetadata: x\udc80") == [
        "invalid text at line 2, column 12: '\\udc80' (surrogates not allowed)"
    ]


def test_a_number_too_long_for_python_is_refused_with_its_field_path() -> None:
    assert "a: unknown field" in problems_of("a: " + "1" * 4301)
    assert problems_of("kind: 0x" + "f" * 3600)[1] == (
        "kind: expected a string, got a number of 3602 characters"
    )
    long_port = json.dumps(pod(ports=[{"containerPort": "N"}])).replace('"N"', "9" * 5000)
    assert problems_of(long_port) == [
        "spec.containers[0].ports[0].containerPort: expected an integer, got a number of 5000"
        " characters"
    ]


def test_a_json_list_of_a_long_number_is_not_a_pod() -> None:
    assert problems_of("[" + "1" * 4301 + "]") == [
        "expected a mapping (a Pod or a List), got a list"
    ]


def test_an_integer_too_long_to_print_in_parsed_data_has_its_path() -> None:
    with pytest.raises(ValidationError) as info:
        load_pods_from_dict(pod(ports=[{"containerPort": 10**5000}]))
    assert [str(p) for p in info.value.problems] == [
        "spec.containers[0].ports[0].containerPort: expected an integer, got a very large integer"
    ]


def test_deep_nesting_is_refused_with_a_position() -> None:
    # One bound for every parser (json's recursion gives up about 990 levels, libyaml at 1,000).
    assert problems_of("[" * 100 + "]" * 100) == [
        "expected a mapping (a Pod or a List), got a list"
    ]
    assert problems_of("[" * 994 + "]" * 994) == [
        "invalid JSON at line 1, column 101: nested more than 100 levels deep"
    ]
    assert problems_of("- " * 101 + "x") == ["invalid YAML: nested more than 100 levels deep"]
    assert problems_of("[" * 5000 + "]" * 5000) == [
        "invalid JSON at line 1, column 101: nested more than 100 levels deep"
    ]
    assert problems_of('{"a": "[[\\"[", "b": ' + "[" * 5000 + "]" * 5000 + "}") == [
        "invalid JSON at line 1, column 120: nested more than 100 levels deep"
    ]
    assert problems_of("- " * 5000 + "x")[0].startswith("invalid YAML at line 1, column ")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: !!int abc", "invalid literal for int()"),
        ("a: !!bool maybe", "'maybe'"),
        ("a: !!timestamp 2020-99-99", "month must be in 1..12"),
        ("a: !!float x", "could not convert string to float"),
    ],
)
def test_an_explicit_tag_on_a_bad_value_is_a_yaml_error_at_the_value(
    text: str, problem: str
) -> None:
    [message] = problems_of(text)
    tag = text.split()[1]
    assert message.startswith(f"invalid YAML at line 1, column 4: cannot read {tag} value: ")
    assert problem in message


def test_a_control_character_is_reported_at_its_line_and_column() -> None:
    assert problems_of("a: 1\nb: [\x07]") == [
        "invalid YAML at line 2, column 5: control characters are not allowed"
    ]


def test_aliases_that_expand_beyond_the_text_are_refused() -> None:
    headers = "[" + ", ".join(["{name: x, value: y}"] * 300) + "]"
    text = (
        f"x: &h {headers}\n"
        "y: &p {httpGet: {port: 80, httpHeaders: *h}}\n"
        "z: &c {name: a, image: b, livenessProbe: *p, readinessProbe: *p}\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        f"spec: {{containers: [{', '.join(['*c'] * 300)}]}}\n"
    )
    assert problems_of(text) == [
        "invalid YAML: aliases expand to more values than the text could hold"
    ]
    assert problems_of("a: &a [*a]") == problems_of(text)  # a loop is refused the same way


def test_aliases_within_the_text_size_still_load() -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - {name: a, image: b, env: &env [{name: A, value: x}]}\n"
        "  - {name: b, image: b, env: *env}\n"
    )
    [loaded] = load_pods_from_string(text)
    assert loaded.spec.containers[0].env == loaded.spec.containers[1].env


# --- linear work -----------------------------------------------------------------------------


def bad_containers(n: int) -> str:
    """A pod whose every container has two decoding and two validation problems."""
    containers = [
        {"name": f"Bad_{i}", "image": 1, "ports": [{"containerPort": 0}], "volumeDevices": []}
        for i in range(n)
    ]
    return json.dumps(pod() | {"spec": {"containers": containers}})


def python_calls_to_load(text: str) -> tuple[int, int]:
    """(Python function calls made, problems found) loading ``text``: work, not time."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        _, errors = load_pods_lenient(text)
    finally:
        sys.setprofile(None)
    return calls, sum(len(e.problems) for e in errors)


def test_validation_work_is_linear_in_the_number_of_bad_containers() -> None:
    small_calls, small_problems = python_calls_to_load(bad_containers(250))
    large_calls, large_problems = python_calls_to_load(bad_containers(2000))
    assert (small_problems, large_problems) == (250 * 4, 2000 * 4)
    # Eight times the input costs eight times the work (plus a little for sorting), where
    # matching every validation problem against every decoding problem cost 64 times.
    assert large_calls / small_calls < 9


def test_a_key_of_many_dots_costs_memory_linear_in_its_length() -> None:
    # Every "." or "[" of a path starts a prefix the covering check could look up; keeping all
    # of them would hold the key's length squared (200 MB here) for one problem.
    key = "a." * 10_000
    document = pod() | {"metadata": {"name": "p", "labels": {key: "x"}, key: 1}}
    tracemalloc.start()
    try:
        _, [error] = load_pods_lenient(json.dumps(document))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [p.path for p in error.problems] == [f"metadata.{key}", f"metadata.labels[{key}]"]
    assert peak < 20_000_000


# --- files -------------------------------------------------------------------------------------


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pods.yaml"
    os.mkfifo(path)
    return path


def test_a_fifo_is_not_read(fifo: Path) -> None:
    with pytest.raises(ValidationError, match="not a regular file"):
        load_pods_from_file(fifo)
    pods, [error] = load_pods_lenient(fifo)
    assert (pods, str(error.problems[0])) == ([], "not a regular file")
    assert list_manifest_files(fifo) == []


def test_a_directory_is_not_a_manifest_file(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="not a regular file"):
        load_pods_from_file(tmp_path)


def sparse_file(path: Path, size: int) -> Path:
    with path.open("wb") as file:
        file.truncate(size)
    return path


def test_a_file_over_the_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = sparse_file(tmp_path / "big.yaml", MAX_MANIFEST_BYTES + 1)
    with pytest.raises(DocumentError, match="larger than the 16777216 bytes"):
        read_manifest_bytes(big)
    pods, [error] = load_pods_lenient(big)
    assert pods == [] and error.source == str(big)
    assert "larger than" in str(error)


def test_a_file_at_the_cap_is_read(tmp_path: Path) -> None:
    at_cap = sparse_file(tmp_path / "at_cap.yaml", MAX_MANIFEST_BYTES)
    assert len(read_manifest_bytes(at_cap)) == MAX_MANIFEST_BYTES


def test_the_lenient_loader_reports_a_missing_file_instead_of_raising(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    pods, [error] = load_pods_lenient(missing)
    assert pods == [] and isinstance(error, DocumentError)
    assert str(error.problems[0]) == "cannot read: No such file or directory"
    with pytest.raises(FileNotFoundError):
        load_pods_from_file(missing)


def test_bad_utf8_is_reported_at_its_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"kind: Pod\nname: \xff")
    with pytest.raises(ValidationError) as info:
        load_pods_from_file(path)
    assert str(info.value.problems[0]) == ("not UTF-8 text at line 2, column 7: invalid start byte")


def test_the_file_source_reports_a_file_over_the_cap(tmp_path: Path) -> None:
    sparse_file(tmp_path / "big.yaml", MAX_MANIFEST_BYTES + 1)
    source = FileSource(tmp_path)
    update = source.poll(0.0)
    assert update is not None and update.pods == ()
    assert "larger than the 16777216 bytes" in str(source.problems[0])


def test_kubecore_validate_on_a_fifo_ends_with_an_error(fifo: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kubecore", "validate", str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert f"{fifo}: " in done.stdout
    assert "Traceback" not in done.stderr


def probe_with_headers(headers: object) -> dict[str, Any]:
    return pod(livenessProbe={"httpGet": {"port": 80, "httpHeaders": headers}})


def test_a_header_without_a_value_has_an_empty_value() -> None:
    [loaded] = load_pods_from_dict(probe_with_headers([{"name": "X"}]))
    probe = loaded.spec.containers[0].liveness_probe
    assert probe is not None and probe.http_get is not None
    assert probe.http_get.http_headers[0].value == ""


def test_a_header_of_the_wrong_type_is_a_problem_at_its_path() -> None:
    # Found by the fuzz: the placeholder for a bad header missed the model's ``value``.
    with pytest.raises(ValidationError) as info:
        load_pods_from_dict(probe_with_headers([None, 1]))
    assert [p.path for p in info.value.problems] == [
        "spec.containers[0].livenessProbe.httpGet.httpHeaders[0]",
        "spec.containers[0].livenessProbe.httpGet.httpHeaders[1]",
    ]


# --- identity fields of any JSON type -----------------------------------------------------------

_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=5)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)
"""Any value a YAML or JSON document may hold where a string or a mapping belongs."""

IDENTITY_PATHS = [
    ("apiVersion",),
    ("kind",),
    ("metadata",),
    ("metadata", "name"),
    ("metadata", "namespace"),
    ("metadata", "uid"),
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("spec",),
    ("items",),
    ("data",),
    ("stringData",),
    ("type",),
]
KINDS = ["Pod", "ConfigMap", "Secret", "List", "PodList"]
GOOD_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "good"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
}


def _with(document: dict[str, Any], path: tuple[str, ...], value: object) -> dict[str, Any]:
    changed = json.loads(json.dumps(document))
    target = changed
    for key in path[:-1]:
        if not isinstance(target.get(key), dict):
            target[key] = {}
        target = target[key]
    target[path[-1]] = value
    return changed


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    changes=st.lists(
        st.tuples(st.sampled_from(IDENTITY_PATHS), JSON_VALUES), min_size=1, max_size=3
    ),
    as_json=st.booleans(),
)
def test_any_value_at_an_identity_field_is_a_field_error_and_the_good_pod_still_loads(
    kind: str, changes: list[tuple[tuple[str, ...], object]], as_json: bool
) -> None:
    bad: dict[str, Any] = {**GOOD_POD, "kind": kind, "metadata": {"name": "bad"}}
    for path, value in changes:
        bad = _with(bad, path, value)
    documents = [bad, GOOD_POD]
    if as_json:
        text = "\n".join(json.dumps(document) for document in documents)
    else:
        text = "---\n".join(json.dumps(document) + "\n" for document in documents)
    pods, errors = load_pods_lenient(text)
    assert "good" in [pod.metadata.name for pod in pods]
    for error in errors:
        assert isinstance(error, DocumentError)
        assert error.problems and all(problem.message for problem in error.problems)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"kind": []}, "documents[0].kind: expected a string, got a list"),
        ({"kind": {"a": 1}}, "documents[0].kind: expected a string, got a mapping"),
        ({"kind": 7}, "documents[0].kind: expected a string, got 7"),
    ],
)
def test_a_kind_that_is_not_a_string_names_the_field(
    document: dict[str, Any], problem: str
) -> None:
    text = (
        json.dumps({**GOOD_POD, **document})
        + "\n"
        + json.dumps(GOOD_POD | {"metadata": {"name": "g2"}})
    )
    pods, errors = load_pods_lenient(text)
    assert [pod.metadata.name for pod in pods] == ["g2"]
    assert problem in [str(p) for e in errors for p in e.problems]
