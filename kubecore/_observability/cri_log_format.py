"""The CRI container log format, as CRI runtimes write it and the kubelet reads it: one record
per line, ``<RFC3339Nano time> <stdout|stderr> <tags> <content>``, where the first of the
``:``-separated tags is ``P`` for a partial record (joined with the stream's following records
until one that is not partial) and ``F`` for the end of a line.

Pure functions only: ``parse_record`` never raises (any bytes: a record or None),
``RecordSplitter`` cuts a byte stream into record lines with a bound on a line's length,
``LineJoiner`` joins partial records per stream, and ``encode_output`` writes output as a
runtime does (for runtimes that write such files and for tests).
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from kubecore._util import timefmt
from kubecore._util.timefmt import format_timestamp

STDOUT = "stdout"
STDERR = "stderr"
STREAMS = (STDOUT, STDERR)
PARTIAL_TAG = b"P"
FULL_TAG = b"F"
MAX_RECORD_CONTENT = 16 * 1024
"""The content a runtime puts in one record at most (containerd's and CRI-O's buffer size);
a longer line is written as partial records."""
MAX_LINE_BYTES = 1024 * 1024
"""A record line longer than this is malformed: skipped, so garbage without newlines cannot
grow a reader's buffer without bound."""


@attrs.frozen
class LogRecord:
    """One record of a CRI log file."""

    timestamp: str
    """The record's time as written (RFC 3339 with nanoseconds)."""
    time: float
    """The same in seconds since the epoch."""
    stream: str
    partial: bool
    content: bytes
    """The record's text, without the line's newline."""


@attrs.frozen
class LogLine:
    """One whole line of a container's output: its partial records joined."""

    timestamp: str
    """The time of the line's first record, as written."""
    time: float
    stream: str
    text: bytes
    """The line, ending in ``\\n``."""


def parse_time(text: bytes) -> float | None:
    """An RFC 3339 time (``2026-12-01T15:04:05.123456789Z``) in seconds since the epoch, or
    None if ``text`` is not one with a zone (``timefmt.parse_rfc3339``, the one reader)."""
    if text[-1:] not in b"Zz" and text[-6:-5] not in (b"+", b"-"):
        return None
    return timefmt.parse_time(text)


def parse_record(line: bytes) -> LogRecord | None:
    """One record line (with or without its newline), or None when it is malformed: a time that
    is not RFC 3339, a stream other than stdout/stderr, or a missing field. As the kubelet
    reads them, only the first tag counts (``P`` partial, anything else a full line)."""
    if line.endswith(b"\n"):
        line = line[:-1]
    parts = line.split(b" ", 3)
    if len(parts) < 4:
        return None
    stamp, stream, tags, content = parts
    time = parse_time(stamp)
    if time is None:
        return None
    stream_name = stream.decode("ascii", "replace")
    if stream_name not in STREAMS:
        return None
    partial = tags.split(b":", 1)[0] == PARTIAL_TAG
    return LogRecord(stamp.decode("ascii"), time, stream_name, partial, content)


def format_record(record: LogRecord) -> bytes:
    """The record's line, newline included."""
    tag = PARTIAL_TAG if record.partial else FULL_TAG
    head = f"{record.timestamp} {record.stream} ".encode("ascii")
    return head + tag + b" " + record.content + b"\n"


def encode_output(
    nanos: int, stream: str, data: bytes, max_content: int = MAX_RECORD_CONTENT
) -> bytes:
    """``data`` written by a container at one moment, as a runtime writes it to the log: one
    ``F`` record per line, a line longer than ``max_content`` split into ``P`` records, and a
    last piece without a newline written as a partial record (the line goes on later)."""
    if stream not in STREAMS:
        raise ValueError(f"stream must be stdout or stderr, not {stream!r}")
    if max_content < 1:
        raise ValueError("max_content must be positive")
    stamp = format_timestamp(nanos)
    out = bytearray()
    for piece in data.splitlines(keepends=True) if data else ():
        whole = piece.endswith(b"\n")
        text = piece[:-1] if whole else piece
        chunks = [text[i : i + max_content] for i in range(0, len(text), max_content)] or [b""]
        for index, chunk in enumerate(chunks):
            last = index == len(chunks) - 1
            partial = not (last and whole)
            out += format_record(LogRecord(stamp, 0.0, stream, partial, chunk))
    return bytes(out)


class RecordSplitter:
    """A byte stream cut into record lines; a line over ``MAX_LINE_BYTES`` is dropped (counted
    in ``oversized``) up to its newline."""

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._buffer = bytearray()
        self._max_line = max_line
        self._discarding = False
        self.oversized = 0

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The lines (with their newlines) that ``data`` completes."""
        self._buffer += data
        start = 0
        buffer = self._buffer
        while True:
            newline = buffer.find(b"\n", start)
            if newline < 0:
                break
            if self._discarding:
                self._discarding = False
            else:
                yield bytes(buffer[start : newline + 1])
            start = newline + 1
        del buffer[:start]
        if len(buffer) > self._max_line:
            if not self._discarding:
                self.oversized += 1
            self._discarding = True
            buffer.clear()

    def rest(self) -> bytes:
        """What is left without a newline (a line being written), and forget it."""
        rest = b"" if self._discarding else bytes(self._buffer)
        self._buffer.clear()
        self._discarding = False
        return rest


class LineJoiner:
    """Records joined into whole lines, each stream on its own (a runtime may interleave the two
    streams' records)."""

    def __init__(self) -> None:
        self._pending: dict[str, list[LogRecord]] = {}

    def push(self, record: LogRecord) -> LogLine | None:
        """The line ``record`` ends, or None while it is partial."""
        pending = self._pending.setdefault(record.stream, [])
        pending.append(record)
        if record.partial:
            return None
        del self._pending[record.stream]
        return _joined(pending)

    def flush(self) -> list[LogLine]:
        """The lines left partial (a container that ended mid-line), oldest first."""
        lines = [_joined(records) for records in self._pending.values() if records]
        self._pending.clear()
        return sorted(lines, key=lambda line: line.time)


def _joined(records: list[LogRecord]) -> LogLine:
    first = records[0]
    text = b"".join(r.content for r in records) + b"\n"
    return LogLine(first.timestamp, first.time, first.stream, text)
