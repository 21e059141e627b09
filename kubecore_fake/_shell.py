"""A small, pure reading of the shell commands example manifests use.

It is not a shell: it interprets the simple commands example manifests use (``true``,
``false``, ``:``, ``exit N``, ``echo``, ``printf``, ``sleep N``, ``touch``, ``mkdir``, ``rm``,
``cat``, ``printenv``, ``set -e``, ``trap ... TERM``, ``wait``, ``exec``, ``wget``/``curl``,
``nc -l -p P``, ``httpd -p P``, variable assignments) with ``;``, ``&&``, ``||``, ``&`` and
``>``/``>>`` redirections, in virtual time, so that a container or an exec behaves realistically
without a script. A ``while``/``until`` loop, ``sleep infinity``, ``tail -f`` and the servers of
common images (nginx, httpd, redis-server, ...) run until stopped. Anything else (pipes, ``if``,
``for``, unknown programs inside a script) ends the container with ``UNSUPPORTED_EXIT_CODE`` and
an "unsupported by the fake runtime" termination message. The exec commands are read in
``kubecore_fake._exec``, with the helpers here.
"""

from __future__ import annotations

import math
import os.path
import re
import shlex
import urllib.parse
from collections.abc import Callable, Mapping, Sequence

import attrs

SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh", "busybox-sh"})
_SEPARATORS = frozenset({";", "&", "&&", "||", ";;"})
_KEYWORDS = frozenset({"do", "then", "else", "{", "!"})
_ENV_REF = re.compile(r"\$(\w+)|\$\{(\w+)\}")
_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@attrs.frozen
class Statement:
    argv: tuple[str, ...]
    redirect: str = ""
    """The file ``>`` or ``>>`` writes to ('' for stdout)."""
    append: bool = False
    background: bool = False
    complex: bool = False
    """A pipe, subshell or other construct this reader does not follow."""
    condition: str = ""
    """``&&`` or ``||`` when it runs only if the statement before it succeeded or failed."""


def effective_argv(command: Sequence[str], args: Sequence[str]) -> tuple[str, ...]:
    return (*command, *args)


def shell_script(argv: Sequence[str]) -> str | None:
    """The script of ``sh -c 'SCRIPT'`` (any common shell, ``-c`` possibly combined: ``-ec``)."""
    if len(argv) < 3 or os.path.basename(argv[0]) not in SHELLS:
        return None
    for i, arg in enumerate(argv[1:], start=1):
        if arg.startswith("-") and "c" in arg[1:] and not arg.startswith("--"):
            return argv[i + 1] if i + 1 < len(argv) else None
        if not arg.startswith("-"):
            return None
    return None


def statements(argv: Sequence[str]) -> tuple[Statement, ...]:
    script = shell_script(argv)
    if script is None:
        return (Statement(tuple(argv)),) if argv else ()
    return parse_script(script)


def parse_script(text: str) -> tuple[Statement, ...]:
    lexer = shlex.shlex(_lines_as_statements(text), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: treat the whole script as one unknown statement
        return (Statement((text,), complex=True),)
    result: list[Statement] = []
    current: list[str] = []
    condition = ""
    for token in tokens:
        if token in _SEPARATORS:
            if current:
                result.append(_statement(current, token == "&", condition))
            current = []
            condition = token if token in ("&&", "||") else ""
        else:
            current.append(token)
    if current:
        result.append(_statement(current, False, condition))
    return tuple(result)


def _lines_as_statements(text: str) -> str:
    """The script with each line break outside quotes made a ``;`` (a quoted one is kept: it
    belongs to a value, as in ``echo "A='a'<newline>B='b'" > file``)."""
    out: list[str] = []
    quote = ""
    escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "\n":
            out.append(" ; ")
            continue
        out.append(char)
    return "".join(out)


def _statement(tokens: list[str], background: bool, condition: str) -> Statement:
    while tokens and tokens[0] in _KEYWORDS:
        tokens = tokens[1:]
    argv: list[str] = []
    redirect = ""
    append = False
    complex_ = False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        target = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token in (">", ">>"):
            if argv and argv[-1] == "2":  # 2> FILE: stderr goes elsewhere
                argv.pop()
            else:
                redirect, append = target, token == ">>"
            i += 2
            continue
        if token in (">&", "<", "<<", "&>"):
            if argv and argv[-1] in ("1", "2") and token == ">&":
                argv.pop()
            i += 2
            continue
        if token in ("|", "(", ")", "|&"):
            complex_ = True
        argv.append(token)
        i += 1
    return Statement(tuple(argv), redirect, append, background, complex_, condition)


def _endless_pipeline(words: Sequence[str]) -> bool:
    """A pipeline (no subshell) of which one stage never ends: a loop, a server, ``tail -f``
    or ``sleep infinity``. The whole pipeline then runs until stopped."""
    if any(w in ("(", ")") for w in words):
        return False
    stages: list[list[str]] = [[]]
    for word in words:
        if word in ("|", "|&"):
            stages.append([])
        else:
            stages[-1].append(word)
    return len(stages) > 1 and any(_endless(stage) for stage in stages if stage)


def _endless(argv: Sequence[str]) -> bool:
    name, args = os.path.basename(argv[0]), argv[1:]
    if name in _LOOPS or name in _DAEMONS:
        return True
    if name == "tail":
        return any(a in ("-f", "-F") for a in args)
    return name == "sleep" and bool(args) and parse_duration(args[0]) == math.inf


def expand(word: str, env: Mapping[str, str]) -> str:
    return _ENV_REF.sub(lambda m: env.get(m.group(1) or m.group(2), ""), word)


def parse_duration(word: str) -> float | None:
    """Seconds for ``sleep``'s argument; ``math.inf`` for ``infinity``; None if unreadable."""
    if word in ("infinity", "inf"):
        return math.inf
    match = _DURATION.match(word)
    if match is None:
        return None
    return float(match.group(1)) * _UNITS[match.group(2)]


def echo_text(args: Sequence[str]) -> str:
    words = list(args)
    while words and words[0] in ("-n", "-e", "-ne", "-en", "-E"):
        words = words[1:]
    return " ".join(words)


def listen_port(argv: Sequence[str]) -> int | None:
    """The port of ``nc -l[k] -p PORT`` / ``nc -lp PORT`` / ``httpd ... -p PORT``, if any."""
    if not argv:
        return None
    name = os.path.basename(argv[0])
    if name == "nc" and not any(a.startswith("-") and "l" in a for a in argv[1:]):
        return None
    if name not in ("nc", "httpd", "busybox"):
        return None
    words = list(argv[1:])
    for i, word in enumerate(words):
        if word.startswith("-") and word.endswith("p") and i + 1 < len(words):
            port = words[i + 1].rsplit(":", 1)[-1]
            return int(port) if port.isdigit() else None
    return None


_OPTIONS_WITH_VALUES = frozenset({"-w", "-i", "-p", "-s", "-q", "-O", "-o", "-T", "-U", "-H"})


def connect_port(argv: Sequence[str]) -> int | None:
    """The port a client command connects to: ``nc [-z] HOST PORT``, ``wget URL``, ``curl URL``."""
    if not argv:
        return None
    name = os.path.basename(argv[0])
    if name == "nc":
        if any(a.startswith("-") and "l" in a for a in argv[1:]):
            return None
        positional: list[str] = []
        skip = False
        for arg in argv[1:]:
            if skip:
                skip = False
            elif arg in _OPTIONS_WITH_VALUES:
                skip = True
            elif not arg.startswith("-"):
                positional.append(arg)
        return int(positional[1]) if len(positional) == 2 and positional[1].isdigit() else None
    if name in ("wget", "curl"):
        for arg in argv[1:]:
            if "://" in arg:
                parts = urllib.parse.urlsplit(arg)
                try:
                    port = parts.port
                except ValueError:
                    return None
                return port or (443 if parts.scheme == "https" else 80)
    return None


def _traps_term(argv: Sequence[str]) -> bool:
    return os.path.basename(argv[0]) == "trap" and any(
        a in ("TERM", "SIGTERM", "15", "EXIT") for a in argv[2:]
    )


def exit_code_of(args: Sequence[str]) -> int:
    if not args:
        return 0
    try:
        return int(args[0]) % 256
    except ValueError:
        return 2


# -- containers -------------------------------------------------------------------------------


@attrs.frozen
class TimedLog:
    """A line the container prints ``at`` seconds after it starts."""

    at: float
    line: str


@attrs.frozen
class TimedFile:
    """A file the container writes (``content``) or deletes (None) ``at`` seconds after start."""

    at: float
    path: str
    content: str | None


UNSUPPORTED = "unsupported by the fake runtime"
UNSUPPORTED_EXIT_CODE = 127
"""What a statement the reader cannot interpret exits with (a shell's "cannot run" code), with
``UNSUPPORTED`` and the statement as the termination message."""

_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_LOOPS = frozenset({"while", "until"})
_UNSUPPORTED_CONSTRUCTS = frozenset({"if", "for", "case", "select", "function", "fi", "done"})
_DAEMONS = frozenset(
    {"nginx", "httpd", "apache2-foreground", "redis-server", "memcached", "mysqld", "postgres"}
)
"""Servers of common images: run in the foreground, they run until stopped."""
_QUIET_COMMANDS = frozenset({"cd", "export", "umask", "ulimit", "shift", "unset", "readonly"})
_FINITE_PROGRAMS = frozenset(
    {"echo", "printf", "cat", "ls", "sleep", "true", "false", ":", "touch", "mkdir", "rm", "wget"}
    | {"curl", "printenv", "env", "exit"}
)


@attrs.frozen
class Program:
    """What a container command does, as far as this reader can tell."""

    timeline: tuple[TimedLog | TimedFile, ...] = ()
    exit_code: int | None = None
    """None: runs until stopped."""
    after: float = 0.0
    traps_term: bool = True
    ports: tuple[int, ...] = ()
    message: str = ""
    """The termination message it leaves (set when it stops on an unsupported statement)."""


FileReader = Callable[[str], "str | None"]
DirLister = Callable[[str], "tuple[str, ...] | None"]
"""The names in a directory the container can see (its mounts), or None when no mount holds
it (the image's own directories are not known). Raises ``NotADirectoryError`` for a mounted
file, ``FileNotFoundError`` for a path under a mount that is not there."""


def _no_files(path: str) -> str | None:
    return None


def _no_dirs(path: str) -> tuple[str, ...] | None:
    return None


def read_program(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    is_init: bool = False,
    read_file: FileReader = _no_files,
    list_dir: DirLister = _no_dirs,
) -> Program:
    """Read a container's command (command + args). An empty command runs until stopped.

    A bare command the reader does not know is the image's server in an app container (it runs
    until stopped); an init container is expected to finish, so there it is unsupported, as is
    any statement of a shell script the reader cannot interpret: the container exits with
    ``UNSUPPORTED_EXIT_CODE`` and says why in its termination message instead of hanging.
    ``read_file`` gives the content of a file the container can read (its mounts), for ``cat``;
    ``list_dir`` the names in one of its mounted directories, for ``ls``.
    """
    if not argv:
        return Program()
    if shell_script(argv) is None:
        name = os.path.basename(argv[0])
        port = listen_port(argv)
        if port is not None:
            return Program(ports=(port,), traps_term=True)
        if name not in _FINITE_PROGRAMS and not is_init:
            return Program(traps_term=name != "sleep")
        interpreter = _Interpreter(dict(env), is_init, read_file, list_dir, traps=name != "sleep")
        return interpreter.run((Statement(tuple(argv)),))
    return _Interpreter(dict(env), is_init, read_file, list_dir, traps=False).run(statements(argv))


@attrs.define
class _Interpreter:
    """Runs a script's statements in virtual time, collecting what they print and write."""

    env: dict[str, str]
    is_init: bool
    read_file: FileReader
    list_dir: DirLister
    traps: bool
    timeline: list[TimedLog | TimedFile] = attrs.Factory(list)
    files: dict[str, str] = attrs.Factory(dict)
    ports: list[int] = attrs.Factory(list)
    t: float = 0.0
    status: int = 0
    errexit: bool = False
    background_server: bool = False

    def program(self, exit_code: int | None, message: str = "") -> Program:
        return Program(
            tuple(self.timeline), exit_code, self.t, self.traps, tuple(self.ports), message
        )

    def run(self, script: Sequence[Statement]) -> Program:
        for index, st in enumerate(script):
            if not st.argv:
                continue
            if (st.condition == "&&" and self.status != 0) or (
                st.condition == "||" and self.status == 0
            ):
                continue
            ended = self.statement(st)
            if ended is not None:
                return ended
            following = script[index + 1].condition if index + 1 < len(script) else ""
            if self.errexit and self.status != 0 and following not in ("&&", "||"):
                return self.program(self.status)
        return self.program(self.status)

    def unsupported(self, st: Statement) -> Program:
        what = " ".join(st.argv)
        self.timeline.append(TimedLog(self.t, f"sh: {what}: {UNSUPPORTED}"))
        return self.program(UNSUPPORTED_EXIT_CODE, f"{UNSUPPORTED}: {what}")

    def output(self, st: Statement, text: str) -> None:
        """``text`` (whole lines) to the log, or to the statement's redirect file."""
        if st.redirect:
            before = self.files.get(st.redirect, "") if st.append else ""
            self.files[st.redirect] = before + text
            self.timeline.append(TimedFile(self.t, st.redirect, self.files[st.redirect]))
            return
        self.timeline.extend(TimedLog(self.t, line) for line in text.splitlines())

    def statement(self, st: Statement) -> Program | None:
        """Run one statement; a Program when the container's fate is decided by it."""
        words = [expand(w, self.env) for w in st.argv]
        while words and _ASSIGNMENT.match(words[0]):
            name, _, value = words.pop(0).partition("=")
            self.env[name] = value
        if not words:
            self.status = 0
            return None
        name = os.path.basename(words[0])
        args = words[1:]
        if name in _LOOPS:
            return self.program(None)  # a loop whose condition is not read: runs until stopped
        if st.complex and _endless_pipeline(words):
            if st.background:
                self.status = 0
                return None
            return self.program(None)  # ``tail -F FILE | while read line; ...``: runs on
        if st.complex or name in _UNSUPPORTED_CONSTRUCTS:
            return self.unsupported(st)
        port = listen_port(words)
        if port is not None:
            self.ports.append(port)
            if not st.background:
                return self.program(None)
            self.background_server = True
            self.status = 0
            return None
        if name == "exec":
            return self.exec(st, words[1:])
        if name in _DAEMONS or (name == "tail" and any(a in ("-f", "-F") for a in args)):
            if st.background:
                self.status = 0
                return None
            return self.program(None)  # a server, or ``tail -f``: runs until stopped
        return self.simple(st, name, args, words)

    def simple(self, st: Statement, name: str, args: list[str], words: list[str]) -> Program | None:
        """Run a simple command (``name`` with ``args``; ``words`` the whole expanded
        statement); a Program when it decides the container's fate."""
        if name == "echo":
            self.output(st, echo_text(args) + ("" if args[:1] == ["-n"] else "\n"))
        elif name == "printf":
            self.output(st, _printf_text(args))
        elif name == "cat":
            self.cat(st, args)
            return None
        elif name == "ls":
            return self.ls(st, args)
        elif name in ("printenv", "env"):
            self.printenv(st, args if name == "printenv" else [])
            return None
        elif name == "sleep":
            seconds = parse_duration(args[0]) if args else None
            if seconds is None:
                return self.unsupported(st)
            if math.isinf(seconds):
                return self.program(None)
            self.t += seconds
        elif name == "exit":
            return self.program(exit_code_of(args))
        elif name == "false":
            self.status = 1
            return None
        elif name == "touch":
            for path in (a for a in args if not a.startswith("-")):
                self.files.setdefault(path, "")
                self.timeline.append(TimedFile(self.t, path, self.files[path]))
        elif name == "rm":
            for path in (a for a in args if not a.startswith("-")):
                self.files.pop(path, None)
                self.timeline.append(TimedFile(self.t, path, None))
        elif name == "trap":
            self.traps = self.traps or _traps_term(words)
        elif name == "wait":
            if self.background_server:
                return self.program(None)
        elif name == "set":
            self.errexit = self.errexit or any(
                a.startswith("-") and "e" in a[1:] for a in args if not a.startswith("--")
            )
        elif name in ("wget", "curl"):
            return self.fetch(st, name, args)
        elif name not in ("true", ":", "mkdir", *_QUIET_COMMANDS):
            return self.unsupported(st)
        self.status = 0
        return None

    def exec(self, st: Statement, argv: list[str]) -> Program | None:
        if not argv:
            self.status = 0
            return None
        name = os.path.basename(argv[0])
        if name not in _FINITE_PROGRAMS and listen_port(argv) is None and not self.is_init:
            self.traps = name != "sleep"
            return self.program(None)  # the image's server replaces the shell
        ended = self.statement(attrs.evolve(st, argv=tuple(argv)))
        return ended if ended is not None else self.program(self.status)

    def cat(self, st: Statement, args: list[str]) -> None:
        text: list[str] = []
        self.status = 0
        for path in (a for a in args if not a.startswith("-")):
            content = self.files[path] if path in self.files else self.read_file(path)
            if content is None:
                self.timeline.append(
                    TimedLog(self.t, f"cat: can't open '{path}': No such file or directory")
                )
                self.status = 1
            else:
                text.append(content)
        if text:
            self.output(st, "".join(text))

    def ls(self, st: Statement, args: list[str]) -> Program | None:
        """``ls [-1aA] PATH...`` of mounted directories and of files the script wrote, as
        busybox prints it to a pipe: one name a line, sorted, dot-names only with -a/-A, files
        first, then each directory under a ``PATH:`` header when there are several. Anything
        else (long listings, the image's own directories) is unsupported."""
        flags = "".join(a[1:] for a in args if a.startswith("-") and a != "-")
        paths = [a for a in args if not a.startswith("-") or a == "-"]
        if not paths or not set(flags) <= {"1", "a", "A"}:
            return self.unsupported(st)
        files: list[str] = []
        listings: list[tuple[str, list[str]]] = []
        self.status = 0
        for path in paths:
            try:
                names = self.names_in(path)
            except NotADirectoryError:
                files.append(path)
                continue
            except FileNotFoundError:
                self.timeline.append(TimedLog(self.t, f"ls: {path}: No such file or directory"))
                self.status = 1
                continue
            if names is None:
                return self.unsupported(st)
            every = "a" in flags or "A" in flags
            shown = sorted(n for n in names if every or not n.startswith("."))
            listings.append((path, ([".", ".."] if "a" in flags else []) + shown))
        blocks = ["".join(f"{f}\n" for f in sorted(files))] if files else []
        headed = len(files) + len(listings) > 1
        for path, names in listings:
            blocks.append((f"{path}:\n" if headed else "") + "".join(f"{n}\n" for n in names))
        if blocks:
            self.output(st, "\n".join(blocks))
        return None

    def names_in(self, path: str) -> list[str] | None:
        """The names in directory ``path``: its mount's and those the script wrote there;
        None when no mount holds it and the script wrote nothing there. Raises
        ``NotADirectoryError`` for a file, ``FileNotFoundError`` for a missing mounted path."""
        if path in self.files:
            raise NotADirectoryError(path)
        directory = path.rstrip("/") or "/"
        written = {
            f[len(directory) :].lstrip("/").split("/")[0]
            for f in self.files
            if f.startswith(directory.rstrip("/") + "/")
        }
        try:
            listed = self.list_dir(directory)
        except FileNotFoundError:
            if written:
                return sorted(written)
            raise
        if listed is None:
            return sorted(written) if written else None
        return sorted(set(listed) | written)

    def printenv(self, st: Statement, names: list[str]) -> None:
        if not names:
            self.output(st, "".join(f"{k}={v}\n" for k, v in self.env.items()))
            self.status = 0
            return
        found = [self.env[n] for n in names if n in self.env]
        if found:
            self.output(st, "".join(f"{v}\n" for v in found))
        self.status = 0 if len(found) == len(names) else 1

    def fetch(self, st: Statement, name: str, args: list[str]) -> Program | None:
        """``wget``/``curl`` of an http(s) URL succeed at once (there is no network to reach):
        a deterministic stand-in for the fetch, written to ``-O``/``-o`` FILE when given (an
        empty file) and recorded in the log. Other URLs are unsupported."""
        urls = [a for a in args if "://" in a]
        if len(urls) != 1 or urllib.parse.urlsplit(urls[0]).scheme not in ("http", "https"):
            return self.unsupported(st)
        url = urls[0]
        flag = "-O" if name == "wget" else "-o"
        target = _option_value(args, flag)
        if name == "wget" and target is None:
            target = os.path.basename(urllib.parse.urlsplit(url).path) or "index.html"
        host = urllib.parse.urlsplit(url).netloc
        self.timeline.append(TimedLog(self.t, f"Connecting to {host}"))
        if target not in (None, "-", "/dev/null"):
            self.files[target] = ""
            self.timeline.append(TimedFile(self.t, target, ""))
        self.status = 0
        return None


def _option_value(args: Sequence[str], flag: str) -> str | None:
    """The value of ``-O FILE`` / ``-OFILE`` (also inside combined flags such as ``-qO``)."""
    for i, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and flag[1] in arg[1:]:
            rest = arg[arg.index(flag[1]) + 1 :]
            if rest:
                return rest
            return args[i + 1] if i + 1 < len(args) else None
    return None


def _printf_text(args: Sequence[str]) -> str:
    """``printf FORMAT ARGS``: ``%s``/``%d`` take the arguments in turn, ``\\n`` and ``\\t``
    are read."""
    if not args:
        return ""
    values = iter(args[1:])
    text = re.sub(r"%[sd]", lambda _: next(values, ""), args[0])
    return text.replace("%%", "%").replace("\\n", "\n").replace("\\t", "\t")
