"""Streaming exec and attach in the in-memory runtime (``StreamingRuntime``).

An exec'd command runs in a thread of its own, as a small interactive reading of the shell: the
``on_exec`` rules answer first (their output, then their exit code); a shell without ``-c``
reads commands from stdin line by line until ``exit`` or end of input (a tty shows busybox's
``/ # `` prompt); ``cat`` with no file echoes stdin until end of input; ``sh -c SCRIPT`` and
plain commands run their statements (``echo``, ``printf``, ``cat``, ``ls``, ``sleep`` on the
runtime's clock, ``exit N``, ``stty size``, ``true``/``false``, ``tar cf -``/``tar xf -`` and
``test -d`` as ``kubectl cp`` runs them, the probes' commands of ``kubecore_fake._exec``). A
program the reading does not know is not found: 127, with the shell's message. Files written
with ``>`` (and by ``tar xf``) stay in the container.

With a tty the session behaves as a terminal in its default mode: input is echoed, a carriage
return is a newline, ^D on an empty line ends input, ^C drops the line, output lines end in
CRLF, and everything arrives as stdout. An attach follows the container's log from now on
until the container stops; one with stdin to a container made with ``stdin: true`` whose command
is a shell reading stdin (``kubectl run -it``, ``kubectl debug -it``) drives that shell: what it
prints also goes to the log, and its ``exit`` ends the container.
"""

from __future__ import annotations

import collections
import contextlib
import io
import os.path
import re
import tarfile
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

import attrs

from kubecore.runtime import (
    Clock,
    ExecResult,
    OutputStream,
    RuntimeState,
    TerminalSize,
)
from kubecore_fake._engine import Engine
from kubecore_fake._events import Events
from kubecore_fake._exec import Execs, read_exec
from kubecore_fake._records import ContainerRecord
from kubecore_fake._shell import (
    SHELLS,
    Statement,
    echo_text,
    exit_code_of,
    expand,
    parse_script,
    shell_script,
)

_T = TypeVar("_T")
PROMPT = b"/ # "
"""What busybox's ``sh`` shows root on a terminal before each command."""
_POLL = 0.5
"""Seconds between two looks at whether the container still runs, while a program waits."""
_LONE_NEWLINE = re.compile(rb"(?<!\r)\n")
_KNOWN = frozenset({"cat", "sleep", "true", ":", "false", "ps", "test", "[", "nc", "wget", "curl"})
"""Programs ``read_exec`` answers."""


class _Ended(Exception):
    """The session was closed, or the container stopped, while the program ran."""


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class FakeSession:
    """One process's streams; thread-safe. The program's side (``emit``, ``read_line``,
    ``read_some``, ``finish``) and the client's (the ``StreamSession`` methods)."""

    def __init__(
        self,
        *,
        tty: bool,
        stdin: bool,
        size: TerminalSize | None = None,
        running: Callable[[], bool] = lambda: True,
        on_close: Callable[[], None] = lambda: None,
        log: Callable[[bytes], None] | None = None,
    ) -> None:
        self.tty = tty
        self._log = log
        self.size = size or TerminalSize(80, 24)
        self._running = running
        self._on_close = on_close
        self._cond = threading.Condition()
        self._output: collections.deque[tuple[OutputStream, bytes]] = collections.deque()
        self._input = bytearray()
        self._line = bytearray()
        """With a tty: the line being typed (only a whole line reaches the program)."""
        self._input_open = stdin
        self._exit: int | None = None
        self._ended = False
        self._closed = False

    # --- the client's side

    def write_stdin(self, data: bytes) -> None:
        with self._cond:
            if not self._input_open or self._closed:
                return
            if self.tty:
                self._type(data)
            else:
                self._input += data
            self._cond.notify_all()

    def _type(self, data: bytes) -> None:
        """A terminal's line discipline in its default (canonical) mode."""
        echo = bytearray()
        for byte in data:
            char = bytes((byte,))
            if char in (b"\r", b"\n"):
                self._input += self._line + b"\n"
                self._line.clear()
                echo += b"\r\n"
            elif char == b"\x04":
                if not self._line:
                    self._input_open = False
                    break
                self._input += self._line
                self._line.clear()
            elif char == b"\x03":
                self._line.clear()
                echo += b"^C\r\n"
            elif char in (b"\x7f", b"\x08"):
                if self._line:
                    self._line.pop()
                    echo += b"\b \b"
            else:
                self._line += char
                echo += char
        if echo:
            self._output.append((OutputStream.STDOUT, bytes(echo)))

    def close_stdin(self) -> None:
        with self._cond:
            self._input_open = False
            self._cond.notify_all()

    def output(self) -> Iterator[tuple[OutputStream, bytes]]:
        while True:
            with self._cond:
                while not self._output and not self._ended and not self._closed:
                    self._cond.wait(_POLL)
                if self._closed or not self._output:
                    return
                chunks = list(self._output)
                self._output.clear()
            yield from chunks

    def resize(self, size: TerminalSize) -> None:
        if self.tty:
            with self._cond:
                self.size = size

    def wait(self, timeout: float | None = None) -> int | None:
        with self._cond:
            self._cond.wait_for(lambda: self._exit is not None or self._closed, timeout)
            return self._exit

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        self._on_close()

    @property
    def closed(self) -> bool:
        return self._closed

    # --- the program's side

    def emit(self, stream: OutputStream, data: bytes) -> None:
        if not data:
            return
        if self._log is not None:
            self._log(data)
        with self._cond:
            if self._closed:
                raise _Ended()
            if self.tty:
                stream, data = OutputStream.STDOUT, _LONE_NEWLINE.sub(b"\r\n", data)
            self._output.append((stream, data))
            self._cond.notify_all()

    def read_line(self) -> bytes | None:
        """The next line of stdin (with its newline; the last one may have none), None at the
        end of input."""
        return self._read(lambda: self._input.find(b"\n") + 1)

    def read_some(self) -> bytes | None:
        """What stdin has (waiting for something), None at the end of input."""
        return self._read(lambda: len(self._input))

    def _read(self, ready: Callable[[], int]) -> bytes | None:
        with self._cond:
            while True:
                if self._closed or not self._running():
                    raise _Ended()
                count = ready()
                if count or not self._input_open:
                    count = count or len(self._input)
                    data = bytes(self._input[:count])
                    del self._input[:count]
                    return data or None
                self._cond.wait(_POLL)

    def finish(self, code: int | None) -> None:
        with self._cond:
            self._exit = code
            self._ended = True
            self._cond.notify_all()


@attrs.define
class _Container:
    """What a program sees of the container it runs in."""

    env: dict[str, str]
    hostname: str
    files: Callable[[], dict[str, str]]
    write_file: Callable[[str, str], None]
    listening: Callable[[], frozenset[int]]
    processes: Callable[[], tuple[str, ...]]
    scripted: Callable[[tuple[str, ...]], ExecResult | None]
    clock: Clock


class _Program:
    """Runs one exec'd command against its session (the module docstring)."""

    def __init__(self, session: FakeSession, argv: tuple[str, ...], box: _Container) -> None:
        self.session = session
        self.argv = argv
        self.box = box

    def run(self) -> None:
        try:
            code = self.main()
        except _Exit as ended:
            code = ended.code
        except _Ended:  # closed, or the container stopped: killed with it
            code = 137
        except Exception as error:  # a bug of the fake's reading must still end the process
            code = 2
            with contextlib.suppress(_Ended):
                self.err(f"sh: the fake runtime failed: {error!r}\n".encode())
        self.session.finish(code)

    def main(self) -> int:
        scripted = self.box.scripted(self.argv)
        if scripted is not None:
            self.out(scripted.stdout)
            self.err(scripted.stderr)
            return scripted.exit_code
        name = os.path.basename(self.argv[0]) if self.argv else ""
        if name in SHELLS:
            script = shell_script(self.argv)
            return self.script(script) if script is not None else self.interactive()
        if name not in _KNOWN and name != "tar" and not self.builtin(name):
            self.err(f'exec: "{self.argv[0]}": executable file not found in $PATH\n'.encode())
            return 127
        return self.statement(Statement(self.argv))

    def out(self, data: bytes) -> None:
        self.session.emit(OutputStream.STDOUT, data)

    def err(self, data: bytes) -> None:
        self.session.emit(OutputStream.STDERR, data)

    def interactive(self) -> int:
        status = 0
        while True:  # until ``exit`` or the end of input
            if self.session.tty:
                self.out(PROMPT)
            line = self.session.read_line()
            if line is None:
                return status
            status = self.script(line.decode(errors="replace"))

    def script(self, text: str) -> int:
        status = 0
        for st in parse_script(text):
            if (st.condition == "&&" and status) or (st.condition == "||" and not status):
                continue
            status = self.statement(st)
        return status

    @staticmethod
    def builtin(name: str) -> bool:
        return name in ("echo", "printf", "exit", "stty", "ls", "pwd", "hostname", "env")

    def statement(self, st: Statement) -> int:
        words = [expand(w, self.box.env) for w in st.argv]
        while words and "=" in words[0] and words[0].split("=")[0].isidentifier():
            key, _, value = words.pop(0).partition("=")
            self.box.env[key] = value
        if not words:
            return 0
        name, args = os.path.basename(words[0]), words[1:]
        if st.complex:
            self.err(f"sh: the fake shell runs no pipes or compound commands: {st.argv}\n".encode())
            return 2
        if name == "exit":
            raise _Exit(exit_code_of(args))
        if name in SHELLS:
            script = shell_script(words)
            return self.script(script) if script is not None else self.interactive()
        if name == "cat" and all(a == "-" or a.startswith("-") for a in args):
            while (data := self.session.read_some()) is not None:
                self.out(data)
            return 0
        if self.builtin(name):
            return self.builtin_command(st, name, args)
        if name == "tar":
            return self.tar(args)
        if name in ("test", "[") and args[:1] == ["-d"] and len(args) > 1:
            directory = args[1].rstrip("/") + "/"
            return 0 if any(f.startswith(directory) for f in self.box.files()) else 1
        if name in _KNOWN:
            return self.known(words)
        self.err(f"sh: {name}: not found\n".encode())
        return 127

    def builtin_command(self, st: Statement, name: str, args: list[str]) -> int:
        text = ""
        if name == "echo":
            text = echo_text(args) + ("" if args[:1] == ["-n"] else "\n")
        elif name == "printf" and args:
            values = iter(args[1:])
            text = re.sub(r"%[sd]", lambda _: next(values, ""), args[0])
            text = text.replace("\\n", "\n").replace("\\t", "\t")
        elif name == "stty" and args == ["size"]:
            text = f"{self.session.size.height} {self.session.size.width}\n"
        elif name == "pwd":
            text = "/\n"
        elif name == "hostname":
            text = self.box.hostname + "\n"
        elif name == "env":
            text = "".join(f"{k}={v}\n" for k, v in self.box.env.items())
        elif name == "ls":
            text = _listing(self.box.files(), [a for a in args if not a.startswith("-")])
        if st.redirect:
            before = self.box.files().get(st.redirect, "") if st.append else ""
            self.box.write_file(st.redirect, before + text)
        else:
            self.out(text.encode("utf-8", "surrogateescape"))
        return 0

    def tar(self, args: list[str]) -> int:
        """``tar cf - [-C DIR] PATH...`` and ``tar xf - [-C DIR]`` (what ``kubectl cp`` runs) on
        the container's files, through stdin and stdout."""
        flags, rest = (args[0].lstrip("-"), args[1:]) if args else ("", [])
        directory = "/"
        paths: list[str] = []
        words = iter(rest)
        for word in words:
            if word == "-C":
                directory = next(words, "/")
            elif word != "-" and not word.startswith("-"):
                paths.append(word)
        if "f" not in flags or ("c" in flags) == ("x" in flags):
            self.err(b"tar: the fake runs only 'tar cf - PATH...' and 'tar xf -'\n")
            return 2
        if "x" in flags:
            data = bytearray()
            while (chunk := self.session.read_some()) is not None:
                data += chunk
            try:
                files = unpack_tar(bytes(data), directory)
            except tarfile.TarError as error:
                self.err(f"tar: {error}\n".encode())
                return 2
            for path, content in files.items():
                self.box.write_file(path, content)
            return 0
        packed, missing = pack_tar(self.box.files(), directory, paths)
        for path in missing:
            self.err(f"tar: {path}: No such file or directory\n".encode())
        self.out(packed)
        return 2 if missing else 0

    def known(self, words: list[str]) -> int:
        box = self.box
        outcome = read_exec(words, box.env, box.files(), box.listening(), box.processes())
        if outcome.duration > 0:
            box.clock.sleep(outcome.duration)
        self.out(outcome.stdout.encode("utf-8", "surrogateescape"))
        self.err(outcome.stderr.encode("utf-8", "surrogateescape"))
        return outcome.exit_code


def _reads_stdin(argv: tuple[str, ...]) -> bool:
    """Whether a container's command is a shell reading its commands from stdin."""
    return bool(argv) and os.path.basename(argv[0]) in SHELLS and shell_script(argv) is None


def _absolute(directory: str, path: str) -> str:
    return os.path.normpath(os.path.join("/", directory, path))


def pack_tar(files: Mapping[str, str], directory: str, paths: list[str]) -> tuple[bytes, list[str]]:
    """A tar of the files at or under each path (relative to ``directory``), named as given;
    and the paths that name nothing."""
    buffer = io.BytesIO()
    missing: list[str] = []
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path in paths:
            base = _absolute(directory, path)
            found = sorted(f for f in files if f == base or f.startswith(base.rstrip("/") + "/"))
            if not found:
                missing.append(path)
            for name in found:
                data = files[name].encode("utf-8", "surrogateescape")
                # Without the leading "/", as tar stores names (and kubectl cp expects).
                member = tarfile.TarInfo((path.rstrip("/") + name[len(base) :]).lstrip("/"))
                member.size, member.mode = len(data), 0o644
                archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue(), missing


def unpack_tar(data: bytes, directory: str) -> dict[str, str]:
    """The regular files of a tar, by absolute path under ``directory`` (never outside it)."""
    files: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
        for member in archive:
            target = _absolute(directory, member.name)
            root = _absolute(directory, ".")
            if not member.isfile() or not (target + "/").startswith(root.rstrip("/") + "/"):
                continue
            extracted = archive.extractfile(member)
            if extracted is not None:
                files[target] = extracted.read().decode("utf-8", "surrogateescape")
    return files


def _listing(files: Mapping[str, str], paths: list[str]) -> str:
    """The names under each path (default ``/``) among the container's known files."""
    names: set[str] = set()
    for path in paths or ["/"]:
        if path in files:
            names.add(path)
            continue
        prefix = path.rstrip("/") + "/"
        names.update(f[len(prefix) :].split("/")[0] for f in files if f.startswith(prefix))
    return "".join(f"{name}\n" for name in sorted(names))


class Streams:
    """``exec_stream`` and ``attach`` on the engine's containers."""

    def __init__(self, engine: Engine, execs: Execs) -> None:
        self._engine = engine
        self._execs = execs
        self._shells: set[str] = set()
        """Containers whose main shell an attach is driving now."""

    def exec_stream(
        self,
        container_id: str,
        argv: tuple[str, ...],
        *,
        stdin: bool,
        tty: bool,
        size: TerminalSize | None,
    ) -> FakeSession:
        with self._engine.lock:
            rec = self._engine.running(container_id)
        session = FakeSession(tty=tty, stdin=stdin, size=size, running=self._running(rec))
        program = _Program(session, argv, self._box(rec))
        threading.Thread(target=program.run, name=f"fake-exec-{container_id}", daemon=True).start()
        return session

    def _box(self, rec: ContainerRecord) -> _Container:
        engine = self._engine
        with engine.lock:
            view = engine.view(rec)
            env = dict(rec.config.env)

        def write_file(path: str, content: str) -> None:
            with engine.lock:
                rec.files[path] = content

        return _Container(
            env=env,
            hostname=rec.pod[0],
            files=lambda: self._locked(lambda: dict(rec.files)),
            write_file=write_file,
            listening=lambda: self._locked(lambda: engine.listening(rec.sandbox_id, rec)),
            processes=lambda: self._locked(lambda: engine.processes(rec)),
            scripted=lambda argv: self._execs.scripted(view, argv),
            clock=engine.clock,
        )

    def attach(self, container_id: str, *, stdin: bool, tty: bool) -> FakeSession:
        engine = self._engine
        with engine.lock:
            rec = engine.running(container_id)
            seen = len(rec.logs)
            argv = (*rec.config.command, *rec.config.args)
            shell = stdin and rec.config.stdin and _reads_stdin(argv) and rec.id not in self._shells
            if shell:
                self._shells.add(rec.id)
        if shell:
            return self._attach_shell(rec, argv, tty)

        def wake() -> None:
            with engine.cond:
                engine.cond.notify_all()

        session = FakeSession(tty=tty, stdin=stdin, on_close=wake)
        follower = threading.Thread(
            target=self._follow, args=(rec, seen, session), name=f"fake-attach-{rec.id}"
        )
        follower.daemon = True
        follower.start()
        return session

    def _attach_shell(self, rec: ContainerRecord, argv: tuple[str, ...], tty: bool) -> FakeSession:
        """The container's main process is a shell reading stdin (``stdin: true``, as ``kubectl
        run -it`` and ``kubectl debug -it`` make): this attach is its stdin; what it prints
        also goes to the log, and when it exits, the container exits with its code."""
        engine = self._engine

        def log(data: bytes) -> None:
            with engine.lock:
                engine.log(rec, data.decode("utf-8", "replace"))

        def detach() -> None:
            with engine.lock:
                self._shells.discard(rec.id)

        session = FakeSession(
            tty=tty, stdin=True, running=self._running(rec), log=log, on_close=detach
        )
        program = _Program(session, argv, self._box(rec))

        def run() -> None:
            program.run()
            detach()
            if not session.closed:  # it exited (a detach leaves it waiting for the next one)
                self._exit(rec, session.wait(0))

        threading.Thread(target=run, name=f"fake-attach-{rec.id}", daemon=True).start()
        return session

    def _exit(self, rec: ContainerRecord, code: int | None) -> None:
        engine = self._engine
        events: Events = []
        with engine.lock:
            if self._running(rec)():
                engine.exit(rec, 0 if code is None else code, "", "", events)
        engine.hub.emit(events)

    def _follow(self, rec: ContainerRecord, seen: int, session: FakeSession) -> None:
        """The container's log lines from ``seen`` on, to the session, until it stops."""
        engine = self._engine
        running = self._running(rec)
        while True:
            with engine.cond:
                while len(rec.logs) <= seen and running() and session.wait(0) is None:
                    if session.closed:
                        return
                    engine.cond.wait(_POLL)
                lines = [line for _, line in rec.logs[seen:]]
                seen = len(rec.logs)
                alive = running()
                code = rec.exit_code
            try:
                session.emit(OutputStream.STDOUT, "".join(f"{x}\n" for x in lines).encode())
            except _Ended:
                return
            if not alive:
                session.finish(code)
                return

    def _running(self, rec: ContainerRecord) -> Callable[[], bool]:
        engine = self._engine

        def running() -> bool:
            with engine.lock:
                return (
                    not engine.closed
                    and rec.state is RuntimeState.RUNNING
                    and engine.containers.get(rec.id) is rec
                )

        return running

    def _locked(self, read: Callable[[], _T]) -> _T:
        with self._engine.lock:
            return read()
