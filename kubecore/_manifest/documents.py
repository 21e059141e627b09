"""Documents: YAML and JSON streams, ``kind: List``, files, and the pods' identity.

Reading text never raises anything but ``ValidationError`` (``DocumentError`` per document): a
syntax error, text that is not valid Unicode, a number too long to convert, nesting too deep,
aliases that expand without bound, or a file that is too large or not a regular file all become
problems with a position or a field path. Reading a file raises ``OSError`` only when it cannot be
opened; the lenient loader returns every problem and raises nothing.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import attrs
import yaml

from kubecore._contract.errors import DocumentError as DocumentError
from kubecore._contract.errors import FieldError, ValidationError
from kubecore._manifest.decoding import (
    MAX_NUMBER_DIGITS,
    OBJECT_KINDS,
    OversizedNumber,
    _field,
    _item,
    _show,
)
from kubecore._manifest.json_keys import json_object, repeated_keys
from kubecore._manifest.validation import decode_object, decode_pod
from kubecore._model import v1 as m

# --- YAML flavour -----------------------------------------------------------------------------

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _KubectlFlavour(yaml.constructor.SafeConstructor):
    """What kubectl's YAML reading (sigs.k8s.io/yaml on go-yaml v2) does differently from
    PyYAML's YAML 1.1, where a manifest would notice: no timestamps (``2024-01-01`` stays a
    string), no sexagesimal numbers (``1:30`` stays a string), ``0o644`` is octal, ``=`` is a
    string, and mapping keys that are numbers or booleans become strings (a JSON object's keys).
    Duplicate mapping keys, which Kubernetes refuses and PyYAML silently resolves, are noted."""

    duplicate_keys: list[str]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        # ``!!map 0`` or ``!!set [a]`` hands over another kind of node; PyYAML refuses it.
        if not isinstance(node, yaml.MappingNode):
            refused: dict[Any, Any] = super().construct_mapping(node, deep)
            return refused
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value != "<<":
                if key_node.value in seen:
                    mark = key_node.start_mark
                    self.duplicate_keys.append(
                        f"duplicate key {key_node.value!r} at line {mark.line + 1}, "
                        f"column {mark.column + 1}"
                    )
                seen.add(key_node.value)
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _json_key(self.construct_object(key_node, deep=deep))
            if not isinstance(key, Hashable):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found unhashable key",
                    key_node.start_mark,
                )
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # An explicit tag hands any text to PyYAML's converter (``!!int abc``, ``!!bool maybe``,
        # ``!!timestamp 2020-99-99``, ``!!int ``), which fails with whatever error its code
        # meets (ValueError, KeyError, IndexError, AttributeError): give it the node's place.
        try:
            return super().construct_object(node, deep)
        except (yaml.YAMLError, RecursionError):
            raise
        except Exception as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {_short_tag(node.tag)} value: {exc}", node.start_mark
            ) from exc


def _json_key(key: object) -> object:
    """A mapping key as sigs.k8s.io/yaml writes it into JSON: numbers and booleans as text."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return format(key, "g") if key == key and abs(key) != float("inf") else key
    return key


class _Loader(_KubectlFlavour, _BaseLoader):  # type: ignore[valid-type,misc]
    """The fast (libyaml) reader with kubectl's flavour."""

    def __init__(self, stream: str) -> None:
        _BaseLoader.__init__(self, stream)
        self.duplicate_keys = []


class _EscapeLoader(_KubectlFlavour, yaml.SafeLoader):
    """The pure-Python reader, which also takes go-yaml's ``\\'`` escape in a double-quoted
    string (libyaml and PyYAML refuse it): used for a text that has one."""

    ESCAPE_REPLACEMENTS = {**yaml.SafeLoader.ESCAPE_REPLACEMENTS, "'": "'"}  # type: ignore[misc]

    def __init__(self, stream: str) -> None:
        yaml.SafeLoader.__init__(self, stream)
        self.duplicate_keys = []


def _short_tag(tag: str) -> str:
    return tag.replace("tag:yaml.org,2002:", "!!")


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | OversizedNumber:
    if len(node.value) > MAX_NUMBER_DIGITS:
        return OversizedNumber(len(node.value))
    value: int = yaml.SafeLoader.construct_yaml_int(loader, node)
    return value


_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_NOT_IN_GO_YAML = frozenset(
    {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value", _INT, _FLOAT}
)
# go-yaml v2's numbers: YAML 1.1's without the sexagesimal forms, plus Go's 0o octal.
_GO_INT = re.compile(
    r"""^(?:[-+]?0b[0-1_]+
    |[-+]?0o[0-7_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+)$""",
    re.X,
)
_GO_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_GO_RESOLVERS: dict[Any, list[tuple[str, re.Pattern[str]]]] = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _NOT_IN_GO_YAML]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _first in "-+0123456789":
    _GO_RESOLVERS.setdefault(_first, []).append((_INT, _GO_INT))
for _first in "-+0123456789.":
    _GO_RESOLVERS.setdefault(_first, []).append((_FLOAT, _GO_FLOAT))

for _cls in (_Loader, _EscapeLoader):
    _cls.add_constructor(_INT, _construct_int)
    _cls.yaml_implicit_resolvers = _GO_RESOLVERS


def _loader_for(text: str) -> Any:  # a libyaml or a pure-Python loader
    return _EscapeLoader(text) if "\\'" in text else _Loader(text)


# --- streams of documents -------------------------------------------------------------------


@attrs.frozen
class _RawDocuments:
    documents: list[object]
    error: FieldError | None = None  # a syntax error after the documents that did parse
    notes: dict[int, list[str]] = attrs.field(factory=dict)  # problems found while parsing


def _parse_text(text: str) -> _RawDocuments:
    bad_text = _unencodable(text)
    if bad_text is not None:
        return _RawDocuments([], bad_text)
    if text.lstrip().startswith(("{", "[")):
        raw = _parse_json_stream(text)
        if raw.error is None:
            return raw
        # A YAML flow mapping also starts with "{"; fall back, but report JSON's complaint.
        as_yaml = _parse_yaml(text)
        return as_yaml if as_yaml.error is None else raw
    return _parse_yaml(text)


def _unencodable(text: str) -> FieldError | None:
    """A lone surrogate (``"\\udc80"``, from a lossy decode) cannot be text in any file."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        line, column = _line_and_column(text, exc.start)
        bad = text[exc.start : exc.end]
        message = f"invalid text at line {line}, column {column}: {bad!r} ({exc.reason})"
        return FieldError("", message)
    return None


def _line_and_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _json_int(digits: str) -> int | OversizedNumber:
    if len(digits) > MAX_NUMBER_DIGITS:
        return OversizedNumber(len(digits))
    return int(digits)


def _parse_json_stream(text: str) -> _RawDocuments:
    """One JSON value, or several written one after another (as ``kubectl get -o json`` may);
    a key an object repeats is noted, as YAML's are."""
    decoder = json.JSONDecoder(parse_int=_json_int, object_pairs_hook=json_object)
    documents: list[object] = []
    notes: dict[int, list[str]] = {}
    pos = 0
    while True:
        pos = _JSON_SPACE.match(text, pos).end()  # type: ignore[union-attr]  # "*" always matches
        if pos >= len(text):
            return _RawDocuments(documents, None, notes)
        start = pos
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            message = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            return _RawDocuments(documents, FieldError("", message), notes)
        except RecursionError:
            return _RawDocuments(documents, _too_deep("JSON", text, pos), notes)
        if nested_deeper_than(value, MAX_NESTING_DEPTH):  # Python 3.13's parser goes on
            return _RawDocuments(documents, _too_deep("JSON", text, start), notes)
        repeated = repeated_keys(value)
        if repeated:
            notes[len(documents)] = repeated
        documents.append(value)


MAX_NESTING_DEPTH = 100
"""The deepest document read, JSON or YAML, from a file, a request or etcd (a pod nests about
10 levels): deeper ones are refused before anything walks them (patches, decoding and copies
recurse). JSON's parser gives up about 990 levels deep before Python 3.13 and goes on from
3.13, libyaml at 1,000 levels: the bound is kubecore's, whatever the parser."""

MAX_DOCUMENT_BYTES = 1024 * 1024
"""The largest single document read from a stream (a request's body, an etcd value); a
manifest file may hold many documents, up to ``MAX_MANIFEST_BYTES``."""


def nested_deeper_than(value: object, limit: int) -> bool:
    """Whether lists and mappings nest in ``value`` more than ``limit`` levels deep."""
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if depth > limit:
                return True
            pending.extend((child, depth + 1) for child in item)
    return False


def _too_deep(syntax: str, text: str, start: int) -> FieldError:
    """Where the value starting at ``start`` first nests deeper than a pod ever does.

    Only called after the parser gave up (it reports no position); counts brackets outside
    strings, which is exact for JSON and for YAML's flow style.
    """
    depth = 0
    in_string = escaped = False
    for offset in range(start, len(text)):
        char = text[offset]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                line, column = _line_and_column(text, offset)
                return FieldError(
                    "", f"invalid {syntax} at line {line}, column {column}: {_NESTED_TOO_DEEP}"
                )
        elif char in "]}":
            depth -= 1
    return FieldError("", f"invalid {syntax}: {_NESTED_TOO_DEEP}")


_NESTED_TOO_DEEP = f"nested more than {MAX_NESTING_DEPTH} levels deep"


def _parse_yaml(text: str) -> _RawDocuments:
    documents: list[object] = []
    notes: dict[int, list[str]] = {}
    loader = _loader_for(text)
    budget = _value_budget(text)
    try:
        while loader.check_data():
            document = loader.get_data()
            budget = _remaining_budget(document, budget)
            if budget < 0:
                return _RawDocuments(documents, _TOO_MANY_VALUES, notes)
            if nested_deeper_than(document, MAX_NESTING_DEPTH):
                return _RawDocuments(documents, _too_deep("YAML", text, 0), notes)
            if loader.duplicate_keys:
                notes[len(documents)] = loader.duplicate_keys
                loader.duplicate_keys = []
            if document is not None:
                documents.append(document)
    except yaml.YAMLError as exc:
        return _RawDocuments(documents, FieldError("", _yaml_error_message(exc, text)), notes)
    except RecursionError:  # only the pure-Python parser recurses; libyaml stops at 1,000 levels
        return _RawDocuments(documents, _too_deep("YAML", text, 0), notes)
    finally:
        loader.dispose()
    return _RawDocuments(documents, None, notes)


def parse_yaml_document(text: str) -> object:
    """The one YAML document of ``text`` (None when it has none), read as a manifest is: with
    kubectl's flavour, numbers, nesting and aliases bounded, duplicate keys refused. Raises
    ``ValidationError`` for anything else, with a position where known."""
    return _only_document(_parse_yaml(text))


def parse_json_document(text: str) -> object:
    """The one JSON value of ``text``, read as a JSON manifest is: numbers and nesting bounded,
    a repeated key refused with its path. Raises ``ValidationError`` for anything else."""
    raw = _parse_json_stream(text)
    if raw.error is None and not raw.documents:
        raise ValidationError([FieldError("", "invalid JSON: no value")])
    return _only_document(raw)


def _only_document(raw: _RawDocuments) -> object:
    problems = [note for notes in raw.notes.values() for note in notes]
    if raw.error is not None:
        problems.append(raw.error.message)
    if not problems and len(raw.documents) > 1:
        problems.append(f"expected one document, got {len(raw.documents)}")
    if problems:
        raise ValidationError([FieldError("", problem) for problem in problems])
    return raw.documents[0] if raw.documents else None


def parse_document(data: bytes) -> object:
    """The one JSON or YAML document of a stored or sent value (None when it has none), read by
    the manifest reader with its bounds: at most ``MAX_DOCUMENT_BYTES``, nesting, numbers and
    aliases bounded, duplicate keys refused. Raises ``ValidationError``, quoting no value."""
    if len(data) > MAX_DOCUMENT_BYTES:
        limit = MAX_DOCUMENT_BYTES
        message = f"{len(data)} bytes is larger than the {limit} bytes a document may have"
        raise ValidationError([FieldError("", message)])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError([FieldError("", f"not UTF-8 text: {exc.reason}")]) from None
    return _only_document(_parse_text(text))


_TOO_MANY_VALUES = FieldError(
    "", "invalid YAML: aliases expand to more values than the text could hold"
)


def _value_budget(text: str) -> int:
    """How many values the documents of ``text`` may hold, aliases expanded.

    Without aliases a text holds fewer values than characters, so this never refuses plain YAML;
    it refuses a few KiB of anchors that expand to millions of values (or to a loop).
    """
    return 2 * len(text) + 10_000


def _remaining_budget(document: object, budget: int) -> int:
    """``budget`` less the values in ``document``; negative once it is spent (then stops)."""
    pending = [document]
    while pending and budget >= 0:
        value = pending.pop()
        budget -= 1
        if isinstance(value, Mapping):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return budget


def _yaml_error_message(exc: yaml.YAMLError, text: str) -> str:
    if isinstance(exc, yaml.reader.ReaderError):
        line, column = _line_and_column(text, exc.position)
        return f"invalid YAML at line {line}, column {column}: {exc.reason}"
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if problem == "exceeded maximum nesting depth":  # libyaml's, at 1,000 levels
        problem = _NESTED_TOO_DEEP
    if mark is not None:
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"invalid YAML: {problem}"


@attrs.frozen
class _PodDoc:
    data: object
    path: str
    document: int
    item: int | None


def _pod_name_of(data: object) -> str:
    if isinstance(data, Mapping):
        meta = data.get("metadata")
        if isinstance(meta, Mapping) and isinstance(meta.get("name"), str):
            return str(meta["name"])
    return ""


def _load_documents(
    documents: Sequence[object], source: str, notes: Mapping[int, Sequence[str]] | None = None
) -> tuple[list[m.Pod], list[m.KubeObject], list[ValidationError]]:
    multi = len(documents) > 1
    pods: list[m.Pod] = []
    objects: list[m.KubeObject] = []
    errors: list[ValidationError] = []
    seen: dict[tuple[str, str, str], str] = {}
    for index, document in enumerate(documents):
        prefix = f"documents[{index}]" if multi else ""
        for doc in _expand(document, prefix, index, source, errors):
            kind = doc.data.get("kind") if isinstance(doc.data, Mapping) else None
            decoded: m.Pod | m.KubeObject
            # A kind of another type (``kind: []``) is the pod decoder's field error.
            if isinstance(doc.data, Mapping) and isinstance(kind, str) and kind in OBJECT_KINDS:
                decoded, problems = decode_object(doc.data, doc.path)
            else:
                decoded, problems = decode_pod(doc.data, doc.path)
            if notes and index in notes:
                problems = [FieldError(prefix, note) for note in notes[index]] + problems
            if not problems:
                meta = decoded.metadata
                key = (decoded.kind, meta.namespace, meta.name)
                where = doc.path or "the first document"
                if key in seen:
                    what = "pod" if decoded.kind == "Pod" else decoded.kind
                    problems = [
                        FieldError(
                            _field(doc.path, "metadata.name"),
                            f"duplicate {what} {key[1]}/{key[2]} (also {seen[key]})",
                        )
                    ]
                else:
                    seen[key] = where
            if problems:
                errors.append(
                    DocumentError(
                        problems,
                        source,
                        document=doc.document,
                        item=doc.item,
                        pod_name=_pod_name_of(doc.data),
                    )
                )
            elif isinstance(decoded, m.Pod):
                pods.append(decoded)
            else:
                objects.append(decoded)
    return pods, objects, errors


def _expand(
    document: object, prefix: str, index: int, source: str, errors: list[ValidationError]
) -> list[_PodDoc]:
    if not isinstance(document, Mapping):
        errors.append(
            DocumentError(
                [
                    FieldError(
                        prefix, f"expected a mapping (a Pod or a List), got {_show(document)}"
                    )
                ],
                source,
                document=index,
            )
        )
        return []
    if document.get("kind") not in ("List", "PodList"):
        return [_PodDoc(document, prefix, index, None)]
    items = document.get("items")
    items_path = _field(prefix, "items")
    if items is None:
        return []
    if not isinstance(items, list):
        errors.append(
            DocumentError(
                [FieldError(items_path, f"expected a list, got {_show(items)}")],
                source,
                document=index,
            )
        )
        return []
    return [_PodDoc(item, _item(items_path, j), index, j) for j, item in enumerate(items)]


def _load_text(
    text: str, source: str
) -> tuple[list[m.Pod], list[m.KubeObject], list[ValidationError]]:
    raw = _parse_text(text)
    documents = raw.documents
    pods, objects, errors = _load_documents(documents, source, raw.notes)
    if raw.error is not None:
        index = len(documents)
        prefix = f"documents[{index}]" if index else ""
        errors.append(DocumentError([attrs.evolve(raw.error, path=prefix)], source, document=index))
    return pods, objects, errors


def _raise_all(errors: Sequence[ValidationError], source: str) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ValidationError([p for e in errors for p in e.problems], source)


MAX_MANIFEST_BYTES = 16 * 1024 * 1024
"""The largest manifest kubecore reads, from a file or a URL: a pod is a few KiB, and parsing
holds many times the text's size in memory."""


def read_manifest_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a manifest file, checked before reading.

    Raises ``ValidationError`` for anything but a regular file (a FIFO would block the reader
    forever, a device might never end) and for a file larger than ``MAX_MANIFEST_BYTES``;
    ``OSError`` when the file cannot be opened or read.
    """
    # Non-blocking, so that opening a FIFO returns at once; regular files ignore the flag.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _file_error(path, "not a regular file")
        if info.st_size > MAX_MANIFEST_BYTES:
            raise _file_error(path, _too_large_message(info.st_size))
        data = _read_at_most(fd, MAX_MANIFEST_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_MANIFEST_BYTES:  # it grew after the check
        raise _file_error(path, _too_large_message(len(data)))
    return data


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _too_large_message(size: int) -> str:
    return f"{size} bytes is larger than the {MAX_MANIFEST_BYTES} bytes a manifest may have"


def _file_error(path: str | os.PathLike[str], message: str) -> DocumentError:
    return DocumentError([FieldError("", message)], str(path))


def decode_manifest_bytes(data: bytes, source: str) -> str:
    """UTF-8 text, or a ``ValidationError`` naming the line and column of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        message = f"not UTF-8 text at line {line}, column {column}: {exc.reason}"
        raise DocumentError([FieldError("", message)], source) from exc


def read_manifest_text(path: str | os.PathLike[str]) -> str:
    """``read_manifest_bytes`` decoded as UTF-8; raises ``ValidationError`` or ``OSError``."""
    return decode_manifest_bytes(read_manifest_bytes(path), str(path))


def load_pods_from_string(text: str, *, source_name: str = "<string>") -> list[m.Pod]:
    """Every pod in a YAML (multi-document) or JSON text; ``kind: List`` items are pods too.

    Raises ``ValidationError`` with every problem of every document: nothing is half loaded.
    With several documents, each problem's path starts with ``documents[i]``.
    """
    pods, _objects, errors = _load_text(text, source_name)
    _raise_all(errors, source_name)
    return pods


def load_pods_from_file(path: str | os.PathLike[str]) -> list[m.Pod]:
    """``load_pods_from_string`` on a file; the file name is the errors' ``source``.

    Only a regular file of at most ``MAX_MANIFEST_BYTES`` is read (``ValidationError`` otherwise);
    a file that cannot be opened raises ``OSError``.
    """
    return load_pods_from_string(read_manifest_text(path), source_name=str(path))


def load_pods_from_dict(data: object, *, source_name: str = "<dict>") -> list[m.Pod]:
    """Pods from already parsed data: one Pod mapping, or a ``kind: List`` of them."""
    pods, _objects, errors = _load_documents([data], source_name)
    _raise_all(errors, source_name)
    return pods


def load_manifest_from_dict(
    data: object, *, source_name: str = "<dict>"
) -> tuple[list[m.Pod], list[m.KubeObject], list[ValidationError]]:
    """``load_manifest_lenient`` of already parsed data (as ``parse_document`` reads it): the
    good pods, ConfigMaps and Secrets, and one error per bad document."""
    return _load_documents([data], source_name)


def load_pods_lenient(
    text_or_path: str | os.PathLike[str], *, source_name: str | None = None
) -> tuple[list[m.Pod], list[ValidationError]]:
    """Every good pod, and one error per bad document, instead of raising.

    A ``str`` is manifest text; a ``pathlib.Path`` (any ``os.PathLike``) is a file to read.
    Each error is a ``DocumentError`` naming its document index and pod name where known.
    ConfigMap and Secret documents are checked (their problems are errors) but not returned.
    """
    pods, _objects, errors = load_manifest_lenient(text_or_path, source_name=source_name)
    return pods, errors


def load_manifest_lenient(
    text_or_path: str | os.PathLike[str], *, source_name: str | None = None
) -> tuple[list[m.Pod], list[m.KubeObject], list[ValidationError]]:
    """``load_pods_lenient`` that also returns the good ConfigMaps and Secrets."""
    if isinstance(text_or_path, str):
        return _load_text(text_or_path, source_name or "<string>")
    source = source_name or str(text_or_path)
    try:
        text = read_manifest_text(text_or_path)
    except ValidationError as exc:
        return [], [], [DocumentError(exc.problems, source)]
    except OSError as exc:
        problem = FieldError("", f"cannot read: {exc.strerror or exc}")
        return [], [], [DocumentError([problem], source)]
    return _load_text(text, source)
