"""Container logs read from the files CRI runtimes write (``<log directory>/<container>/
<restartCount>.log`` in the CRI log format, ``cri_log_format``), answering the options of a log
query as the kubelet does: partial records joined into lines, a stream filter, the records'
own times with ``timestamps``, ``tail`` in whole lines, ``since``, ``limit_bytes``, the previous
instance's file with ``previous``, and ``follow`` that waits for new records (bounded polling)
and goes on in the new file when the log is rotated under it.

The current instance's ``tail`` and ``since`` read its rotated files too (``log_files``:
``0.log.20261201-150405``, compressed ones ``.gz``, oldest first), then the live file. A
malformed record is skipped, counted in ``LogProblems`` and logged once per read.
"""

from __future__ import annotations

import collections
import gzip
import logging
import os
import re
import time
import zlib
from collections.abc import Callable, Iterator
from typing import IO, cast

from kubecore._contract.errors import LogRequestError
from kubecore._observability.cri_log_format import (
    STREAMS,
    LineJoiner,
    LogLine,
    RecordSplitter,
    parse_record,
)
from kubecore._observability.logs import limited

logger = logging.getLogger(__name__)

COMPRESSED_SUFFIX = ".gz"
TEMPORARY_SUFFIX = ".tmp"
CHUNK = 64 * 1024
TAIL_WINDOW = 64 * 1024
TAIL_BYTES_PER_LINE = 512
"""Bytes at the end of a log parsed first for a ``tail``: the larger of ``TAIL_WINDOW`` and
this many per line asked for (more if they hold too few lines)."""
POLL_INTERVAL = 0.2
"""Seconds a follow waits between looks at a log with nothing new."""
RUNNING_CHECK_INTERVAL = 1.0
"""Seconds between asking whether a followed container still runs (while its log is idle)."""
_RESTART_LOG = re.compile(r"(\d+)\.log\Z")


class LogProblems:
    """Malformed records met by one read of a log: counted, the first one logged."""

    def __init__(self, path: str, *, logged: bool = False) -> None:
        self.path = path
        self.malformed = 0
        self.logged = logged

    def record(self, what: str) -> None:
        if not self.logged:
            self.logged = True
            logger.warning("log %s: skipping malformed content (%s)", self.path, what)
        self.malformed += 1


def pod_log_directory(root: str, namespace: str, pod_name: str, pod_uid: str) -> str:
    """A pod's log directory as the kubelet lays them out (CRI
    ``PodSandboxConfig.log_directory``): ``<root>/<namespace>_<name>_<uid>``."""
    return os.path.join(root, f"{namespace}_{pod_name}_{pod_uid}")


def container_log_path(container_name: str, restart_count: int) -> str:
    """A container instance's log file relative to its pod's log directory, as the kubelet
    names it (CRI ``ContainerConfig.log_path``): ``<container>/<restartCount>.log``."""
    return os.path.join(container_name, f"{restart_count}.log")


def previous_log_path(path: str) -> str:
    """The log file of the instance before the one logging to ``path``
    (``.../2.log`` -> ``.../1.log``); ``LogRequestError`` when there is none."""
    directory, name = os.path.split(path)
    match = _RESTART_LOG.match(name)
    if match is None or int(match.group(1)) == 0:
        raise LogRequestError(f"no previous instance's log beside {path}")
    return os.path.join(directory, f"{int(match.group(1)) - 1}.log")


def log_files(path: str) -> list[str]:
    """The rotated files of the log ``path``, oldest first (an uncompressed file whose
    compressed copy exists, and temporary files, left out)."""
    directory, name = os.path.split(path)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    prefix = name + "."
    rotated = {n for n in names if n.startswith(prefix) and not n.endswith(TEMPORARY_SUFFIX)}
    kept = [n for n in rotated if n + COMPRESSED_SUFFIX not in rotated]
    kept.sort(key=lambda n: n.removesuffix(COMPRESSED_SUFFIX))
    return [os.path.join(directory, n) for n in kept]


def _open_rotated(path: str) -> IO[bytes] | None:
    """A rotated file for reading (its compressed copy if it was compressed meanwhile), or None
    if it was removed."""
    for candidate in (path, path + COMPRESSED_SUFFIX):
        try:
            if candidate.endswith(COMPRESSED_SUFFIX):
                return cast(IO[bytes], gzip.open(candidate, "rb"))
            return open(candidate, "rb")
        except FileNotFoundError:
            continue
    return None


class _Reader:
    """Lines of one log: its history (rotated files, then the live file to its end), then,
    when followed, what the live file and its successors after rotations get."""

    def __init__(self, path: str, problems: LogProblems) -> None:
        self.path = path
        self.problems = problems
        self.joiner = LineJoiner()
        self.splitter = RecordSplitter()
        self.live: IO[bytes] | None = None

    def close(self) -> None:
        if self.live is not None:
            self.live.close()
            self.live = None

    def open_live(self) -> None:
        try:
            self.live = open(self.path, "rb")  # noqa: SIM115 (read across yields)
        except FileNotFoundError:
            self.live = None

    def history(self) -> Iterator[LogLine]:
        live_id = _file_id(self.live)
        for rotated in log_files(self.path):
            handle = _open_rotated(rotated)
            if handle is None:
                continue
            with handle:
                if live_id is not None and _file_id(handle) == live_id:
                    continue  # the live file, rotated since it was opened: read below
                yield from self._read(handle)
            yield from self._ended_file()
        if self.live is not None:
            yield from self._read(self.live)

    def tail_history(
        self, tail: int, wants: Callable[[LogLine], bool], final: bool
    ) -> list[LogLine]:
        """The last ``tail`` wanted lines of the history (with ``final``: and of what ends it),
        parsing only as much of the log's end as that takes: a window of its last bytes, made
        larger until it holds ``tail`` lines, or the whole log. A window starts where no line
        of either stream is under way (``_partial_before``), so its lines are whole."""
        live_id = _file_id(self.live)
        newest_first = [_live_content(self.live)]
        older = iter(reversed(log_files(self.path)))
        window = max(TAIL_WINDOW, tail * TAIL_BYTES_PER_LINE)
        exhausted = more = False
        while True:
            while not exhausted and (more or sum(map(len, newest_first)) < window):
                more = False
                content = _next_content(older, live_id)
                if content is None:
                    exhausted = True
                else:
                    newest_first.append(content)
            blob = b"".join(reversed(newest_first))
            start = max(0, len(blob) - window)
            if start:
                found = blob.find(b"\n", start - 1)
                start = len(blob) if found < 0 else found + 1
            if start or not exhausted:
                under_way = [_partial_before(blob, start, stream) for stream in STREAMS]
                if any(under_way):
                    window *= 4
                    continue
                if None in under_way and not exhausted:
                    more = True  # a stream not seen: is a line of it under way in older files?
                    continue
            reader = _Reader(self.path, LogProblems(self.path, logged=self.problems.logged))
            lines = list(reader._lines(blob[start:]))
            if final:
                lines += reader.end()
            self.problems.logged = reader.problems.logged
            kept = [line for line in lines if wants(line)]
            if (start == 0 and exhausted) or len(kept) >= tail:
                self.joiner, self.splitter = reader.joiner, reader.splitter
                self.problems.malformed += reader.problems.malformed
                if self.live is not None:
                    self.live.seek(len(newest_first[0]))
                return kept[len(kept) - tail :] if tail else []
            window *= 4

    def _read(self, handle: IO[bytes]) -> Iterator[LogLine]:
        while True:
            try:
                data = handle.read(CHUNK)
            except (OSError, EOFError, zlib.error) as error:
                self.problems.record(f"unreadable file: {error}")
                return
            if not data:
                return
            yield from self._lines(data)

    def _lines(self, data: bytes) -> Iterator[LogLine]:
        splitter = self.splitter
        oversized = splitter.oversized
        for raw in splitter.feed(data):
            record = parse_record(raw)
            if record is None:
                self.problems.record(f"not a CRI log record: {raw[:80]!r}")
                continue
            line = self.joiner.push(record)
            if line is not None:
                yield line
        if splitter.oversized != oversized:
            self.problems.record("a record longer than the longest allowed")

    def _ended_file(self) -> Iterator[LogLine]:
        """A file ended: a last record without its newline is a record still."""
        rest = self.splitter.rest()
        if rest:
            yield from self._lines(rest + b"\n")

    def end(self) -> Iterator[LogLine]:
        """The log is read for good: what is left, partial lines included."""
        yield from self._ended_file()
        yield from self.joiner.flush()

    def rotated_away(self) -> bool:
        """The live path now names another file than the one being read (the log was
        rotated and the runtime reopened it). A file truncated in place is read again from
        its start."""
        try:
            found = os.stat(self.path)
        except OSError:
            return False
        if self.live is None:
            return True
        mine = os.fstat(self.live.fileno())
        if (found.st_dev, found.st_ino) != (mine.st_dev, mine.st_ino):
            return True
        if found.st_size < self.live.tell():
            self.live.seek(0)
        return False

    def _next_file(self) -> Iterator[LogLine]:
        """The live file was rotated away: the rest of it, then the files rotated after it
        (if the log was rotated more than once since the last look), then the new live file."""
        first_line = b""
        if self.live is not None:
            yield from self._read(self.live)  # written before the runtime reopened
            yield from self._ended_file()
            first_line = _first_line(self.live)
        self.close()
        self.open_live()
        live_id = _file_id(self.live)
        missed = _rotated_after(self.path, first_line)  # listed after the live file is open
        for name in missed:
            handle = _open_rotated(name)
            if handle is None:
                continue
            with handle:
                if live_id is not None and _file_id(handle) == live_id:
                    break
                yield from self._read(handle)
            yield from self._ended_file()

    def follow(self, running: Callable[[], bool] | None, poll_interval: float) -> Iterator[LogLine]:
        last_check = time.monotonic()
        while True:
            got = False
            if self.live is not None:
                for line in self._read(self.live):
                    got = True
                    yield line
            if self.rotated_away():
                yield from self._next_file()
                continue
            if got:
                continue
            if running is not None and time.monotonic() - last_check >= RUNNING_CHECK_INTERVAL:
                last_check = time.monotonic()
                if not _still_running(running):
                    if self.live is not None:
                        yield from self._read(self.live)
                    return
            time.sleep(poll_interval)


def _partial_before(blob: bytes, start: int, stream: str) -> bool | None:
    """Whether the last record of ``stream`` in ``blob`` before ``start`` (a line's start) is
    partial: a line of it under way there; None when there is no record of it before."""
    needle = b" " + stream.encode("ascii") + b" "
    end = start
    while True:
        found = blob.rfind(needle, 0, end)
        if found < 0:
            return None
        line_start = blob.rfind(b"\n", 0, found) + 1
        line_end = blob.find(b"\n", found)
        record = parse_record(blob[line_start : len(blob) if line_end < 0 else line_end])
        if record is not None and record.stream == stream:
            return record.partial
        end = line_start  # the stream's name was in a line's text: look before that line


def _live_content(live: IO[bytes] | None) -> bytes:
    if live is None:
        return b""
    fd = live.fileno()
    return os.pread(fd, os.fstat(fd).st_size, 0)


def _next_content(older: Iterator[str], live_id: tuple[int, int] | None) -> bytes | None:
    """The content of the next older rotated file (ending in a newline), or None when there
    are no more."""
    for name in older:
        handle = _open_rotated(name)
        if handle is None:
            continue
        with handle:
            if live_id is not None and _file_id(handle) == live_id:
                continue
            try:
                content = handle.read()
            except (OSError, EOFError, zlib.error):
                continue
        return content if content.endswith(b"\n") or not content else content + b"\n"
    return None


def _still_running(running: Callable[[], bool]) -> bool:
    """What ``running`` answers; a container that cannot be asked about (removed) is not."""
    try:
        return bool(running())
    except Exception:
        logger.debug("asking whether a followed container runs failed", exc_info=True)
        return False


def _first_line(handle: IO[bytes]) -> bytes:
    try:
        return os.pread(handle.fileno(), 4096, 0).partition(b"\n")[0]
    except OSError:
        return b""


def _rotated_after(path: str, first_line: bytes) -> list[str]:
    """The rotated files of ``path`` after the one that starts with ``first_line`` (found
    by content: it may have been compressed since)."""
    if not first_line:
        return []
    files = log_files(path)
    for index, name in enumerate(files):
        handle = _open_rotated(name)
        if handle is None:
            continue
        try:
            with handle:
                start = handle.read(len(first_line) + 1)
        except (OSError, EOFError, zlib.error):
            continue
        if start.partition(b"\n")[0] == first_line:
            return files[index + 1 :]
    return []


def _file_id(handle: IO[bytes] | None) -> tuple[int, int] | None:
    if handle is None:
        return None
    raw = getattr(handle, "fileobj", None) or handle  # a gzip file: the file under it
    try:
        found = os.fstat(raw.fileno())
    except (OSError, AttributeError, ValueError):
        return None
    return found.st_dev, found.st_ino


def read_cri_log(
    path: str,
    *,
    tail: int | None = None,
    follow: bool = False,
    since: float | None = None,
    timestamps: bool = False,
    stream: str | None = None,
    limit_bytes: int | None = None,
    previous: bool = False,
    running: Callable[[], bool] | None = None,
    poll_interval: float = POLL_INTERVAL,
    problems: LogProblems | None = None,
) -> Iterator[bytes]:
    """The lines of the container log ``path`` (a CRI log file), each ending in ``\\n``:
    the last ``tail`` lines, those from ``since`` (seconds since the epoch) on, of ``stream``
    only (``stdout``/``stderr``; None: both), each after its time and a space with
    ``timestamps``, cut after ``limit_bytes``. With ``previous`` the previous instance's file
    (``previous_log_path``) is read instead. With ``follow`` the iterator then waits for new
    lines, across rotations, until ``running`` (asked about once a second while the log is
    idle) answers False, or forever without it, or until it is closed. ``LogRequestError``
    when the log has no file at all (and is not followed). Malformed records skipped are
    counted in ``problems`` if given."""
    if stream is not None and stream not in STREAMS:
        raise LogRequestError(f"stream must be stdout or stderr, not {stream!r}")
    if tail is not None and tail < 0:
        raise LogRequestError("tail must not be negative")
    if previous:
        path = previous_log_path(path)
        follow = False
    if not follow and not os.path.exists(path) and not log_files(path):
        raise LogRequestError(f"log file {path} does not exist")
    wanted = _Selection(stream, since, tail, timestamps)
    reader = _Reader(path, problems if problems is not None else LogProblems(path))
    return limited(_selected(reader, wanted, follow, running, poll_interval), limit_bytes)


class _Selection:
    """Which lines a query wants, and how they are written."""

    def __init__(
        self, stream: str | None, since: float | None, tail: int | None, timestamps: bool
    ) -> None:
        self.stream = stream
        self.since = since
        self.tail = tail
        self.timestamps = timestamps

    def wants(self, line: LogLine) -> bool:
        return (self.stream is None or line.stream == self.stream) and (
            self.since is None or line.time >= self.since
        )

    def written(self, line: LogLine) -> bytes:
        if self.timestamps:
            return line.timestamp.encode("ascii") + b" " + line.text
        return line.text


def _selected(
    reader: _Reader,
    wanted: _Selection,
    follow: bool,
    running: Callable[[], bool] | None,
    poll_interval: float,
) -> Iterator[bytes]:
    """The chosen lines of the history (the last ``tail`` of them), then of the follow."""
    try:
        reader.open_live()
        chosen: Iterator[LogLine]
        if wanted.tail is not None and wanted.since is None:
            chosen = iter(reader.tail_history(wanted.tail, wanted.wants, final=not follow))
        else:
            history = reader.history() if follow else _chained(reader.history(), reader.end())
            chosen = (line for line in history if wanted.wants(line))
            if wanted.tail is not None:
                chosen = iter(collections.deque(chosen, maxlen=wanted.tail))
        for line in chosen:
            yield wanted.written(line)
        if not follow:
            return
        later = _chained(reader.follow(running, poll_interval), reader.end())
        for line in later:
            if wanted.wants(line):
                yield wanted.written(line)
    finally:
        reader.close()


def _chained(*parts: Iterator[LogLine]) -> Iterator[LogLine]:
    for part in parts:
        yield from part
