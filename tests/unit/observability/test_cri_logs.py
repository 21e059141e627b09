"""Reading CRI log files as the kubelet answers log queries: each option on real files, rotated
and compressed files, the previous instance, malformed content, and follow across rotations."""

from __future__ import annotations

import gzip
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubecore._contract.errors import LogRequestError
from kubecore._housekeeping.log_rotation import LogRotationPolicy, rotate_log
from kubecore._observability import cri_logs
from kubecore.runtime import (
    container_log_path,
    encode_output,
    log_files,
    pod_log_directory,
    previous_log_path,
    read_cri_log,
)
from tests.unit.observability.cri_log_support import append, seconds


def _read(path: Path, **options: object) -> bytes:
    return b"".join(read_cri_log(str(path), **options))  # type: ignore[arg-type]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "app" / "0.log"
    path.parent.mkdir()
    append(str(path), b"one\n", at=1)
    append(str(path), b"err one\n", stream="stderr", at=2)
    append(str(path), b"two ", at=3)  # a partial line, ended by the next stdout record
    append(str(path), b"err two\n", stream="stderr", at=4)
    append(str(path), b"halves\n", at=5)
    append(str(path), b"three\n", at=6)
    return path


def test_all_lines_with_partials_joined(log: Path) -> None:
    assert _read(log) == b"one\nerr one\nerr two\ntwo halves\nthree\n"


def test_stream_filter(log: Path) -> None:
    assert _read(log, stream="stdout") == b"one\ntwo halves\nthree\n"
    assert _read(log, stream="stderr") == b"err one\nerr two\n"
    with pytest.raises(LogRequestError, match="stdout or stderr"):
        _read(log, stream="stdin")


def test_timestamps_are_the_records_own(log: Path) -> None:
    lines = _read(log, timestamps=True, stream="stdout").splitlines()
    assert lines == [
        b"2026-11-30T00:53:21Z one",
        b"2026-11-30T00:53:23Z two halves",  # the time of the line's first record
        b"2026-11-30T00:53:26Z three",
    ]


def test_tail_counts_whole_lines(log: Path) -> None:
    assert _read(log, tail=2) == b"two halves\nthree\n"
    assert _read(log, tail=0) == b""
    assert _read(log, tail=100) == _read(log)
    assert _read(log, tail=1, stream="stderr") == b"err two\n"


def test_since(log: Path) -> None:
    assert _read(log, since=seconds(4)) == b"err two\nthree\n"
    assert _read(log, since=seconds(100)) == b""


def test_limit_bytes(log: Path) -> None:
    assert _read(log, limit_bytes=6) == b"one\ner"


def test_a_last_record_without_newline_and_an_unended_partial(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    append(str(path), b"cut")
    assert _read(path) == b"cut\n"
    with open(path, "ab") as handle:
        handle.write(b"2026-11-30T00:53:21Z stdout F whole line being writ")
    assert _read(path) == b"cutwhole line being writ\n"


def test_malformed_lines_are_skipped_counted_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "0.log"
    append(str(path), b"before\n")
    with open(path, "ab") as handle:
        handle.write(b"garbage\n\xff\xfe\x00\n2026-13-01T00:00:00Z stdout F bad time\n")
        handle.write(b"x" * (cri_logs.RecordSplitter().__dict__["_max_line"] + 10) + b"\n")
    append(str(path), b"after\n")
    caplog.set_level(logging.WARNING, logger=cri_logs.__name__)
    problems = cri_logs.LogProblems(str(path))
    assert _read(path, problems=problems) == b"before\nafter\n"
    assert problems.malformed == 4
    assert len([r for r in caplog.records if "malformed" in r.getMessage()]) == 1
    caplog.clear()
    with mock.patch.object(cri_logs, "TAIL_WINDOW", 8):  # a tail read in growing windows
        assert _read(path, tail=2) == b"before\nafter\n"
    assert len([r for r in caplog.records if "malformed" in r.getMessage()]) == 1


def test_a_missing_log_is_an_error_unless_followed(tmp_path: Path) -> None:
    with pytest.raises(LogRequestError, match="does not exist"):
        _read(tmp_path / "0.log")


def test_the_kubelets_log_layout() -> None:
    directory = pod_log_directory("/var/log/pods", "default", "web", "1234")
    assert directory == "/var/log/pods/default_web_1234"
    assert container_log_path("app", 3) == "app/3.log"
    assert previous_log_path(os.path.join(directory, container_log_path("app", 3))) == (
        "/var/log/pods/default_web_1234/app/2.log"
    )


def test_previous_reads_the_previous_restart_count(tmp_path: Path) -> None:
    append(str(tmp_path / "0.log"), b"first instance\n")
    append(str(tmp_path / "1.log"), b"second instance\n")
    assert _read(tmp_path / "1.log", previous=True) == b"first instance\n"
    assert previous_log_path(str(tmp_path / "1.log")) == str(tmp_path / "0.log")
    with pytest.raises(LogRequestError, match="no previous"):
        _read(tmp_path / "0.log", previous=True)


def _rotated_log(tmp_path: Path) -> Path:
    """A log of three files: a compressed rotated one, a plain rotated one, the live one."""
    path = tmp_path / "0.log"
    append(str(path), b"oldest\n", at=1)
    append(str(path), b"split ", at=2)
    data = path.read_bytes()
    with gzip.open(str(path) + ".20261130-005321.gz", "wb") as handle:
        handle.write(data)
    path.write_bytes(b"")
    append(str(path), b"across files\n", at=3)
    append(str(path), b"middle\n", at=4)
    os.rename(path, str(path) + ".20261130-005324")
    append(str(path), b"live\n", at=5)
    (tmp_path / "0.log.20261130-005325.tmp").write_bytes(b"half written")
    return path


def test_tail_and_since_read_across_rotated_files(tmp_path: Path) -> None:
    path = _rotated_log(tmp_path)
    assert [os.path.basename(f) for f in log_files(str(path))] == [
        "0.log.20261130-005321.gz",
        "0.log.20261130-005324",
    ]
    assert _read(path) == b"oldest\nsplit across files\nmiddle\nlive\n"
    assert _read(path, tail=3) == b"split across files\nmiddle\nlive\n"
    assert _read(path, since=seconds(4)) == b"middle\nlive\n"


def test_a_file_and_its_compressed_copy_are_read_once(tmp_path: Path) -> None:
    path = _rotated_log(tmp_path)
    rotated = str(path) + ".20261130-005324"
    with open(rotated, "rb") as source, gzip.open(rotated + ".gz", "wb") as target:
        target.write(source.read())  # compressed, its original not yet removed
    assert _read(path) == b"oldest\nsplit across files\nmiddle\nlive\n"


def test_a_corrupt_compressed_file_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    (tmp_path / "0.log.20261130-005321.gz").write_bytes(b"\x1f\x8b not gzip")
    append(str(path), b"live\n")
    assert _read(path) == b"live\n"


class _Follower:
    """A followed log read on a thread, its lines collected."""

    def __init__(self, path: Path, **options: object) -> None:
        self.lines: list[bytes] = []
        self.done = threading.Event()
        self.stop = threading.Event()
        self._stream = read_cri_log(
            str(path),
            follow=True,
            running=lambda: not self.stop.is_set(),
            poll_interval=0.005,
            **options,  # type: ignore[arg-type]
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for chunk in self._stream:
                self.lines.append(chunk)
        finally:
            self.done.set()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[bytes]:
        _wait(lambda: len(self.lines) >= count, timeout, f"{count} lines, got {self.lines}")
        return self.lines

    def end(self) -> list[bytes]:
        self.stop.set()
        assert self.done.wait(10.0), "the follow did not end"
        return self.lines


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout}s for {what}"
        time.sleep(0.005)


@pytest.fixture(autouse=True)
def _quick_running_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(cri_logs, "RUNNING_CHECK_INTERVAL", 0.01)
    yield


def test_follow_tails_then_waits_for_new_lines(log: Path) -> None:
    follower = _Follower(log, tail=1)
    assert follower.wait_for(1) == [b"three\n"]
    append(str(log), b"four\n", at=7)
    append(str(log), b"fi", at=8)
    append(str(log), b"ve\n", at=8)
    assert follower.wait_for(3) == [b"three\n", b"four\n", b"five\n"]
    assert follower.end() == [b"three\n", b"four\n", b"five\n"]


def test_follow_waits_for_a_log_that_is_not_there_yet(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    follower = _Follower(path)
    append(str(path), b"late\n")
    assert follower.wait_for(1) == [b"late\n"]
    follower.end()


def test_follow_ends_when_the_container_stops_with_its_partial_line(log: Path) -> None:
    follower = _Follower(log, tail=0)
    append(str(log), b"no newline at exit")
    follower.stop.set()
    assert follower.end() == [b"no newline at exit\n"]


def test_follow_goes_on_after_rotations(tmp_path: Path) -> None:
    """A writer thread appends numbered lines while the log is rotated under a follower, once
    and twice between the follower's looks: every line arrives once, in order."""
    path = tmp_path / "0.log"
    append(str(path), b"0\n")
    follower = _Follower(path)
    follower.wait_for(1)
    written = 1
    for rotation in range(6):
        for _ in range(20):
            append(str(path), f"{written}\n".encode(), at=written)
            written += 1
        if rotation % 2:
            follower.wait_for(written)
        os.rename(path, f"{path}.{rotation:02d}")  # the runtime reopens on its next write
    append(str(path), f"{written}\n".encode())
    written += 1
    expected = [f"{n}\n".encode() for n in range(written)]
    assert follower.wait_for(written) == expected
    assert follower.end() == expected


def test_follow_ends_when_the_container_cannot_be_asked_about(log: Path) -> None:
    def gone() -> bool:
        raise LookupError("container removed")

    stream = read_cri_log(str(log), follow=True, running=gone, poll_interval=0.005, tail=1)
    assert list(stream) == [b"three\n"]


def test_closing_a_follow_closes_its_file(log: Path) -> None:
    stream = read_cri_log(str(log), follow=True, poll_interval=0.005)
    assert next(stream) == b"one\n"
    stream.close()  # type: ignore[attr-defined]
    assert not [
        fd
        for fd in os.listdir("/proc/self/fd")
        if os.path.realpath(f"/proc/self/fd/{fd}") == str(log)
    ]


_writes = st.lists(
    st.tuples(
        st.sampled_from(["stdout", "stderr", "garbage", "rotate"]),
        st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")),
        st.booleans(),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(
    _writes,
    st.integers(min_value=0, max_value=8),
    st.sampled_from([None, "stdout", "stderr"]),
    st.integers(min_value=1, max_value=64),
)
@example([("stdout", b"ab", False), ("stderr", b"x", True), ("stdout", b"c", True)], 1, None, 8)
@example(
    [
        ("stderr", b"\x00" * 10, False),
        ("stdout", b"", True),
        ("stdout", b"\x00", False),
        ("stdout", b"\x00", False),
        ("stdout", b"\x00" * 7, False),
        ("stdout", b"", True),
    ],
    1,
    None,
    1,
)
@example([("stdout", b"a stderr P b", True), ("stdout", b"c", True)], 1, "stderr", 1)
def test_tail_reads_the_same_lines_as_a_whole_read(
    tmp_path_factory: pytest.TempPathFactory,
    writes: list[tuple[str, bytes, bool]],
    tail: int,
    stream: str | None,
    window: int,
) -> None:
    """However small the window a tail starts from, it answers what the last ``tail`` lines of
    a whole read are: partial lines across the window's edge and across rotated files, both
    streams interleaved, malformed lines among them."""
    path = tmp_path_factory.mktemp("tail") / "0.log"
    path.write_bytes(b"")
    for index, (kind, text, ends) in enumerate(writes):
        if kind == "rotate":
            os.rename(path, f"{path}.{index:03d}")
            path.write_bytes(b"")
        elif kind == "garbage":
            with open(path, "ab") as handle:
                handle.write(text + b"\n")
        else:
            with open(path, "ab") as handle:
                data = text + (b"\n" if ends else b"")
                handle.write(encode_output(index * 10**9, kind, data, max_content=3))
    whole = list(read_cri_log(str(path), stream=stream))
    with (
        mock.patch.object(cri_logs, "TAIL_WINDOW", window),
        mock.patch.object(cri_logs, "TAIL_BYTES_PER_LINE", 1),
    ):
        tailed = list(read_cri_log(str(path), stream=stream, tail=tail))
    assert tailed == (whole[len(whole) - tail :] if tail else [])


def test_follow_goes_on_across_the_kubelets_rotation_with_compression(tmp_path: Path) -> None:
    """The log rotated as the housekeeping rotates it (older files compressed, the oldest
    removed) while a follower reads, sometimes twice between its looks: nothing lost or
    repeated."""
    path = tmp_path / "0.log"
    policy = LogRotationPolicy(max_size=1, max_files=4)
    append(str(path), b"0\n")
    follower = _Follower(path)
    follower.wait_for(1)
    written = 1
    for rotation in range(8):
        for _ in range(15):
            append(str(path), f"{written}\n".encode(), at=written)
            written += 1
        if rotation % 2:
            follower.wait_for(written)
        assert rotate_log(str(path), policy, 1_796_000_000 + rotation, lambda: None)
    append(str(path), f"{written}\n".encode())
    written += 1
    assert any(name.endswith(".gz") for name in os.listdir(tmp_path))
    expected = [f"{n}\n".encode() for n in range(written)]
    assert follower.wait_for(written) == expected
    assert follower.end() == expected


def test_a_follow_that_missed_several_rotations_reads_the_files_it_missed(
    tmp_path: Path,
) -> None:
    """The follow is not resumed while the log is rotated three times (its file compressed
    meanwhile): it reads the rest of its file, the rotated files after it, then the live one."""
    path = tmp_path / "0.log"
    policy = LogRotationPolicy(max_size=1, max_files=5)
    append(str(path), b"0\n")
    deadline = time.monotonic() + 10  # a follow that lost lines ends, rather than hangs
    stream = read_cri_log(
        str(path), follow=True, poll_interval=0.005, running=lambda: time.monotonic() < deadline
    )
    assert next(stream) == b"0\n"
    written = 1
    for rotation in range(3):
        for _ in range(3):
            append(str(path), f"{written}\n".encode(), at=written)
            written += 1
        assert rotate_log(str(path), policy, 1_796_000_000 + rotation, lambda: None)
    append(str(path), f"{written}\n".encode())
    written += 1
    assert "0.log.20261130-005320" not in os.listdir(tmp_path)  # compressed
    got = list(itertools.islice(stream, written - 1))
    assert got == [f"{n}\n".encode() for n in range(1, written)]
    stream.close()  # type: ignore[attr-defined]
