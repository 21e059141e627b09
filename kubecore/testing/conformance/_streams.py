"""Checks of ``StreamingRuntime`` (``exec_stream``, ``attach``), for a runtime that has it:
output in the order written and on the right stream, stdin and its end, exit codes (0, 3, and
127 for a command that does not exist), a terminal (echo, CRLF, one stream, a resize the
process sees), ``close`` ending the output and being idempotent, and an attach that follows the
container's output until it stops. A runtime without the capability skips them.

The commands come from the ``stream_workloads`` fixture (``StreamWorkloads``), by default POSIX
ones any image with a shell has (busybox, the host): a plugin may override it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import attrs
import pytest

from kubecore._contract.errors import ContainerNotFound, ContainerRuntimeError
from kubecore._contract.streaming import (
    OutputStream,
    StreamingRuntime,
    StreamSession,
    TerminalSize,
)
from kubecore._contract.values import RuntimeState
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import MISSING_ID, Harness
from kubecore.testing.conformance._workloads import Command


@attrs.frozen
class StreamWorkloads:
    """The commands the streaming checks run (defaults: POSIX, as busybox has them)."""

    three_lines: Command = ("sh", "-c", "echo one; echo two; echo three")
    """Prints ``one``, ``two``, ``three`` on stdout, a line each, and exits 0."""
    to_stderr: Command = ("cat", "/kubecore-conformance-absent")
    """Writes an error to stderr (nothing to stdout) and exits 1."""
    cat: Command = ("cat",)
    """Copies stdin to stdout until the end of input."""
    shell: Command = ("sh",)
    """A shell reading commands from stdin (``echo``, ``exit N``, ``stty size``)."""
    missing: Command = ("/kubecore-conformance/no-such-command",)
    """A program that does not exist."""


class Output:
    """A session's output, read in a thread of its own as it comes."""

    def __init__(self, session: StreamSession) -> None:
        self.session = session
        self.chunks: list[tuple[OutputStream, bytes]] = []
        self._lock = threading.Lock()
        self.ended = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for chunk in self.session.output():
                with self._lock:
                    self.chunks.append(chunk)
        finally:
            self.ended.set()

    def of(self, stream: OutputStream | None = None) -> bytes:
        with self._lock:
            return b"".join(data for s, data in self.chunks if stream is None or s is stream)

    def streams(self) -> set[OutputStream]:
        with self._lock:
            return {s for s, _ in self.chunks}

    def wait_for(
        self, harness: Harness, text: bytes, stream: OutputStream | None = None, times: int = 1
    ) -> None:
        _wait(harness, lambda: self.of(stream).count(text) >= times, f"{text!r} in {self.of()!r}")

    def wait_end(self, harness: Harness) -> None:
        _wait(harness, self.ended.is_set, "the output to end")


def _wait(harness: Harness, condition: Callable[[], bool], what: str) -> None:
    """Wait for what the session's threads do: in real time (bounded by the workloads'
    timeout), letting the harness's clock move too (a virtual one advances)."""
    deadline = time.monotonic() + harness.workloads.timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {harness.workloads.timeout} s waiting for {what}"
            )
        harness.clock.sleep(0.05)
        time.sleep(0.005)


class StreamChecks(PluginFixtures):
    """Interactive exec and attach (optional: ``StreamingRuntime``)."""

    @pytest.fixture
    def stream_workloads(self) -> StreamWorkloads:
        return StreamWorkloads()

    def _running(self, harness: Harness) -> tuple[StreamingRuntime, str]:
        runtime = harness.runtime
        if not isinstance(runtime, StreamingRuntime):
            harness.not_checked(
                "interactive exec and attach (StreamingRuntime)", "the runtime does not stream"
            )
        container_id = harness.start(harness.run_sandbox(), harness.workloads.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        return runtime, container_id

    def _run(
        self, harness: Harness, command: Command, stdin: bytes | None = None, tty: bool = False
    ) -> tuple[int | None, Output]:
        runtime, container_id = self._running(harness)
        session = runtime.exec_stream(container_id, list(command), stdin=stdin is not None, tty=tty)
        output = Output(session)
        try:
            if stdin is not None:
                session.write_stdin(stdin)
                session.close_stdin()
            output.wait_end(harness)
            return session.wait(harness.workloads.timeout), output
        finally:
            session.close()

    def test_exec_stream_output_comes_in_order(
        self, harness: Harness, stream_workloads: StreamWorkloads
    ) -> None:
        code, output = self._run(harness, stream_workloads.three_lines)
        assert code == 0
        assert output.of(OutputStream.STDOUT) == b"one\ntwo\nthree\n"
        assert output.of(OutputStream.STDERR) == b""

    def test_exec_stream_keeps_stderr_apart(
        self, harness: Harness, stream_workloads: StreamWorkloads
    ) -> None:
        code, output = self._run(harness, stream_workloads.to_stderr)
        assert code == 1
        assert output.of(OutputStream.STDOUT) == b""
        assert b"kubecore-conformance-absent" in output.of(OutputStream.STDERR)

    def test_exec_stream_reads_stdin_until_it_is_closed(
        self, harness: Harness, stream_workloads: StreamWorkloads
    ) -> None:
        runtime, container_id = self._running(harness)
        session = runtime.exec_stream(
            container_id, list(stream_workloads.cat), stdin=True, tty=False
        )
        output = Output(session)
        try:
            session.write_stdin(b"first line\n")
            output.wait_for(harness, b"first line\n", OutputStream.STDOUT)
            assert not output.ended.is_set(), "cat ended before the end of its input"
            session.write_stdin(b"second line\n")
            session.close_stdin()
            session.close_stdin()  # idempotent
            output.wait_end(harness)
            assert session.wait(harness.workloads.timeout) == 0
            assert output.of(OutputStream.STDOUT) == b"first line\nsecond line\n"
        finally:
            session.close()

    def test_exec_stream_shell_reads_commands_from_stdin(
        self, harness: Harness, stream_workloads: StreamWorkloads
    ) -> None:
        code, output = self._run(harness, stream_workloads.shell, b"echo from-sh\nexit 4\n")
        assert code == 4
        assert output.of(OutputStream.STDOUT) == b"from-sh\n"

    def test_exec_stream_exit_codes(
        self, harness: Harness, stream_workloads: StreamWorkloads
    ) -> None:
        assert self._run(harness, harness.workloads.exit_with(0))[0] == 0
        assert self._run(harness, harness.workloads.exit_with(3))[0] == 3
        code, output = self._run(harness, stream_workloads.missing)
        assert code == 127, "a command that does not exist exits 127, as a shell says"
        assert output.of(), "with the engine's message"

    def test_exec_stream_with_a_terminal(
        self, harness: Harness, stream_workloads: StreamWorkloads
    ) -> None:
        runtime, container_id = self._running(harness)
        session = runtime.exec_stream(
            container_id,
            list(stream_workloads.shell),
            stdin=True,
            tty=True,
            size=TerminalSize(80, 24),
        )
        output = Output(session)
        try:
            assert session.tty
            session.write_stdin(b"echo tty-ok\r")  # a terminal's Enter
            output.wait_for(harness, b"tty-ok\r\n", times=2)  # echoed, then printed
            session.resize(TerminalSize(100, 30))
            session.write_stdin(b"stty size\r")
            output.wait_for(harness, b"30 100\r\n")
            session.write_stdin(b"cat /kubecore-conformance-absent\r")
            output.wait_for(harness, b"No such file or directory")  # stderr, on the terminal
            session.write_stdin(b"exit 5\r")
            output.wait_end(harness)
            assert session.wait(harness.workloads.timeout) == 5
            assert output.streams() == {OutputStream.STDOUT}, "a terminal has one stream"
        finally:
            session.close()

    def test_exec_stream_close_ends_the_output_and_is_idempotent(
        self, harness: Harness, stream_workloads: StreamWorkloads
    ) -> None:
        runtime, container_id = self._running(harness)
        session = runtime.exec_stream(
            container_id, list(stream_workloads.cat), stdin=True, tty=False
        )
        output = Output(session)
        session.write_stdin(b"before close\n")
        output.wait_for(harness, b"before close\n")
        session.close()
        output.wait_end(harness)
        session.close()
        session.write_stdin(b"ignored\n")  # after close: ignored, not an error
        session.close_stdin()
        session.resize(TerminalSize(10, 10))
        assert b"ignored" not in output.of()
        session.wait(0)  # answers (a code, or None), without waiting

    def test_attach_follows_the_output_until_the_container_stops(self, harness: Harness) -> None:
        runtime = harness.runtime
        if not isinstance(runtime, StreamingRuntime):
            harness.not_checked(
                "interactive exec and attach (StreamingRuntime)", "the runtime does not stream"
            )
        w = harness.workloads
        container_id = harness.start(harness.run_sandbox(), w.print_twice("before", "after", 5))
        harness.wait_logs(container_id, "before")
        session = runtime.attach(container_id, stdin=False, tty=False)
        output = Output(session)
        try:
            output.wait_for(harness, b"after")
            assert b"before" not in output.of(), "an attach shows output from then on"
            runtime.stop_container(container_id, self.STOP_TIMEOUT)
            output.wait_end(harness)
            assert session.wait(w.timeout) == 0, "the container's exit code, once it stopped"
        finally:
            session.close()
            session.close()

    def test_streams_need_a_running_container(self, harness: Harness) -> None:
        runtime, container_id = self._running(harness)
        command = list(harness.workloads.exit_with(0))
        with pytest.raises(ContainerNotFound):
            runtime.exec_stream(MISSING_ID, command, stdin=False, tty=False)
        with pytest.raises(ContainerNotFound):
            runtime.attach(MISSING_ID, stdin=False, tty=False)
        harness.runtime.stop_container(container_id, self.STOP_TIMEOUT)
        for start in (
            lambda: runtime.exec_stream(container_id, command, stdin=False, tty=False),
            lambda: runtime.attach(container_id, stdin=False, tty=False),
        ):
            _refused(start)


def _refused(start: Callable[[], StreamSession]) -> None:
    with pytest.raises(ContainerRuntimeError):
        start().close()
