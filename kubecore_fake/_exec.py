"""``exec_sync`` in the in-memory runtime: the ``on_exec`` rules a test gives, else a built-in
reading of the command (the simple commands of probes and hooks: ``echo``, ``cat``, ``sleep``,
``exit``, ``test -e``, ``ps``, connecting to a port), in virtual time. An unknown statement
succeeds."""

from __future__ import annotations

import os.path
from collections.abc import Callable, Mapping, Sequence

import attrs

from kubecore.runtime import (
    CONTAINER_NAME_LABEL,
    Conflict,
    ExecResult,
    RuntimeContainer,
    RuntimeState,
    RuntimeTimeout,
)
from kubecore_fake import _shell
from kubecore_fake._engine import Engine
from kubecore_fake._shell import (
    connect_port,
    echo_text,
    exit_code_of,
    expand,
    parse_duration,
    statements,
)


@attrs.frozen
class ExecRequest:
    """What an ``on_exec`` handler is given."""

    container: RuntimeContainer
    argv: tuple[str, ...]


ExecHandler = Callable[[ExecRequest], ExecResult | int]
ExecMatcher = str | Sequence[str] | Callable[[tuple[str, ...]], bool]


@attrs.frozen
class _ExecRule:
    matcher: ExecMatcher
    handler: ExecHandler | ExecResult | int
    container: str | None


class Execs:
    """The ``on_exec`` rules (newest last) and the running of commands."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._rules: list[_ExecRule] = []

    def on_exec(
        self, matcher: ExecMatcher, handler: ExecHandler | ExecResult | int, container: str | None
    ) -> None:
        with self._engine.lock:
            self._rules.append(_ExecRule(matcher, handler, container))

    def run(self, container_id: str, argv: tuple[str, ...], timeout: float) -> ExecResult:
        engine = self._engine
        with engine.lock:
            rec = engine.get_container(container_id)
            if rec.state is not RuntimeState.RUNNING:
                raise Conflict(f"container {container_id} is not running")
            view = engine.view(rec)
            rule = self._rule(view, argv)
            files = dict(rec.files)
            listening = engine.listening(rec.sandbox_id, rec)
            processes = engine.processes(rec)
            env = dict(rec.config.env)
        limit = timeout if timeout > 0 else float("inf")
        clock = engine.clock
        if rule is not None:
            started = clock.monotonic()
            result = _exec_result(rule.handler, ExecRequest(view, argv))
            if clock.monotonic() - started > limit:
                raise RuntimeTimeout(f"exec {list(argv)} in {container_id}: timed out")
            return result
        outcome = read_exec(argv, env, files, listening, processes)
        if outcome.duration > limit:
            clock.sleep(limit)
            raise RuntimeTimeout(
                f"exec {list(argv)} in {container_id}: timed out after {timeout} s"
            )
        clock.sleep(outcome.duration)
        return ExecResult(outcome.exit_code, outcome.stdout.encode(), outcome.stderr.encode())

    def scripted(self, view: RuntimeContainer, argv: tuple[str, ...]) -> ExecResult | None:
        """What the newest ``on_exec`` rule matching ``argv`` in the container answers (None:
        no rule matches)."""
        with self._engine.lock:
            rule = self._rule(view, argv)
        return None if rule is None else _exec_result(rule.handler, ExecRequest(view, argv))

    def _rule(self, view: RuntimeContainer, argv: tuple[str, ...]) -> _ExecRule | None:
        names = {view.id, view.name, view.labels.get(CONTAINER_NAME_LABEL, view.name)}
        for rule in reversed(self._rules):
            if rule.container is not None and rule.container not in names:
                continue
            if _exec_matches(rule.matcher, argv):
                return rule
        return None


def _exec_matches(matcher: ExecMatcher, argv: tuple[str, ...]) -> bool:
    if isinstance(matcher, str):
        return matcher in (" ".join(argv), _shell.shell_script(argv))
    if callable(matcher):
        return bool(matcher(argv))
    prefix = tuple(matcher)
    return argv[: len(prefix)] == prefix


def _exec_result(handler: ExecHandler | ExecResult | int, request: ExecRequest) -> ExecResult:
    answer = handler(request) if callable(handler) else handler
    return ExecResult(answer) if isinstance(answer, int) else answer


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
        if (
            not st.argv
            or (st.condition == "&&" and status)
            or (st.condition == "||" and not status)
        ):
            continue
        name = os.path.basename(st.argv[0])
        args = st.argv[1:]
        if st.complex:
            status = 0
        elif name == "echo":
            text = echo_text([expand(w, env) for w in args]) + "\n"
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
            status = exit_code_of(args)
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
