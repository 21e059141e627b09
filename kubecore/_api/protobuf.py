"""The protobuf wire format, as far as the API needs it: writing the few fields of a document
(the OpenAPI v2 document old kubectl reads) and reading a ConfigMap or a Secret in Kubernetes'
protobuf envelope (what kubectl's typed commands, ``kubectl create configmap|secret``, send)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

PROTOBUF_TYPE = "application/vnd.kubernetes.protobuf"
_PROTOBUF_MAGIC = b"k8s\x00"


# --- writing --------------------------------------------------------------------------------


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def message_field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a string, bytes or a nested message)."""
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


def string_field(number: int, value: str) -> bytes:
    return message_field(number, value.encode())


# --- reading --------------------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of each field of a protobuf message; varints as ints, length-
    delimited fields as bytes (fixed-width fields are skipped: these messages have none)."""
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field")
            yield number, data[pos : pos + length]
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ValueError("expected a string")
    return value.decode("utf-8")


def _entry(value: int | bytes) -> tuple[str, bytes]:
    """A map entry: key (field 1), value (field 2)."""
    if not isinstance(value, bytes):
        raise ValueError("expected a map entry")
    key, item = "", b""
    for number, part in _fields(value):
        if number == 1:
            key = _text(part)
        elif number == 2 and isinstance(part, bytes):
            item = part
    return key, item


def _metadata(data: bytes) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    names = {1: "name", 2: "generateName", 3: "namespace"}
    for number, value in _fields(data):
        if number in names:
            meta[names[number]] = _text(value)
        elif number in (11, 12):
            key, item = _entry(value)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = item.decode()
    return meta


def _envelope(body: bytes) -> tuple[str, str, bytes]:
    """The apiVersion, kind and raw object of Kubernetes' protobuf envelope."""
    if not body.startswith(_PROTOBUF_MAGIC):
        raise ValueError("no protobuf envelope")
    api_version = kind = ""
    raw = b""
    for number, value in _fields(body[len(_PROTOBUF_MAGIC) :]):
        if number == 1 and isinstance(value, bytes):
            for part_number, part in _fields(value):
                if part_number == 1:
                    api_version = _text(part)
                elif part_number == 2:
                    kind = _text(part)
        elif number == 2 and isinstance(value, bytes):
            raw = value
    return api_version, kind, raw


def object_from_protobuf(body: bytes) -> dict[str, Any]:
    """A ConfigMap or Secret in Kubernetes' protobuf envelope, in its JSON shape."""
    api_version, kind, raw = _envelope(body)
    if kind not in ("ConfigMap", "Secret"):
        raise ValueError(f"only ConfigMap and Secret are read from protobuf, got {kind!r}")
    document: dict[str, Any] = {"apiVersion": api_version or "v1", "kind": kind}
    # ConfigMap: 2 data (string), 3 binaryData, 4 immutable.
    # Secret: 2 data (bytes), 3 type, 4 stringData, 5 immutable.
    maps = (
        {2: ("data", False), 3: ("binaryData", True)}
        if kind == "ConfigMap"
        else {2: ("data", True), 4: ("stringData", False)}
    )
    immutable = 4 if kind == "ConfigMap" else 5
    for number, value in _fields(raw):
        if number == 1 and isinstance(value, bytes):
            document["metadata"] = _metadata(value)
        elif number in maps:
            field, binary = maps[number]
            key, item = _entry(value)
            text = base64.b64encode(item).decode("ascii") if binary else item.decode()
            document.setdefault(field, {})[key] = text
        elif number == 3 and kind == "Secret":
            document["type"] = _text(value)
        elif number == immutable:
            document["immutable"] = bool(value)
    return document
