"""The CRI log format: parsing any bytes, writing, and joining partial records (fuzzed)."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._observability.cri_log_format import (
    LineJoiner,
    LogRecord,
    RecordSplitter,
    encode_output,
    format_record,
    format_timestamp,
    parse_record,
    parse_time,
)


def test_a_record_is_read_as_the_kubelet_reads_it() -> None:
    record = parse_record(b"2016-10-06T00:17:09.669794202Z stdout F log content 1\n")
    assert record == LogRecord(
        "2016-10-06T00:17:09.669794202Z", 1475713029.669794202, "stdout", False, b"log content 1"
    )
    partial = parse_record(b"2016-10-06T00:17:09.669794202Z stderr P:x part")
    assert partial is not None and partial.partial and partial.stream == "stderr"


def test_an_empty_line_record_has_no_content() -> None:
    record = parse_record(b"2016-10-06T00:17:09Z stdout F \n")
    assert record is not None and record.content == b""


def test_content_keeps_its_spaces() -> None:
    record = parse_record(b"2016-10-06T00:17:09Z stdout F  two  spaces \n")
    assert record is not None and record.content == b" two  spaces "


def test_malformed_records_are_none() -> None:
    for line in (
        b"",
        b"\n",
        b"garbage",
        b"2016-10-06T00:17:09Z stdout F",  # no content separator
        b"2016-10-06T00:17:09Z stdin F x",
        b"2016-13-06T00:17:09Z stdout F x",
        b"2016-10-06 00:17:09Z stdout F x",
        b"2016-10-06T00:17:09 stdout F x",  # no zone
        b"2016-10-06T00:17:09.1234567891Z stdout F x",
    ):
        assert parse_record(line) is None, line


def test_times_with_zones() -> None:
    assert parse_time(b"2026-12-01T16:00:00+01:00") == parse_time(b"2026-12-01T15:00:00Z")
    assert parse_time(b"2026-12-01T15:00:00.5Z") == parse_time(b"2026-12-01T15:00:00Z") + 0.5  # type: ignore[operator]


def test_timestamps_are_written_as_go_writes_rfc3339nano() -> None:
    assert format_timestamp(1_796_000_000_000_000_000) == "2026-11-30T00:53:20Z"
    assert format_timestamp(1_796_000_000_120_000_000) == "2026-11-30T00:53:20.12Z"
    assert format_timestamp(1_796_000_000_000_000_001) == "2026-11-30T00:53:20.000000001Z"


def test_long_lines_and_unfinished_lines_are_partial_records() -> None:
    out = encode_output(0, "stdout", b"abcdefg\nxy", max_content=3)
    assert out.splitlines() == [
        b"1970-01-01T00:00:00Z stdout P abc",
        b"1970-01-01T00:00:00Z stdout P def",
        b"1970-01-01T00:00:00Z stdout F g",
        b"1970-01-01T00:00:00Z stdout P xy",
    ]


@given(st.binary(max_size=300))
@example(b"2016-10-06T00:17:09Z stdout F \xff\xfe\n")
@example(b"9999-12-31T23:59:60.999999999-23:59 stderr P x")
@example(b"0000-00-00T00:00:00Z stdout F x")
def test_any_bytes_parse_or_are_refused(data: bytes) -> None:
    record = parse_record(data)
    if record is not None:
        assert record.stream in ("stdout", "stderr")


@given(st.binary(max_size=2000), st.integers(min_value=1, max_value=50))
@example(b"\n\n\n", 1)
@example(b"x" * 100, 7)
def test_splitter_cuts_anywhere_into_the_same_lines(data: bytes, cut: int) -> None:
    whole = list(RecordSplitter().feed(data))
    splitter = RecordSplitter()
    pieces = [line for i in range(0, len(data), cut) for line in splitter.feed(data[i : i + cut])]
    assert pieces == whole
    assert b"".join(whole) + splitter.rest() == data


def test_splitter_drops_a_line_over_its_bound() -> None:
    splitter = RecordSplitter(max_line=10)
    lines = list(splitter.feed(b"x" * 25)) + list(splitter.feed(b"yy\nok\n"))
    assert lines == [b"ok\n"] and splitter.oversized == 1


_text = st.binary(max_size=60).map(lambda b: b.replace(b"\n", b""))
_chunks = st.lists(
    st.tuples(st.sampled_from(["stdout", "stderr"]), st.lists(_text, min_size=1, max_size=4)),
    max_size=12,
)


@given(_chunks, st.integers(min_value=1, max_value=20))
@example([("stdout", [b"", b""])], 1)
def test_written_output_reads_back_line_by_line(
    chunks: list[tuple[str, list[bytes]]], max_content: int
) -> None:
    """Lines written in any number of records per line, the streams interleaved, come back
    whole and each on its own stream."""
    wrote: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
    data = b""
    for stream, lines in chunks:
        for line in lines:
            data += encode_output(7, stream, line + b"\n", max_content=max_content)
            wrote[stream].append(line + b"\n")
    joiner = LineJoiner()
    read: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
    for raw in RecordSplitter().feed(data):
        record = parse_record(raw)
        assert record is not None
        line = joiner.push(record)
        if line is not None:
            read[line.stream].append(line.text)
    assert read == wrote and joiner.flush() == []


@given(_text, st.lists(st.integers(min_value=0, max_value=60), max_size=5))
def test_a_line_split_anywhere_into_partials_joins_back(text: bytes, cuts: list[int]) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    parts = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    joiner = LineJoiner()
    lines = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        raw = format_record(LogRecord("2026-12-01T15:04:05Z", 0.0, "stdout", not last, part))
        record = parse_record(raw)
        assert record is not None
        line = joiner.push(record)
        if line is not None:
            lines.append(line.text)
    assert lines == [text + b"\n"]
