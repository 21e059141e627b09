"""Checks of container logs: tail, timestamps, ``follow`` and ``since``."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

from kubecore.runtime import parse_rfc3339
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import Harness

RFC3339_PREFIX = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d) ")
RFC3339_STAMP = re.compile(rb"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) ")


class _Follower:
    """Reads a followed log in a thread of its own (a daemon: a hung stream cannot hang the
    suite), so a check can watch it block and stream."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self._lines = lines
        self._seen: list[bytes] = []
        self._lock = threading.Condition()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._read, name="conformance-follow", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for line in self._lines:
                with self._lock:
                    self._seen.append(line)
                    self._lock.notify_all()
        except BaseException as error:  # reported by the check, with what it was
            self.error = error

    def saw(self, text: bytes, grace: float = 0.05) -> bool:
        """Whether a line with ``text`` was read, waiting up to ``grace`` real seconds for it
        (the reader thread needs real time to run, even while a ``ManualClock`` races ahead)."""
        with self._lock:
            return self._lock.wait_for(lambda: any(text in line for line in self._seen), grace)

    def running(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float) -> None:
        """Wait (in real time) for the stream to end; fail if it does not."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"logs(follow=True) still runs after {timeout} s"


def _stamp(line: bytes) -> float:
    """The time of a ``timestamps=True`` log line (an RFC 3339 prefix, any fraction digits)."""
    match = RFC3339_STAMP.match(line)
    assert match, line
    return parse_rfc3339(match.group(1))


class LogChecks(PluginFixtures):
    """A container's output, read and followed."""

    def test_logs(self, harness: Harness) -> None:
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.print_and_run("hello-logs"))
        lines = harness.wait_logs(container_id, "hello-logs")
        assert all(line.endswith(b"\n") for line in lines)
        assert list(rt.logs(container_id, tail=1)) == lines[-1:]
        stamped = list(rt.logs(container_id, timestamps=True))
        assert len(stamped) == len(lines)
        for line in stamped:
            assert RFC3339_PREFIX.match(line), line
        assert [RFC3339_PREFIX.sub(b"", line) for line in stamped] == lines

    def test_logs_follow_ends_with_the_container(self, harness: Harness) -> None:
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.print_and_run("hello-follow"))
        harness.wait_logs(container_id, "hello-follow")
        rt.stop_container(container_id, self.STOP_TIMEOUT)
        followed = list(rt.logs(container_id, follow=True))
        assert any(b"hello-follow" in line for line in followed)

    def test_logs_follow_blocks_and_streams_new_output(self, harness: Harness) -> None:
        rt = harness.runtime
        w = harness.workloads
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, w.print_twice("follow-one", "follow-two", 2))
        harness.wait_logs(container_id, "follow-one")
        follower = _Follower(rt.logs(container_id, follow=True))
        harness.wait(lambda: follower.saw(b"follow-one"), "the first line, followed")
        assert follower.running(), "logs(follow=True) ended while the container runs"
        harness.wait(lambda: follower.saw(b"follow-two"), "a line printed later, followed")
        assert follower.running(), "logs(follow=True) ended while the container runs"
        rt.stop_container(container_id, self.STOP_TIMEOUT)
        follower.join(w.timeout)
        assert follower.error is None, f"logs(follow=True) raised {follower.error!r}"

    def test_logs_since(self, harness: Harness) -> None:
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        container_id = harness.start(
            sandbox, harness.workloads.print_twice("since-one", "since-two", 2)
        )
        harness.wait_logs(container_id, "since-two")
        stamped = list(rt.logs(container_id, timestamps=True))
        first = next(_stamp(line) for line in stamped if b"since-one" in line)
        second = next(_stamp(line) for line in stamped if b"since-two" in line)
        assert second - first >= 1.0, "the second line is printed 2 s after the first"
        later = list(rt.logs(container_id, since=(first + second) / 2))
        assert any(b"since-two" in line for line in later), later
        assert not any(b"since-one" in line for line in later), later
        everything = list(rt.logs(container_id, since=first - 1))
        assert [line for line in everything if b"since-" in line] == [
            b"since-one\n",
            b"since-two\n",
        ]
