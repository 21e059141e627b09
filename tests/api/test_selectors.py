"""Label and field selectors: the one-pass parser reads every valid selector as the regular
expression it replaced did (an oracle copied here), refuses what apimachinery refuses, and takes
bounded work on hostile input (the regex backtracked quadratically: 30,000 spaces took seconds
a request, holding the interpreter)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._api import selectors
from kubecore._api.errors import ApiError
from kubecore._api.selectors import (
    MAX_SELECTOR_LENGTH,
    POD_FIELDS,
    field_selector,
    label_selector,
    label_tokens,
)

# --- the regex-based parser this one replaced (the oracle for valid input) --------------------

_OLD_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")


def _old_split(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return parts


def _old_requirement(part: str) -> Callable[[Mapping[str, str]], bool]:
    for op in ("!=", "==", "="):
        if op in part:
            key, _, value = part.partition(op)
            key, value = key.strip(), value.strip()
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    match = _OLD_SET_RE.match(part)
    assert match is not None, part
    negate, key, op, values = match.groups()
    if op is None:
        return (lambda labels: key not in labels) if negate else (lambda labels: key in labels)
    choices = {v.strip() for v in values.split(",") if v.strip()}
    if op == "in":
        return lambda labels: labels.get(key) in choices
    return lambda labels: labels.get(key) not in choices


def old_label_selector(text: str) -> Callable[[Mapping[str, str]], bool]:
    requirements = [_old_requirement(part) for part in _old_split(text)]
    return lambda labels: all(req(labels) for req in requirements)


# --- valid selectors --------------------------------------------------------------------------

KEYS = st.sampled_from(["app", "tier", "example.com/role", "a-b_c.d", "x"])
VALUES = st.sampled_from(["web", "db", "v1.2", "a-b_c", "z" * 63])
SPACE = st.sampled_from(["", " ", "  "])


@st.composite
def requirements(draw: st.DrawFn) -> str:
    key, pad = draw(KEYS), draw(SPACE)
    shape = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "exists", "!"]))
    if shape == "exists":
        return f"{pad}{key}{pad}"
    if shape == "!":
        return f"{pad}!{pad}{key}{pad}"
    if shape in ("in", "notin"):
        values = draw(st.lists(VALUES, min_size=1, max_size=3))
        return f"{pad}{key} {shape}{pad}({f',{pad}'.join(values)}){pad}"
    return f"{pad}{key}{pad}{shape}{pad}{draw(VALUES)}{pad}"


LABELS = st.dictionaries(KEYS, VALUES, max_size=5)


@given(st.lists(requirements(), min_size=1, max_size=5), LABELS)
@example(["app in (web,db)", "!tier"], {"app": "db"})
@example(["app notin (web)"], {})
@example(["app!=web"], {})
def test_the_parser_agrees_with_the_old_regex_on_valid_selectors(
    parts: list[str], labels: dict[str, str]
) -> None:
    text = ",".join(parts)
    assert label_selector(text)(labels) == old_label_selector(text)(labels)


@pytest.mark.parametrize(
    ("text", "labels", "selected"),
    [
        ("", {}, True),
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "db"}, False),
        ("app!=web", {}, True),
        ("app", {"app": ""}, True),
        ("!app", {"app": ""}, False),
        ("app in (web, db)", {"app": "db"}, True),
        ("app notin (web)", {"app": "web"}, False),
        ("app=", {"app": ""}, True),  # an empty value, as apimachinery reads it
        ("app in (web,)", {"app": ""}, True),  # an empty place in a set is the empty value
    ],
)
def test_selectors_select(text: str, labels: dict[str, str], selected: bool) -> None:
    assert label_selector(text)(labels) is selected


@pytest.mark.parametrize(
    "text",
    [
        "app=web=x",
        "app in web",
        "app in (web",
        "app web",
        "app>1",
        "!",
        "app=web,",
        ",app",
        "-app=web",
        "app=-web",
        "app in (a b)",
    ],
)
def test_invalid_label_selectors_are_400(text: str) -> None:
    with pytest.raises(ApiError) as raised:
        label_selector(text)
    assert raised.value.code == 400
    assert "labelSelector" in raised.value.message


def test_field_selectors_take_escapes_and_refuse_unknown_fields() -> None:
    select = field_selector(r"metadata.name==a\,b,status.phase!=Running", POD_FIELDS)
    assert select({"metadata.name": "a,b", "status.phase": "Pending"})
    assert not select({"metadata.name": "a,b", "status.phase": "Running"})
    for text in ("metadata.name", "spec.secret=x"):
        with pytest.raises(ApiError) as raised:
            field_selector(text, POD_FIELDS)
        assert raised.value.code == 400


# --- hostile selectors ------------------------------------------------------------------------


@pytest.mark.parametrize("build", [label_selector, lambda text: field_selector(text, POD_FIELDS)])
def test_a_selector_longer_than_the_bound_is_refused_before_parsing(
    build: Callable[[str], object], monkeypatch: pytest.MonkeyPatch
) -> None:
    scanned: list[str] = []
    monkeypatch.setattr(selectors, "label_tokens", lambda text: scanned.append(text) or [])
    monkeypatch.setattr(selectors, "_split_terms", lambda text: scanned.append(text) or [])
    with pytest.raises(ApiError) as raised:
        build("a" + " " * (1024 * 1024) + "=")
    assert raised.value.code == 400
    assert f"longer than the {MAX_SELECTOR_LENGTH} allowed" in raised.value.message
    assert scanned == []


HOSTILE = [
    "a" + " " * (MAX_SELECTOR_LENGTH - 2) + "!",
    "!" * MAX_SELECTOR_LENGTH,
    "(" * MAX_SELECTOR_LENGTH,
    "a in (" + "b," * (MAX_SELECTOR_LENGTH // 2 - 4),
    " " * (MAX_SELECTOR_LENGTH - 1) + "(",
]


@pytest.mark.parametrize("text", HOSTILE, ids=["spaces", "bangs", "parens", "set", "lead"])
def test_the_scanner_makes_one_token_step_per_character_at_most(text: str) -> None:
    assert len(label_tokens(text)) <= len(text)


@pytest.mark.parametrize("text", HOSTILE, ids=["spaces", "bangs", "parens", "set", "lead"])
def test_a_hostile_selector_within_the_bound_is_answered_at_once(text: str) -> None:
    done = threading.Event()

    def parse() -> None:
        try:
            label_selector(text)
            field_selector(text.replace("(", "="), POD_FIELDS)
        except ApiError:
            pass
        done.set()

    threading.Thread(target=parse, daemon=True).start()
    # The regex took seconds on 30,000 characters; one pass over 8 KiB takes milliseconds.
    assert done.wait(10.0)
