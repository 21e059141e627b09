"""Docker's multiplexed output read back (``kubecore_docker._frames``); no engine needed."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore import ContainerRuntimeError
from kubecore.runtime import OutputStream
from kubecore_docker._frames import FrameReader, encode_frame

frames = st.lists(
    st.tuples(st.sampled_from([1, 2]), st.binary(max_size=300)), min_size=0, max_size=12
)


def by_stream(chunks: list[tuple[OutputStream, bytes]]) -> list[tuple[OutputStream, bytes]]:
    """Adjacent chunks of a stream joined: what a reader of the output sees, in order."""
    joined: list[tuple[OutputStream, bytes]] = []
    for stream, data in chunks:
        if not data:
            continue
        if joined and joined[-1][0] is stream:
            joined[-1] = (stream, joined[-1][1] + data)
        else:
            joined.append((stream, data))
    return joined


@given(frames, st.lists(st.integers(min_value=1, max_value=64), max_size=40))
@example([(1, b"out\n"), (2, b"err\n"), (1, b"")], [1, 1, 1, 1, 1, 1, 1, 1, 1])
@example([(2, b"x" * 300)], [3, 5, 100])
def test_any_split_gives_the_same_output_in_order(
    written: list[tuple[int, bytes]], cuts: list[int]
) -> None:
    wire = b"".join(encode_frame(stream, payload) for stream, payload in written)
    reader = FrameReader()
    got: list[tuple[OutputStream, bytes]] = []
    position = 0
    for size in cuts:
        got += reader.feed(wire[position : position + size])
        position += size
    got += reader.feed(wire[position:])
    expected = by_stream([(OutputStream(stream), payload) for stream, payload in written])
    assert by_stream(got) == expected
    assert not reader.mid_frame


def test_payload_is_handed_on_before_its_frame_is_complete() -> None:
    reader = FrameReader()
    wire = encode_frame(1, b"hello world")
    assert reader.feed(wire[:13]) == [(OutputStream.STDOUT, b"hello")]
    assert reader.mid_frame
    assert reader.feed(wire[13:]) == [(OutputStream.STDOUT, b" world")]
    assert not reader.mid_frame


def test_stdin_and_engine_error_frames_go_to_stdout_and_stderr() -> None:
    wire = encode_frame(0, b"a") + encode_frame(3, b"engine failed")
    assert FrameReader().feed(wire) == [
        (OutputStream.STDOUT, b"a"),
        (OutputStream.STDERR, b"engine failed"),
    ]


@pytest.mark.parametrize(
    "header", [b"\x04\0\0\0\0\0\0\x01", b"\x01\0\x01\0\0\0\0\x01", b"HTTP/1.1"]
)
def test_a_header_no_engine_writes_is_a_clear_error(header: bytes) -> None:
    with pytest.raises(ContainerRuntimeError, match="corrupt"):
        FrameReader().feed(header + b"x")


def test_a_cut_inside_a_header_is_mid_frame() -> None:
    reader = FrameReader()
    assert reader.feed(encode_frame(1, b"ab")[:5]) == []
    assert reader.mid_frame
