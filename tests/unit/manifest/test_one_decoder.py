"""One decoder with one set of bounds for every way a document comes in: a manifest file, a
manifest URL, an etcd value, an API body and the etcd command refuse the same hostile documents
with the same words (those of ``kubecore._manifest.documents``)."""

from __future__ import annotations

import inspect

import pytest

from kubecore import ValidationError
from kubecore._api.errors import ApiError
from kubecore._api.request import parse_body
from kubecore._config import base, file, http
from kubecore._manifest.documents import MAX_DOCUMENT_BYTES, MAX_NESTING_DEPTH, parse_document

_HEAD = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": '
_ALIAS_BOMB = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n" + b"".join(
    b"  %s: &%s [%s]\n" % (name, name, b",".join([inner] * 9))
    for name, inner in zip(
        [b"a", b"b", b"c", b"d", b"e", b"f"],
        [b'"lol"', b"*a", b"*b", b"*c", b"*d", b"*e"],
        strict=True,
    )
)
HOSTILE = {
    "duplicate key": (_HEAD + b'{"a": "x", "a": "y"}}', "duplicate key 'a' in data"),
    "deep nesting": (
        _HEAD + b'{"a": ' + b"[" * (MAX_NESTING_DEPTH + 1) + b"]" * (MAX_NESTING_DEPTH + 1) + b"}}",
        f"nested more than {MAX_NESTING_DEPTH} levels deep",
    ),
    "alias bomb": (_ALIAS_BOMB, "aliases expand to more values than the text could hold"),
}


def _problems(error: ValidationError) -> str:
    return "; ".join(p.message for p in error.problems)


@pytest.mark.parametrize(("document", "words"), HOSTILE.values(), ids=list(HOSTILE))
def test_every_entry_point_refuses_a_hostile_document_with_the_decoders_words(
    document: bytes, words: str
) -> None:
    from kubecore_etcd import decode_object
    from kubecore_etcd._cli import _document

    with pytest.raises(ValidationError) as decoded:
        parse_document(document)
    assert words in _problems(decoded.value)

    _pods, objects, problems = base.parse_documents(document.decode(), "hostile.yaml")
    assert objects == () and words in "; ".join(p.message for p in problems)  # file and URL

    with pytest.raises(ValidationError) as stored:
        decode_object(document, "/k/configmaps/default/c", "ConfigMap", "default", "c")
    assert _problems(stored.value) == "; ".join(
        f"not a YAML or JSON document: {p.message}" for p in decoded.value.problems
    )

    kind = "application/yaml" if document.startswith(b"apiVersion") else "application/json"
    with pytest.raises(ApiError) as body:
        parse_body(document, kind)
    assert body.value.message == f"the body is not valid {kind}: {_problems(decoded.value)}"

    assert _document(document) == {}  # the etcd command skips it


def test_a_number_past_the_bound_is_refused_by_every_reader_of_objects() -> None:
    from kubecore_etcd import decode_object

    document = _HEAD + b'{"a": ' + b"9" * 700 + b"}}"
    words = "expected a string, got a number of 700 characters"
    _pods, _objects, problems = base.parse_documents(document.decode(), "n.json")
    assert words in "; ".join(p.message for p in problems)
    with pytest.raises(ValidationError, match=words):
        decode_object(document, "/k/configmaps/default/c", "ConfigMap", "default", "c")
    assert parse_body(document, "application/json") == parse_document(document)


def test_the_file_and_url_sources_read_with_the_one_parser_and_one_body_bound() -> None:
    from kubecore._http.config import ServerConfig
    from kubecore._http.serving import Limits

    assert vars(file)["parse_documents"] is vars(http)["parse_documents"] is base.parse_documents
    for config in (ServerConfig, Limits):
        default = inspect.signature(config).parameters["max_body_bytes"].default
        assert default == MAX_DOCUMENT_BYTES
    with pytest.raises(ValidationError, match=f"larger than the {MAX_DOCUMENT_BYTES} bytes"):
        parse_document(b" " * (MAX_DOCUMENT_BYTES + 1))
