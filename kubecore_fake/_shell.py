"""A small, pure reading of the shell commands example manifests use.

It is not a shell: it recognises a handful of statements (``true``, ``false``, ``exit N``,
``echo X``, ``sleep N``, ``touch F``, ``rm F``, ``cat F``, ``trap ... TERM``, ``nc -l -p P``,
``httpd -p P``, ``nc H P``, ``wget URL``, ``wait``) so that a container or an exec behaves
realistically without a script. Anything else is "unknown": a container whose last statement
is unknown runs until stopped; an unknown exec statement succeeds.
"""

from __future__ import annotations

import math
import os.path
import re
import shlex
import urllib.parse
from collections.abc import Mapping, Sequence

import attrs

SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh", "busybox-sh"})
_SEPARATORS = frozenset({";", "&", "&&", ";;"})
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
    lexer = shlex.shlex(text.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: treat the whole script as one unknown statement
        return (Statement((text,), complex=True),)
    result: list[Statement] = []
    current: list[str] = []
    for token in tokens:
        if token in _SEPARATORS:
            if current:
                result.append(_statement(current, background=token == "&"))
            current = []
        else:
            current.append(token)
    if current:
        result.append(_statement(current, background=False))
    return tuple(result)


def _statement(tokens: list[str], background: bool) -> Statement:
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
        if token in ("|", "||", "(", ")", "|&"):
            complex_ = True
        argv.append(token)
        i += 1
    return Statement(tuple(argv), redirect, append, background, complex_)


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


def _echo_text(args: Sequence[str], env: Mapping[str, str]) -> str:
    words = list(args)
    while words and words[0] in ("-n", "-e", "-ne", "-en", "-E"):
        words = words[1:]
    return " ".join(expand(w, env) for w in words)


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


def _exit_code(args: Sequence[str]) -> int:
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


@attrs.frozen
class Program:
    """What a container command does, as far as this reader can tell."""

    timeline: tuple[TimedLog | TimedFile, ...] = ()
    exit_code: int | None = None
    """None: runs until stopped."""
    after: float = 0.0
    traps_term: bool = True
    ports: tuple[int, ...] = ()


def read_program(argv: Sequence[str], env: Mapping[str, str]) -> Program:
    """Read a container's command (command + args). An empty command runs until stopped."""
    if not argv:
        return Program()
    is_shell = shell_script(argv) is not None
    timeline: list[TimedLog | TimedFile] = []
    ports: list[int] = []
    t = 0.0
    last: int | None = None  # exit status of the last statement; None: runs forever
    traps = not is_shell and os.path.basename(argv[0]) not in ("sleep",)
    background_server = False
    for st in statements(argv):
        if not st.argv:
            continue
        name = os.path.basename(st.argv[0])
        args = st.argv[1:]
        port = listen_port(st.argv)
        if port is not None:
            ports.append(port)
        if st.complex:
            last = None
        elif port is not None:
            if st.background:
                background_server = True
            else:
                last = None
        elif name == "echo":
            text = _echo_text(args, env)
            if st.redirect:
                timeline.append(TimedFile(t, st.redirect, text + "\n"))
            else:
                timeline.append(TimedLog(t, text))
            last = 0
        elif name == "sleep":
            seconds = parse_duration(args[0]) if args else None
            if seconds is None or math.isinf(seconds):
                last = None
            else:
                t += seconds
                last = 0
        elif name in ("true", ":"):
            last = 0
        elif name == "false":
            last = 1
        elif name == "exit":
            return Program(tuple(timeline), _exit_code(args), t, traps, tuple(ports))
        elif name == "touch":
            timeline.extend(TimedFile(t, path, "") for path in args if not path.startswith("-"))
            last = 0
        elif name == "rm":
            timeline.extend(TimedFile(t, path, None) for path in args if not path.startswith("-"))
            last = 0
        elif name == "trap":
            traps = traps or _traps_term(st.argv)
            last = 0
        elif name == "wait":
            last = None if background_server else 0
        else:
            last = None
    return Program(tuple(timeline), last, t, traps, tuple(ports))


# -- exec -------------------------------------------------------------------------------------


@attrs.frozen
class ExecOutcome:
    exit_code: int
    stdout: str = ""
    stderr: str = ""
    duration: float = 0.0


def read_exec(
    argv: Sequence[str],
    env: Mapping[str, str],
    files: Mapping[str, str],
    listening: frozenset[int],
    processes: Sequence[str] = (),
) -> ExecOutcome:
    """Run an exec command against a container's (fake) files, listening ports and the
    processes (command lines) it can see."""
    stdout: list[str] = []
    stderr: list[str] = []
    duration = 0.0
    status = 0
    written = dict(files)
    for st in statements(argv):
        if not st.argv:
            continue
        name = os.path.basename(st.argv[0])
        args = st.argv[1:]
        if st.complex:
            status = 0
        elif name == "echo":
            text = _echo_text(args, env) + "\n"
            if st.redirect:
                written[st.redirect] = (written.get(st.redirect, "") if st.append else "") + text
            else:
                stdout.append(text)
            status = 0
        elif name == "cat":
            status = 0
            for path in (a for a in args if not a.startswith("-")):
                if path in written:
                    stdout.append(written[path])
                else:
                    stderr.append(f"cat: can't open '{path}': No such file or directory\n")
                    status = 1
        elif name == "sleep":
            seconds = parse_duration(args[0]) if args else None
            duration += 0.0 if seconds is None else seconds
            status = 0
        elif name in ("true", ":"):
            status = 0
        elif name == "false":
            status = 1
        elif name == "exit":
            status = _exit_code(args)
            break
        elif (port := connect_port(st.argv)) is not None:
            if port in listening:
                status = 0
            else:
                stderr.append(f"{name}: can't connect to remote host: Connection refused\n")
                status = 1
        elif name == "ps":
            lines = (f"{pid:>5} root      0:00 {cmd}\n" for pid, cmd in enumerate(processes, 1))
            stdout.append("PID   USER     TIME  COMMAND\n" + "".join(lines))
            status = 0
        elif name in ("test", "[") and len(args) >= 2 and args[0] in ("-e", "-f"):
            status = 0 if args[1] in written else 1
        else:
            status = 0
    return ExecOutcome(status, "".join(stdout), "".join(stderr), duration)
