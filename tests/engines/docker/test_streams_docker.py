"""Streaming exec and attach (``StreamingRuntime``) on a real engine: output in order, stdin and
its end, exit codes, a terminal and its size, attaching to a container's main process."""

from __future__ import annotations

import itertools
import os
import threading

import pytest

from kubecore._contract.errors import ContainerNotFound, ContainerRuntimeError
from kubecore.runtime import OutputStream, StreamingRuntime, TerminalSize
from kubecore_docker import DockerRuntime
from tests.engines.docker.conftest import ContainerFactory, SandboxFactory
from tests.engines.docker.helpers import run_pod, wait_for
from tests.engines.docker.stream_support import Collected

pytestmark = pytest.mark.docker


@pytest.fixture
def cid(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> str:
    _, (container_id,) = run_pod(runtime, make_sandbox, make_container())
    return container_id


def run(runtime: DockerRuntime, cid: str, command: list[str], **kwargs: object) -> Collected:
    options = {"stdin": False, "tty": False, **kwargs}
    return Collected(runtime.exec_stream(cid, command, **options))  # type: ignore[arg-type]


def test_the_runtime_streams(runtime: DockerRuntime) -> None:
    assert isinstance(runtime, StreamingRuntime)


def test_output_arrives_by_stream_in_order(runtime: DockerRuntime, cid: str) -> None:
    # A pause between writes: stdout and stderr are two pipes, ordered only in time.
    script = "; usleep 300000; ".join(["echo one", "echo two >&2", "echo three", "echo four >&2"])
    out = run(runtime, cid, ["sh", "-c", script])
    out.wait_ended()
    assert out.stdout == b"one\nthree\n"
    assert out.stderr == b"two\nfour\n"
    # One write may reach the engine as several frames: compare the runs of each stream.
    runs = [stream for stream, _ in itertools.groupby(s for s, _ in out.chunks)]
    assert runs == [OutputStream.STDOUT, OutputStream.STDERR] * 2
    assert out.session.wait(10) == 0
    out.session.close()


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (["true"], 0),
        (["sh", "-c", "exit 3"], 3),
        (["no-such-command"], 127),
        (["/etc"], 126),
    ],
)
def test_exit_codes(runtime: DockerRuntime, cid: str, command: list[str], code: int) -> None:
    out = run(runtime, cid, command)
    out.wait_ended()
    assert out.session.wait(10) == code
    if code >= 126:  # the engine's reason, as a shell prints it
        assert b"no-such-command" in out.stdout + out.stderr or b"/etc" in out.stdout
    out.session.close()


def test_stdin_reaches_the_process_and_its_end_is_end_of_file(
    runtime: DockerRuntime, cid: str
) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)  # binary, Docker's detach keys and all
    data += b"\x10\x11" * 64
    out = run(runtime, cid, ["sh", "-c", "cat; echo end-of-file >&2"], stdin=True)
    for start in range(0, len(data), 100_000):
        out.session.write_stdin(data[start : start + 100_000])
    out.session.close_stdin()
    out.wait_ended(60)
    assert out.stdout == data
    assert out.stderr == b"end-of-file\n"
    assert out.session.wait(10) == 0
    out.session.write_stdin(b"after the end: dropped")
    out.session.close_stdin()
    out.session.close()


def test_interactive_stdin_is_answered_line_by_line(runtime: DockerRuntime, cid: str) -> None:
    out = run(
        runtime, cid, ["sh", "-c", "while read line; do echo got $line; done; exit 5"], stdin=True
    )
    out.session.write_stdin(b"first\n")
    out.wait_for(b"got first\n")
    out.session.write_stdin(b"second\n")
    out.wait_for(b"got second\n")
    assert not out.ended
    out.session.close_stdin()
    out.wait_ended()
    assert out.session.wait(10) == 5
    out.session.close()


def test_a_terminal_has_the_size_asked_and_follows_a_resize(
    runtime: DockerRuntime, cid: str
) -> None:
    out = run(
        runtime,
        cid,
        ["sh", "-c", "read a; stty size; read b; stty size; echo err >&2; exit 7"],
        stdin=True,
        tty=True,
        size=TerminalSize(width=100, height=40),
    )
    assert out.session.tty
    out.session.write_stdin(b"\n")
    out.wait_for(b"40 100")
    out.session.resize(TerminalSize(width=120, height=50))
    out.session.write_stdin(b"\n")
    out.wait_for(b"50 120")
    out.wait_ended()
    assert out.stderr == b""  # a terminal has one output
    assert b"err" in out.stdout
    assert out.session.wait(10) == 7
    out.session.resize(TerminalSize(width=80, height=24))  # ended: nothing to resize, no error
    out.session.close()


def test_detach_keys_are_only_keys_on_a_terminal(runtime: DockerRuntime, cid: str) -> None:
    out = run(runtime, cid, ["cat"], stdin=True, tty=True, size=TerminalSize(80, 24))
    out.session.write_stdin(b"a\x10\x11b\n")  # ctrl-p ctrl-q: Docker's default detach keys
    out.wait_for(b"b\r\n")
    out.session.write_stdin(b"still-here\n")
    out.wait_for(b"still-here\r\n")
    assert not out.ended
    out.session.close()
    out.wait_ended()


def test_close_ends_the_output_of_a_running_process(runtime: DockerRuntime, cid: str) -> None:
    out = run(runtime, cid, ["sh", "-c", "echo started; sleep 60"])
    out.wait_for(b"started")
    out.session.close()
    out.wait_ended(5)
    out.session.close()  # again: nothing happens
    assert out.session.wait(0.1) is None


def test_exec_in_a_missing_or_stopped_container(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    with pytest.raises(ContainerNotFound):
        runtime.exec_stream("0" * 64, ["true"], stdin=False, tty=False)
    _, (stopped,) = run_pod(runtime, make_sandbox, make_container())
    runtime.stop_container(stopped, 1)
    with pytest.raises(ContainerRuntimeError, match="not running"):
        runtime.exec_stream(stopped, ["true"], stdin=False, tty=False)
    with pytest.raises(ContainerRuntimeError, match="not running"):
        runtime.attach(stopped, stdin=False, tty=False)
    with pytest.raises(ContainerNotFound):
        runtime.attach("0" * 64, stdin=False, tty=False)


def test_attach_to_a_container_started_with_stdin_open(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    script = "echo ready; while read line; do echo got $line; echo oops $line >&2; done; exit 4"
    container = make_container(command=("sh", "-c", script), stdin=True, stdin_once=True)
    _, (container_id,) = run_pod(runtime, make_sandbox, container)
    # Written before the attach (a busy machine may start the shell late).
    wait_for(lambda: b"ready" in b"".join(runtime.logs(container_id)), 30, what="ready")
    out = Collected(runtime.attach(container_id, stdin=True, tty=False))
    assert not out.session.tty
    out.session.write_stdin(b"hello\n")
    out.wait_until(lambda c: c.stdout.endswith(b"got hello\n") and b"oops hello\n" in c.stderr)
    assert b"ready" not in out.stdout  # what was written before the attach is the logs' part
    out.session.close_stdin()  # stdin_once: the container's stdin ends with this attach
    out.wait_ended()
    assert out.session.wait(10) == 4
    out.session.close()


def test_attach_to_a_container_with_a_terminal(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    container = make_container(command=("sh",), stdin=True, tty=True)
    _, (container_id,) = run_pod(runtime, make_sandbox, container)
    out = Collected(runtime.attach(container_id, stdin=True, tty=False))
    assert out.session.tty  # the container's own setting
    out.session.resize(TerminalSize(width=90, height=30))
    out.session.write_stdin(b"stty size; echo marker-$((6*7))\n")
    out.wait_for(b"marker-42")
    assert b"30 90" in out.stdout
    out.session.close()
    out.wait_ended()
    assert out.session.wait(1) is None  # left while it runs: its end is not this session's
    assert runtime.container_status(container_id).state.value == "running"


def test_attach_without_stdin_only_reads(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    script = "i=0; while [ $i -lt 300 ]; do echo tick $i; i=$((i+1)); usleep 100000; done"
    _, (container_id,) = run_pod(
        runtime, make_sandbox, make_container(command=("sh", "-c", script))
    )
    out = Collected(runtime.attach(container_id, stdin=True, tty=False))
    out.wait_for(b"tick")
    out.session.write_stdin(b"ignored\n")  # no stdin open: dropped
    out.session.close()
    out.wait_ended()


def test_stdin_written_after_the_process_ended_is_dropped(runtime: DockerRuntime, cid: str) -> None:
    out = run(runtime, cid, ["head", "-c", "5"], stdin=True)
    chunk = b"x" * 65536
    writer = threading.Thread(
        target=lambda: [out.session.write_stdin(chunk) for _ in range(300)], daemon=True
    )
    writer.start()  # 19 MiB for a process that reads 5 bytes
    out.wait_ended(30)
    assert out.stdout == b"xxxxx"
    assert out.session.wait(10) == 0
    out.session.close()  # a writer blocked on the engine's connection is let go
    writer.join(30)
    assert not writer.is_alive()
