"""The ``channel.k8s.io`` framing: every dialect's messages, the error channel's Status, the
resize channel's JSON; any bytes at all either decode or raise ``FrameError``."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._contract.streaming import TerminalSize
from kubecore._streaming.channels import (
    DIALECTS,
    PROTOCOL_NAMES,
    Channel,
    Frame,
    FrameError,
    closed_channel,
    decode,
    dialect,
    encode,
    exit_status,
    internal_status,
    read_resizes,
    status_payload,
    success_status,
)

V5, V4, V4_BASE64, V1, V1_BASE64 = (dialect(name) for name in PROTOCOL_NAMES)


def test_the_server_prefers_v5_then_v4() -> None:
    assert PROTOCOL_NAMES[:2] == ("v5.channel.k8s.io", "v4.channel.k8s.io")
    assert V5.closes and not V4.closes
    assert V4_BASE64.base64 and V1_BASE64.base64 and not V1.json_status


@given(st.sampled_from(DIALECTS), st.integers(0, 9), st.binary(max_size=300))
def test_every_dialect_decodes_what_it_encodes(which: object, channel: int, data: bytes) -> None:
    assert which in DIALECTS
    message = encode(which, channel, data)  # type: ignore[arg-type]
    raw = message.encode() if isinstance(message, str) else message
    assert decode(which, raw) == Frame(channel, data)  # type: ignore[arg-type]


def test_binary_frames_are_the_channel_byte_then_the_data() -> None:
    assert encode(V5, 1, b"hi") == b"\x01hi"
    assert encode(V4_BASE64, 2, b"hi") == "2aGk="
    assert decode(V5, b"\xff\x00") == Frame(255, b"\x00")
    assert closed_channel(Frame(255, b"\x00")) == Channel.STDIN
    assert closed_channel(Frame(255, b"")) is None
    assert decode(V5, b"") is None


@given(st.sampled_from(DIALECTS), st.binary(max_size=200))
@example(V4_BASE64, b"0!!!")
@example(V1_BASE64, b"x")
@example(V4_BASE64, b"0QQ")
def test_any_message_decodes_or_is_refused_clearly(which: object, message: bytes) -> None:
    try:
        frame = decode(which, message)  # type: ignore[arg-type]
    except FrameError:
        return
    assert frame is None or 0 <= frame.channel <= 255


def test_exit_status_is_what_kubectl_reads_the_exit_code_from() -> None:
    assert exit_status(0, ["true"]) == {"metadata": {}, "status": "Success"}
    failure = exit_status(3, ["sh", "-c", "exit 3"])
    assert failure["status"] == "Failure"
    assert failure["reason"] == "NonZeroExitCode"
    assert failure["details"] == {"causes": [{"reason": "ExitCode", "message": "3"}]}
    assert failure["message"].startswith("command terminated with non-zero exit code: ")
    assert json.loads(status_payload(V5, failure) or b"") == failure
    assert status_payload(V4, success_status()) == b'{"metadata":{},"status":"Success"}'


def test_before_v4_only_a_failure_is_sent_as_text() -> None:
    assert status_payload(V1, success_status()) is None
    failure = exit_status(2, ["false"])
    assert status_payload(V1, failure) == failure["message"].encode()
    internal = internal_status("the runtime broke")
    assert internal["reason"] == "InternalError"
    assert status_payload(V1_BASE64, internal) == b"Internal error occurred: the runtime broke"


def test_resize_messages() -> None:
    assert read_resizes(b'{"Width":80,"Height":24}') == [TerminalSize(80, 24)]
    both = read_resizes(b'{"Width":1,"Height":2}\n {"Width":3,"Height":4}\n')
    assert both == [TerminalSize(1, 2), TerminalSize(3, 4)]
    assert read_resizes(b"") == []
    for bad in (b"[1]", b'{"Width":-1}', b'{"Width":70000}', b'{"Width":true}', b"{", b"\xff"):
        with pytest.raises(FrameError):
            read_resizes(bad)


@given(st.binary(max_size=200))
@example(b"[" * 100_000)
@example(b'{"Width": 1e400}')
def test_any_resize_message_reads_or_is_refused_clearly(message: bytes) -> None:
    try:
        sizes = read_resizes(message)
    except FrameError:
        return
    assert all(0 <= s.width <= 65535 and 0 <= s.height <= 65535 for s in sizes)


@given(st.lists(st.tuples(st.integers(0, 65535), st.integers(0, 65535)), max_size=5))
def test_resizes_read_back_what_was_written(sizes: list[tuple[int, int]]) -> None:
    text = "".join(json.dumps({"Width": w, "Height": h}) + "\n" for w, h in sizes)
    assert read_resizes(text.encode()) == [TerminalSize(w, h) for w, h in sizes]
