"""The request the node's Kubernetes API answers: the exchange with the client (what the HTTP
handler offers), the parsed request (method, path, query, ``Accept``) and the reading of its body
(JSON or YAML, bounded in depth) and of the parameters every write shares (``dryRun``)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from email.message import Message
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from kubecore._api.errors import bad_request
from kubecore._apimachinery.rules import query_flag, query_int, query_value
from kubecore._contract.errors import ValidationError
from kubecore._manifest.documents import (
    parse_json_document,
    parse_yaml_document,
)

if TYPE_CHECKING:
    from kubecore._streaming.remotecommand import Live

READS = ("GET", "HEAD")
"""The methods that read (and take no body)."""
JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"
LIST_INTEGERS = ("limit", "timeoutSeconds")
SERVER_FIELDS = (
    "creationTimestamp",
    "resourceVersion",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generateName",
    "ownerReferences",
    "finalizers",
)
"""Metadata the server writes (or kubecore does not keep): dropped from what a client sends."""


class _Slots(Protocol):
    def follow_slot(
        self, container: tuple[str, str, str], authorization: str
    ) -> AbstractContextManager[None]: ...

    def watch_slot(self, authorization: str) -> AbstractContextManager[None]: ...

    def stream_slot(self, live: Live) -> AbstractContextManager[None]: ...


class Exchange(Protocol):
    """The request being answered (``kubecore._http.handler.Handler``)."""

    command: str
    path: str
    headers: Message
    connection: socket.socket
    close_connection: bool

    @property
    def server(self) -> _Slots: ...

    def _send_bytes(
        self,
        code: HTTPStatus,
        body: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None: ...

    def _stream(self, first: bytes, rest: Iterator[bytes], content_type: str) -> None: ...

    def _read_body(self) -> bytes: ...

    def _refuse_body(self) -> None: ...


@attrs.frozen
class Request:
    method: str
    segments: tuple[str, ...]
    query: Mapping[str, list[str]]
    accept: str

    def param(self, name: str, default: str = "") -> str:
        value = query_value(self.query, name)
        return default if value is None else value

    def flag(self, name: str) -> bool:
        return query_flag(self.query, name)

    def number(self, name: str, minimum: int = 0) -> int | None:
        return query_int(self.query, name, minimum)

    def check_list_options(self) -> None:
        """A 400 for an integer option of ``ListOptions`` every read takes (``limit``,
        ``timeoutSeconds``) that the API server would not parse, whether or not it is used."""
        for name in LIST_INTEGERS:
            self.number(name)

    def resource_version(self) -> int | None:
        """``resourceVersion`` as a watch starts from it: None when absent or ``0`` (from now);
        a 400 for one that is not a decimal integer of at most 64 bits, as the API server
        refuses an unparsable version (a longer one cannot be a version it handed out)."""
        value = query_int(self.query, "resourceVersion", 0)
        return value or None

    def dry_run(self) -> bool:
        """Whether the write is only checked (``dryRun=All``), not made."""
        value = self.param("dryRun")
        if value not in ("", "All"):
            raise bad_request(f'dryRun: only "All" is supported, got {value!r}')
        return value == "All"


def send_json(exchange: Exchange, value: object, code: HTTPStatus = HTTPStatus.OK) -> None:
    exchange._send_bytes(code, json.dumps(value).encode() + b"\n", JSON_TYPE)


def content_type(exchange: Exchange) -> str:
    """The media type of the request's body, without its parameters."""
    return (exchange.headers.get("Content-Type") or "").split(";")[0].strip()


def has_body(exchange: Exchange) -> bool:
    length = exchange.headers.get("Content-Length")
    return length not in (None, "0")


def read_body(exchange: Exchange) -> object:
    """The request's JSON or YAML body (``parse_body``)."""
    return parse_body(exchange._read_body(), content_type(exchange))


def parse_body(raw: bytes, content_type: str) -> object:
    """A request's JSON or YAML body, read as manifests are (the one bounded decoder of
    ``kubecore._manifest.documents``: aliases, numbers and nesting bounded, a repeated key
    refused with its path, nesting past ``MAX_NESTING_DEPTH`` refused); a 400 for one that does
    not parse."""
    try:
        text = raw.decode()
        yaml = content_type.endswith("yaml")
        return parse_yaml_document(text) if yaml else parse_json_document(text)
    except ValidationError as error:
        problems = "; ".join(p.message for p in error.problems)
        raise bad_request(f"the body is not valid {content_type}: {problems}") from None
    except ValueError as error:
        raise bad_request(f"the body is not valid {content_type or 'JSON'}: {error}") from None


def body_metadata(body: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a written object's ``metadata``; a 400 when it is not a mapping."""
    meta = body.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise bad_request(f"metadata: expected a mapping, got {type(meta).__name__}")
    return dict(meta)


def in_namespace(meta: dict[str, Any], namespace: str) -> None:
    """Fill the URL's namespace into a written object's metadata; a 400 when the body names
    another."""
    given = meta.get("namespace")
    if given and given != namespace:
        raise bad_request(
            f"the namespace of the provided object ({given}) does not match the namespace "
            f"sent on the request ({namespace})"
        )
    meta["namespace"] = namespace
