"""The ``cri`` runtime's client of a streaming server, without a runtime: the end ``Status`` read
as an exit code, the upgrade's answer, and a session against a SPDY server made of kubecore's
own ``SpdyConnection`` (in the server's role, as the kubelet's ``remotecommand`` answers)."""

from __future__ import annotations

import array
import fcntl
import json
import socket
import termios
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore import ContainerRuntimeError
from kubecore._streaming.spdy import header
from kubecore._streaming.spdy_connection import SpdyConnection, SpdyStream
from kubecore.runtime import OutputStream, TerminalSize
from kubecore_cri._streams import CriStreamSession, LiveStreams, Parts, exec_outcome
from kubecore_cri._upgrade import parse_answer, parse_stream_url, upgrade_request
from tests.unit.cri.stream_support import SocketTransport, wait_until

# --- the Status on the error stream -----------------------------------------------------------


def status(**fields: object) -> bytes:
    return json.dumps({"metadata": {}, **fields}).encode()


def test_a_success_is_exit_code_zero() -> None:
    assert exec_outcome(status(status="Success")).code == 0


def test_a_non_zero_exit_code_is_read_from_its_cause() -> None:
    body = status(
        status="Failure",
        reason="NonZeroExitCode",
        message="command terminated with non-zero exit code: exit status 3",
        details={"causes": [{"reason": "ExitCode", "message": "3"}]},
    )
    assert exec_outcome(body).code == 3


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ('OCI runtime exec failed: exec failed: exec: "nope": executable file not found', 127),
        ("failed to start exec: stat /nope: no such file or directory: unknown", 127),
        ("OCI runtime exec failed: exec: /etc/passwd: permission denied", 126),
        ("stream creation timed out", None),
    ],
)
def test_a_command_that_could_not_start_exits_as_a_shell_says(
    message: str, code: int | None
) -> None:
    outcome = exec_outcome(status(status="Failure", reason="InternalError", message=message))
    assert (outcome.code, outcome.message) == (code, message)


@pytest.mark.parametrize(
    "body", [b"", b"  ", b"not json", b"[1]", b'{"reason": "NonZeroExitCode"}']
)
def test_no_status_or_a_bad_one_is_an_unknown_code(body: bytes) -> None:
    assert exec_outcome(body).code is None


@given(st.binary(max_size=300))
def test_any_status_bytes_give_an_outcome(body: bytes) -> None:
    outcome = exec_outcome(body)
    assert outcome.code is None or isinstance(outcome.code, int)


# --- the upgrade ------------------------------------------------------------------------------


def test_a_streaming_url_is_split_and_tls_refused() -> None:
    where = parse_stream_url("http://127.0.0.1:43507/exec/1OsjWLGd")
    assert (where.host, where.port, where.target) == ("127.0.0.1", 43507, "/exec/1OsjWLGd")
    with pytest.raises(ContainerRuntimeError, match="not plain http"):
        parse_stream_url("https://127.0.0.1:1/exec/x")
    with pytest.raises(ContainerRuntimeError, match="bad port"):
        parse_stream_url("http://127.0.0.1:99999/exec/x")
    request = upgrade_request(parse_stream_url("http://[::1]:8/a?b=1"), "v4.channel.k8s.io")
    assert request.startswith(b"POST /a?b=1 HTTP/1.1\r\nHost: [::1]:8\r\n")
    assert b"Upgrade: SPDY/3.1\r\n" in request and request.endswith(b"\r\n\r\n")


ANSWER = (
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
    b"X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n\x80\x03\x00\x04"
)


@given(st.integers(0, len(ANSWER)))
@example(len(ANSWER) - 5)
def test_the_answer_is_read_once_its_head_is_whole(cut: int) -> None:
    head_end = ANSWER.index(b"\r\n\r\n") + 4
    partial = parse_answer(ANSWER[:cut])
    if cut < head_end:
        assert partial is None
    else:
        assert partial is not None and partial.status == 101
        assert partial.headers["x-stream-protocol-version"] == "v4.channel.k8s.io"
        assert partial.rest == ANSWER[head_end:cut]


def test_an_answer_that_is_not_http_is_an_error() -> None:
    with pytest.raises(ContainerRuntimeError, match="answered"):
        parse_answer(b"SSH-2.0-OpenSSH\r\n\r\n")
    with pytest.raises(ContainerRuntimeError, match="too long"):
        parse_answer(b"HTTP/1.1 200 OK\r\n" + b"x" * 70_000)


# --- a session against a SPDY server ------------------------------------------------------------


class FakeServer:
    """The server end of one session: accepts each stream, then runs ``script`` with the
    streams by type (in a thread of its own), and closes the connection once it returns."""

    def __init__(self, sock: socket.socket, kinds: int, script: Callable[..., None]) -> None:
        self.streams: dict[str, SpdyStream] = {}
        self._kinds = kinds
        self._script = script
        self._lock = threading.Lock()
        self.connection = SpdyConnection(
            SocketTransport(sock), client=False, accept=self._accept, flow_control=False
        )
        threading.Thread(target=self.connection.serve, daemon=True).start()

    def _accept(self, stream: SpdyStream) -> None:
        with self._lock:
            self.streams[header(stream.headers, "streamtype") or ""] = stream
            complete = len(self.streams) == self._kinds
        stream.reply()  # after it is noted: the client may look right after the reply
        if complete:
            threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        try:
            self._script(self.streams)
        finally:
            self.connection.close()  # as the kubelet's server ends a session


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    yield ours, theirs
    for sock in (ours, theirs):
        sock.close()


def queued(sock: socket.socket) -> int:
    """Bytes waiting to be read on ``sock``."""
    buffer = array.array("i", [0])
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, buffer)
    return buffer[0]


def start_session(
    pair: tuple[socket.socket, socket.socket], parts: Parts, script: Callable[..., None]
) -> tuple[CriStreamSession, FakeServer, LiveStreams]:
    ours, theirs = pair
    server = FakeServer(theirs, len(parts.stream_types()), script)
    live = LiveStreams()
    session = CriStreamSession(ours, parts, on_close=live.discard)
    live.add(session)
    session.start(b"", timeout=10)
    return session, server, live


def test_output_stdin_to_its_end_and_the_exit_code(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    def cat(streams: dict[str, SpdyStream]) -> None:
        streams["stderr"].write(b"starting\n")
        while data := streams["stdin"].read():
            streams["stdout"].write(data)
        streams["error"].write(
            status(
                status="Failure",
                reason="NonZeroExitCode",
                details={"causes": [{"reason": "ExitCode", "message": "4"}]},
            )
        )
        streams["error"].close()
        streams["stdout"].close()

    session, _, live = start_session(pair, Parts(stdin=True, tty=False), cat)
    session.write_stdin(b"one\n")
    session.write_stdin(b"two\n" * 20_000)
    session.close_stdin()
    session.close_stdin()  # idempotent
    session.write_stdin(b"after the end")  # ignored
    chunks = list(session.output())
    assert b"".join(d for s, d in chunks if s is OutputStream.STDERR) == b"starting\n"
    stdout = b"".join(d for s, d in chunks if s is OutputStream.STDOUT)
    assert stdout == b"one\n" + b"two\n" * 20_000
    assert session.wait(10) == 4
    session.close()
    assert live.close_all() is None


def test_a_terminal_has_a_resize_stream_and_no_stderr(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    seen: list[bytes] = []

    def terminal(streams: dict[str, SpdyStream]) -> None:
        seen.append(streams["resize"].read())
        streams["stdout"].write(b"ok\r\n")
        streams["error"].write(status(status="Success"))

    session, server, _ = start_session(pair, Parts(stdin=True, tty=True), terminal)
    assert set(server.streams) == {"error", "stdin", "stdout", "resize"}
    session.resize(TerminalSize(100, 30))
    wait_until(lambda: seen, "the resize to arrive")
    assert json.loads(seen[0]) == {"Width": 100, "Height": 30}
    assert list(session.output()) == [(OutputStream.STDOUT, b"ok\r\n")]
    assert session.wait(10) == 0


def test_a_command_that_could_not_start_says_why_on_its_output(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    message = 'OCI runtime exec failed: exec: "nope": executable file not found in $PATH'

    def missing(streams: dict[str, SpdyStream]) -> None:
        streams["error"].write(status(status="Failure", reason="InternalError", message=message))

    session, _, _ = start_session(pair, Parts(stdin=False, tty=False), missing)
    assert list(session.output()) == [(OutputStream.STDERR, message.encode() + b"\n")]
    assert session.wait(10) == 127


def test_close_ends_the_output_and_frees_the_connection_even_with_a_writer_stuck(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    release = threading.Event()

    def never_reads(streams: dict[str, SpdyStream]) -> None:
        streams["stdout"].write(b"ready\n")
        release.wait(10)

    session, server, live = start_session(pair, Parts(stdin=True, tty=False), never_reads)
    output = session.output()
    assert next(output) == (OutputStream.STDOUT, b"ready\n")
    server.connection._transport.pause()  # type: ignore[attr-defined]
    writer = threading.Thread(target=session.write_stdin, args=(b"x" * 8_000_000,), daemon=True)
    writer.start()
    wait_until(lambda: queued(pair[1]) > 100_000, "the writer to fill the socket's buffers")
    began = time.monotonic()
    session.close()
    writer.join(5)
    assert not writer.is_alive(), "close woke the blocked writer"
    assert list(output) == []
    assert session.wait(5) is None  # no Status came: the code is not known
    assert time.monotonic() - began < 5
    session.close()  # idempotent
    wait_until(lambda: pair[0].fileno() == -1, "the session's socket to be closed")
    assert live.close_all() is None
    release.set()


def test_a_server_that_never_accepts_the_streams_is_an_error(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    theirs.close()  # gone before it answered
    session = CriStreamSession(ours, Parts(stdin=False, tty=False))
    with pytest.raises(ContainerRuntimeError, match="CRI streaming server"):
        session.start(b"", timeout=5)


def test_closing_the_runtime_closes_its_sessions(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    release = threading.Event()
    session, _, live = start_session(
        pair, Parts(stdin=False, tty=False), lambda streams: release.wait(10)
    )
    live.close_all()
    release.set()
    assert list(session.output()) == []
    with pytest.raises(ContainerRuntimeError, match="closed"):
        live.add(session)
