"""Label and field selectors (``labelSelector``, ``fieldSelector``) as the API server reads them,
and the fields each kind can be selected by.

Both are read by a hand-written scanner in one pass (no regular expression that can backtrack),
after their length is bounded: a selector is a query parameter anyone can send, and parsing
holds the interpreter."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubecore._api.errors import bad_request
from kubecore._manifest.validation.names import label_problem
from kubecore._model.v1 import KubeObject, Secret

MAX_SELECTOR_LENGTH = 8 * 1024
"""The longest label or field selector read (characters); a longer one is a 400 before any
parsing."""

Requirement = Callable[[Mapping[str, str]], bool]

_SPECIAL = frozenset("=!(),<>")
"""The characters that end a word of a label selector."""
_WORD = "word"


def _bounded(name: str, text: str) -> str:
    if len(text) > MAX_SELECTOR_LENGTH:
        raise bad_request(
            f"{name}: {len(text)} characters is longer than the {MAX_SELECTOR_LENGTH} allowed"
        )
    return text


def label_tokens(text: str) -> list[tuple[str, str]]:
    """The tokens of a label selector, as apimachinery's lexer reads them: ``(kind, text)``,
    ``kind`` being ``word`` or the symbol itself (``!``, ``=``, ``==``, ``!=``, ``(``, ``)``,
    ``,``, ``<``, ``>``). One pass over ``text``."""
    tokens: list[tuple[str, str]] = []
    index, end = 0, len(text)
    while index < end:
        char = text[index]
        if char.isspace():
            index += 1
        elif char in "!=" and text.startswith("=", index + 1):
            tokens.append((char + "=", char + "="))
            index += 2
        elif char in _SPECIAL:
            tokens.append((char, char))
            index += 1
        else:
            start = index
            while index < end and not text[index].isspace() and text[index] not in _SPECIAL:
                index += 1
            tokens.append((_WORD, text[start:index]))
    return tokens


class _Tokens:
    """A cursor over a selector's tokens."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self._tokens = tokens
        self._next = 0

    def peek(self) -> str:
        """The kind of the next token ("" at the end)."""
        return self._tokens[self._next][0] if self._next < len(self._tokens) else ""

    def take(self) -> tuple[str, str]:
        token = self._tokens[self._next] if self._next < len(self._tokens) else ("", "")
        self._next += 1
        return token


def _fail(text: str, why: str) -> Exception:
    shown = text if len(text) <= 80 else text[:77] + "..."
    return bad_request(f"labelSelector: cannot parse {shown!r}: {why}")


def label_selector(text: str) -> Requirement:
    """A label selector: ``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``, ``a in (x,y)``,
    ``a notin (x)``, joined by commas (k8s.io/apimachinery/pkg/labels); a 400 for one longer
    than ``MAX_SELECTOR_LENGTH`` or that does not parse."""
    tokens = _Tokens(label_tokens(_bounded("labelSelector", text)))
    requirements: list[Requirement] = []
    while tokens.peek():
        requirements.append(_label_requirement(tokens, text))
        following = tokens.take()[0]
        if following not in ("", ","):
            raise _fail(text, f"expected ',' after a requirement, found {following!r}")
        if following == "," and not tokens.peek():
            raise _fail(text, "a requirement is missing after ','")
    return lambda labels: all(req(labels) for req in requirements)


def _key(tokens: _Tokens, text: str) -> str:
    kind, key = tokens.take()
    if kind != _WORD:
        raise _fail(text, f"expected a label key, found {kind or 'the end'!r}")
    problem = label_problem(key, "")
    if problem:
        raise _fail(text, problem)
    return key


def _value(text: str, value: str) -> str:
    problem = label_problem("k", value)
    if problem:
        raise _fail(text, problem)
    return value


def _label_requirement(tokens: _Tokens, text: str) -> Requirement:
    if tokens.peek() == "!":
        tokens.take()
        absent = _key(tokens, text)
        return lambda labels: absent not in labels
    key = _key(tokens, text)
    operator = tokens.peek()
    if operator in ("", ","):
        return lambda labels: key in labels
    if operator in ("=", "==", "!="):
        tokens.take()
        value = _value(text, tokens.take()[1] if tokens.peek() == _WORD else "")
        if operator == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    kind, word = tokens.take()
    if kind != _WORD or word not in ("in", "notin"):
        raise _fail(text, f"unknown operator {word!r} (=, ==, !=, in, notin are)")
    choices = _values(tokens, text)
    if word == "in":
        return lambda labels: labels.get(key) in choices
    return lambda labels: labels.get(key) not in choices


def _values(tokens: _Tokens, text: str) -> frozenset[str]:
    """The ``(x, y)`` of ``in``/``notin``; an empty place (``(x,)``, ``()``) is the empty value,
    as apimachinery reads it."""
    if tokens.take()[0] != "(":
        raise _fail(text, "expected '(' after in or notin")
    values: set[str] = set()
    expect_value = True
    while True:
        kind, word = tokens.take()
        if kind == _WORD and expect_value:
            values.add(_value(text, word))
            expect_value = False
        elif kind in (",", ")"):
            if expect_value:
                values.add("")
            if kind == ")":
                return frozenset(values)
            expect_value = True
        else:
            raise _fail(text, f"expected a value, ',' or ')', found {kind or 'the end'!r}")


def _split_terms(text: str) -> list[str]:
    """A field selector's terms: split on the commas not escaped by a backslash."""
    terms: list[str] = []
    start, index, end = 0, 0, len(text)
    while index < end:
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == ",":
            terms.append(text[start:index])
            start = index + 1
        index += 1
    terms.append(text[start:])
    return [term for term in terms if term.strip()]


def _split_term(term: str) -> tuple[str, str, str] | None:
    """``(key, operator, value)`` at the first unescaped ``!=``, ``==`` or ``=``."""
    index, end = 0, len(term)
    while index < end:
        char = term[index]
        if char == "\\":
            index += 2
            continue
        for operator in ("!=", "==", "="):
            if term.startswith(operator, index):
                return term[:index], operator, term[index + len(operator) :]
        index += 1
    return None


def _unescape(value: str) -> str:
    out: list[str] = []
    index, end = 0, len(value)
    while index < end:
        if value[index] == "\\" and index + 1 < end:
            index += 1
        out.append(value[index])
        index += 1
    return "".join(out)


def field_selector(text: str, fields: Iterable[str]) -> Requirement:
    """A field selector over the given field names (``a=b``, ``a==b``, ``a!=b``, joined by
    commas; ``\\,``, ``\\=`` and ``\\\\`` escape in a value); a 400 for one longer than
    ``MAX_SELECTOR_LENGTH``, a term without an operator or a field not in ``fields``."""
    known = set(fields)
    requirements: list[Requirement] = []
    for term in _split_terms(_bounded("fieldSelector", text)):
        split = _split_term(term)
        if split is None:
            shown = term if len(term) <= 80 else term[:77] + "..."
            raise bad_request(f"fieldSelector: invalid selector: {shown!r} has no operator")
        key, operator, value = split
        key, value = key.strip(), _unescape(value.strip())
        if key not in known:
            shown = key if len(key) <= 80 else key[:77] + "..."
            raise bad_request(
                f'field label "{shown}" not supported; use one of {", ".join(sorted(known))}'
            )
        requirements.append(_field_requirement(key, value, operator == "!="))
    return lambda values: all(req(values) for req in requirements)


def _field_requirement(key: str, value: str, negate: bool) -> Requirement:
    if negate:
        return lambda values: values.get(key, "") != value
    return lambda values: values.get(key, "") == value


def pod_fields(pod: dict[str, Any]) -> dict[str, str]:
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    return {
        "metadata.name": meta["name"],
        "metadata.namespace": meta.get("namespace", "default"),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.restartPolicy": spec.get("restartPolicy", ""),
        "status.phase": status.get("phase", ""),
        "status.podIP": status.get("podIP", ""),
    }


def event_fields(event: dict[str, Any]) -> dict[str, str]:
    ref = event["involvedObject"]
    return {
        "metadata.name": event["metadata"]["name"],
        "metadata.namespace": event["metadata"]["namespace"],
        "involvedObject.kind": ref.get("kind", ""),
        "involvedObject.namespace": ref.get("namespace", ""),
        "involvedObject.name": ref.get("name", ""),
        "involvedObject.uid": ref.get("uid", ""),
        "involvedObject.apiVersion": ref.get("apiVersion", ""),
        "involvedObject.fieldPath": ref.get("fieldPath", ""),
        "reason": event.get("reason", ""),
        "type": event.get("type", ""),
        "source": event["source"].get("component", ""),
        "reportingComponent": event.get("reportingComponent", ""),
    }


def object_fields(obj: KubeObject) -> dict[str, str]:
    """A ConfigMap's or a Secret's selectable fields."""
    values = {"metadata.name": obj.metadata.name, "metadata.namespace": obj.metadata.namespace}
    if isinstance(obj, Secret):
        values["type"] = obj.type
    return values


POD_FIELDS = tuple(pod_fields({"metadata": {"name": ""}}))
EVENT_FIELDS = (
    "metadata.name",
    "metadata.namespace",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.fieldPath",
    "reason",
    "type",
    "source",
    "reportingComponent",
)
CONFIG_MAP_FIELDS = ("metadata.name", "metadata.namespace")
SECRET_FIELDS = ("metadata.name", "metadata.namespace", "type")
