"""SPDY/3.1 framing: every frame type round-trips through one writer and one reader (split
anywhere), the header dictionary is the draft's, and arbitrary bytes raise nothing but
``SpdyProtocolError``."""

from __future__ import annotations

import contextlib
import zlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._contract.errors import SpdyProtocolError
from kubecore._streaming.spdy import (
    HEADER_DICTIONARY,
    DataFrame,
    Frame,
    FrameReader,
    FrameWriter,
    GoAway,
    HeadersFrame,
    Ping,
    RstStream,
    SettingsFrame,
    SynReply,
    SynStream,
    WindowUpdate,
    decode_header_block,
    encode_header_block,
)

stream_ids = st.integers(1, 0x7FFFFFFF)
names = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789-:"), min_size=1, max_size=20)
values = st.text(st.characters(max_codepoint=255), max_size=60)
header_blocks = st.dictionaries(names, values, max_size=8).map(lambda d: tuple(d.items()))

frames: st.SearchStrategy[Frame] = st.one_of(
    st.builds(DataFrame, stream_ids, st.binary(max_size=300), st.booleans()),
    st.builds(
        SynStream,
        stream_ids,
        header_blocks,
        st.integers(0, 0x7FFFFFFF),
        st.integers(0, 7),
        st.integers(0, 255),
        st.booleans(),
        st.booleans(),
    ),
    st.builds(SynReply, stream_ids, header_blocks, st.booleans()),
    st.builds(HeadersFrame, stream_ids, header_blocks, st.booleans()),
    st.builds(RstStream, stream_ids, st.integers(1, 11)),
    st.builds(
        SettingsFrame,
        st.lists(
            st.tuples(st.integers(1, 0xFFFFFF), st.integers(0, 0xFFFFFFFF), st.integers(0, 3)),
            max_size=5,
        ).map(tuple),
        st.booleans(),
    ),
    st.builds(Ping, st.integers(0, 0xFFFFFFFF)),
    st.builds(GoAway, st.integers(0, 0x7FFFFFFF), st.integers(0, 2)),
    st.builds(WindowUpdate, st.integers(0, 0x7FFFFFFF), st.integers(1, 0x7FFFFFFF)),
)


def test_the_dictionary_is_the_drafts() -> None:
    # Its length and Adler-32 (what a zlib stream primed with it names in its header) are
    # those of the SPDY/3 draft's dictionary, which Go's framer carries.
    assert len(HEADER_DICTIONARY) == 1423
    assert zlib.adler32(HEADER_DICTIONARY) == 3821447106
    assert HEADER_DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert HEADER_DICTIONARY.endswith(b"utf-,*,enq=0.")


def test_a_kubectl_syn_stream_reads() -> None:
    # The first SYN_STREAM kubectl 1.37 sent (zlib with the dictionary, sync-flushed).
    writer = FrameWriter()
    frame = SynStream(1, (("streamtype", "error"), ("port", "8080"), ("requestid", "0")))
    data = writer.encode(frame)
    assert data[:4] == b"\x80\x03\x00\x01"
    assert FrameReader().feed(data) == [frame]


@given(st.lists(frames, max_size=12), st.lists(st.integers(0, 2000), max_size=6))
@example([SynStream(1, (("a", ""),)), SynReply(1)], [3])
def test_frames_round_trip_split_anywhere(sent: list[Frame], cuts: list[int]) -> None:
    writer = FrameWriter()
    data = b"".join(writer.encode(frame) for frame in sent)
    reader = FrameReader()
    received: list[Frame] = []
    start = 0
    for cut in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        received += reader.feed(data[start:cut])
        start = cut
    assert received == sent


@given(st.binary(max_size=400))
@example(b"\x80\x03\x00\x01\x00\x00\x00\x0a" + b"\x00" * 10)
@example(b"\x80\x03\x00\x04\x00\x00\x00\x04\xff\xff\xff\xff")
@example(b"\x00\x00\x00\x00\x00\x00\x00\x00")
def test_arbitrary_bytes_raise_only_protocol_errors(data: bytes) -> None:
    reader = FrameReader(max_frame_length=256, max_header_block=1024)
    try:
        reader.feed(data)
    except SpdyProtocolError:
        with pytest.raises(SpdyProtocolError):
            reader.feed(b"")  # a broken reader stays broken


@given(st.lists(frames, min_size=1, max_size=4), st.data())
def test_corrupted_streams_raise_only_protocol_errors(
    sent: list[Frame], data: st.DataObject
) -> None:
    writer = FrameWriter()
    raw = bytearray(b"".join(writer.encode(frame) for frame in sent))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    with contextlib.suppress(SpdyProtocolError):
        FrameReader().feed(bytes(raw))


def test_bounds() -> None:
    with pytest.raises(SpdyProtocolError, match="a frame of"):
        FrameReader(max_frame_length=100).feed(b"\x00\x00\x00\x01\x00\x00\x01\x00")
    big = SynStream(1, (("x", "a" * 5000),))
    with pytest.raises(SpdyProtocolError, match="decompressed"):
        FrameReader(max_header_block=1000).feed(FrameWriter().encode(big))
    many = encode_header_block(tuple((f"h{i}", "") for i in range(300)))
    with pytest.raises(SpdyProtocolError, match="pairs"):
        decode_header_block(many)


def test_header_block_rules() -> None:
    with pytest.raises(ValueError, match="lower case"):
        encode_header_block((("Port", "1"),))
    with pytest.raises(SpdyProtocolError, match="repeated"):
        decode_header_block(b"\x00\x00\x00\x02" + (b"\x00\x00\x00\x01a\x00\x00\x00\x00") * 2)
    with pytest.raises(SpdyProtocolError, match="lower case"):
        decode_header_block(b"\x00\x00\x00\x01\x00\x00\x00\x01A\x00\x00\x00\x00")


def test_unknown_control_frames_are_skipped_and_versions_checked() -> None:
    noop = b"\x80\x03\x00\x05\x00\x00\x00\x00"
    ping = FrameWriter().encode(Ping(7))
    assert FrameReader().feed(noop + ping) == [Ping(7)]
    with pytest.raises(SpdyProtocolError, match="version 2"):
        FrameReader().feed(b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01")
