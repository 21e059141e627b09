"""The in-memory runtime's interactive exec and attach beyond what the conformance suite checks:
``on_exec`` rules, a terminal's line discipline (^C, backspace, ^D), files written by a shell,
``tar`` as ``kubectl cp`` runs it, a stopped container ending its sessions, attach driving a
``stdin: true`` shell, the call log."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator

import pytest

from kubecore.runtime import ContainerConfig, ExecResult, OutputStream, SandboxConfig
from kubecore_fake import FakeRuntime
from kubecore_fake._streams import FakeSession, pack_tar, unpack_tar

SANDBOX = SandboxConfig(name="pod", namespace="default", uid="uid-1")


@pytest.fixture
def runtime() -> Iterator[FakeRuntime]:
    rt = FakeRuntime(images=["busybox:1.36"])
    rt.pull("busybox:1.36")
    yield rt
    rt.close()


def start(rt: FakeRuntime, command: tuple[str, ...] = ("sleep", "3600"), **config: object) -> str:
    sandbox = rt.run_sandbox(SANDBOX)
    container = ContainerConfig(name="c", image="busybox:1.36", command=command, **config)  # type: ignore[arg-type]
    container_id = rt.create_container(sandbox, container, SANDBOX)
    rt.start_container(container_id)
    return container_id


def run(session: FakeSession, stdin: bytes = b"") -> tuple[int | None, bytes]:
    if stdin:
        session.write_stdin(stdin)
    session.close_stdin()
    output = b"".join(data for _, data in session.output())
    return session.wait(10), output


def test_on_exec_rules_answer_first(runtime: FakeRuntime) -> None:
    container_id = start(runtime)
    runtime.on_exec(["date"], ExecResult(0, b"Tue Dec  1\n", b"warn\n"))
    session = runtime.exec_stream(container_id, ["date"], stdin=False, tty=False)
    chunks = list(session.output())
    assert chunks == [(OutputStream.STDOUT, b"Tue Dec  1\n"), (OutputStream.STDERR, b"warn\n")]
    assert session.wait(5) == 0
    assert runtime.call_count("exec_stream") == 1


def test_a_terminal_edits_lines_as_a_terminal_does(runtime: FakeRuntime) -> None:
    container_id = start(runtime)
    session = runtime.exec_stream(container_id, ["sh"], stdin=True, tty=True)
    session.write_stdin(b"echo typo\x03echo ok\x7f\x7fyes\r")
    session.write_stdin(b"\x04")  # ^D on an empty line: the end of input
    code, output = session.wait(10), b"".join(data for _, data in session.output())
    assert code == 0
    assert b"^C\r\n" in output and b"\b \b" in output
    assert b"\r\nyes\r\n" in output
    assert b"typo\r\n" not in output.split(b"^C")[-1]


def test_a_shell_writes_files_that_later_commands_read(runtime: FakeRuntime) -> None:
    container_id = start(runtime)
    shell = runtime.exec_stream(container_id, ["sh"], stdin=True, tty=False)
    assert run(shell, b"echo kept > /tmp/note\nls /tmp\n") == (0, b"note\n")
    reader = runtime.exec_stream(container_id, ["cat", "/tmp/note"], stdin=False, tty=False)
    assert run(reader) == (0, b"kept\n")


def test_tar_round_trips_bytes_and_never_writes_outside_its_directory() -> None:
    files = {"/data/a.bin": b"\xff\x00\x01".decode("utf-8", "surrogateescape"), "/data/b": "b"}
    packed, missing = pack_tar(files, "/", ["/data", "/absent"])
    assert missing == ["/absent"]
    with tarfile.open(fileobj=io.BytesIO(packed)) as archive:
        assert archive.getnames() == ["data/a.bin", "data/b"]
    assert unpack_tar(packed, "/restore") == {
        "/restore/data/a.bin": files["/data/a.bin"],
        "/restore/data/b": "b",
    }
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w") as archive:
        member = tarfile.TarInfo("../../etc/passwd")
        member.size = 1
        archive.addfile(member, io.BytesIO(b"x"))
    assert unpack_tar(evil.getvalue(), "/tmp") == {}


def test_stopping_the_container_ends_its_sessions(runtime: FakeRuntime) -> None:
    container_id = start(runtime)
    session = runtime.exec_stream(container_id, ["cat"], stdin=True, tty=False)
    runtime.stop_container(container_id, 0)
    assert list(session.output()) == []
    assert session.wait(10) == 137


def test_attach_with_stdin_drives_a_stdin_shell(runtime: FakeRuntime) -> None:
    container_id = start(runtime, ("sh",), stdin=True)
    session = runtime.attach(container_id, stdin=True, tty=False)
    session.write_stdin(b"echo via-attach\nexit 6\n")
    output = b"".join(data for _, data in session.output())
    assert output == b"via-attach\n"
    assert runtime.container_status(container_id).exit_code == 6
    assert any(b"via-attach" in line for line in runtime.logs(container_id))


def test_a_detached_shell_waits_for_the_next_attach(runtime: FakeRuntime) -> None:
    container_id = start(runtime, ("sh",), stdin=True)
    first = runtime.attach(container_id, stdin=True, tty=False)
    first.close()
    assert runtime.container_status(container_id).state.value == "running"
    second = runtime.attach(container_id, stdin=True, tty=False)
    second.write_stdin(b"echo second\nexit 0\n")
    assert b"".join(data for _, data in second.output()) == b"second\n"
    assert second.wait(10) == 0
    assert runtime.container_status(container_id).exit_code == 0
