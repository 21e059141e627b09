"""The argument parser and ``main``: every error is one line that names its flag (for a mistyped
flag, with the closest one), then where the help is."""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any, NoReturn

from kubecore._cli.basic import (
    KUBECONFIG_HELP,
    UsageError,
    cmd_runtimes,
    cmd_validate,
    cmd_version,
    setup_logging,
)
from kubecore._plugins.commands import EXIT_FAILED, EXIT_USAGE

if TYPE_CHECKING:
    from kubecore._cli.settings import Setting

logger = logging.getLogger(__name__)

_INVALID_CHOICE = re.compile(r"invalid choice: '(.*?)'")


def did_you_mean(word: str, candidates: Sequence[str]) -> str:
    """`` (did you mean --resync?)`` for the closest candidate, or ""."""
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def unrecognized_message(extras: Sequence[str], options: Sequence[str]) -> str:
    message = f"unrecognized arguments: {' '.join(extras)}"
    for extra in extras:
        if extra.startswith("-"):
            return message + did_you_mean(extra.partition("=")[0], options)
    return message


class _Parser(argparse.ArgumentParser):
    """No abbreviated flags; an unknown command gets a did-you-mean."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_abbrev=False, **kwargs)

    def error(self, message: str) -> NoReturn:
        """The error and where the help is, not the usage: a command with many flags has a
        usage of dozens of lines, which would bury the one line that says what is wrong."""
        match = _INVALID_CHOICE.search(message)
        if match:
            message += did_you_mean(match.group(1), self._command_names())
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\nsee `{self.prog} --help`\n")

    def _command_names(self) -> list[str]:
        return [
            name
            for action in self._actions
            if isinstance(action, argparse._SubParsersAction)
            for name in action.choices
        ]

    def option_strings(self) -> list[str]:
        return [option for action in self._actions for option in action.option_strings]


class _CommandParser(_Parser):
    """A subcommand's parser: it reports its own unknown arguments, with its own usage
    (argparse leaves them to the top-level parser, whose usage says nothing of the flags)."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(unrecognized_message(extras, self.option_strings()))
        return parsed, extras


def _number_type(setting: Setting) -> Callable[[str], int | float]:
    from kubecore._cli.settings import parse_number

    def parse(text: str) -> int | float:
        try:
            return parse_number(setting, text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def _default_text(setting: Setting) -> str:
    if setting.kind in ("bool", "list", "strs", "options") or "default:" in setting.help:
        return ""
    value = setting.default()
    return (
        f" (default: {value:g})" if isinstance(value, float) else f" (default: {value or 'none'})"
    )


def _add_setting(run: argparse._ActionsContainer, setting: Setting) -> None:
    text = f"{setting.help}{_default_text(setting)} [env {setting.env}]"
    if setting.kind == "list":
        run.add_argument(
            setting.dest, nargs="*", metavar=setting.metavar, default=argparse.SUPPRESS, help=text
        )
    elif setting.kind == "bool":
        run.add_argument(
            setting.option,
            dest=setting.dest,
            action=argparse.BooleanOptionalAction,
            default=argparse.SUPPRESS,
            help=text,
        )
    elif setting.kind in ("options", "strs"):
        run.add_argument(
            setting.option,
            dest=setting.dest,
            action="append",
            metavar=setting.metavar,
            default=argparse.SUPPRESS,
            help=text,
        )
    else:
        converter: Callable[[str], Any] = (
            _number_type(setting) if setting.kind in ("int", "float") else str
        )
        run.add_argument(
            setting.option,
            dest=setting.dest,
            type=converter,
            metavar=setting.metavar,
            default=argparse.SUPPRESS,
            help=text,
        )


COMMANDS = frozenset({"run", "validate", "runtimes", "version", "kubeconfig", "plan", "why"})
"""kubecore's own commands. ``run``'s flags and ``kubeconfig``'s commands import much of
kubecore: their parsers are built in full only when named (or when no command is, for the
help). The plugins' commands (``kubecore_add_commands``) are asked for only when the command
line names none of these."""

PLUGIN_COMMANDS = {"etcd": ("bind pods to nodes in etcd and read their status", "kubecore[etcd]")}
"""The commands of the plugins kubecore ships, with what installs them: named while their plugin
is not installed (or is disabled), each says so instead of being an unknown command."""

_RUN_HELP = "run the agent"


def cmd_run(args: argparse.Namespace, out: IO[str]) -> int:
    from kubecore._cli.commands import cmd_run as run

    return run(args, out)


def build_parser(*, only: str | None = None) -> argparse.ArgumentParser:
    """The ``kubecore`` parser; with ``only`` one of kubecore's own ``COMMANDS``, the heavy ones
    (``run``'s flags, ``kubeconfig``'s commands) unless named are listed with their help but not
    parsable, and the plugins' commands are left out (no plugin is imported)."""
    parser = _Parser(
        prog="kubecore",
        description="The core of a container node agent (the Kubernetes kubelet) as a library.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)
    if only in (None, "run"):
        _add_run(commands)
    else:
        commands.add_parser("run", help=_RUN_HELP)

    validate = commands.add_parser(
        "validate",
        help="check manifests and print every problem",
        description=(
            "Check manifest files (or directories of them) and print every problem as "
            "'file: field.path: message'. Exits 1 if there is any problem, 0 if all are good."
        ),
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="manifest files or directories")
    validate.set_defaults(handler=cmd_validate)

    runtimes = commands.add_parser(
        "runtimes",
        help="list the installed runtime plugins",
        description="List the runtimes installed plugins offer, and any plugin that is broken.",
    )
    runtimes.set_defaults(handler=cmd_runtimes)

    version = commands.add_parser("version", help="print the version")
    version.set_defaults(handler=cmd_version)

    from kubecore._cli.plan import add_plan_commands  # imports the agent only when run

    add_plan_commands(commands)

    if only in (None, "kubeconfig"):
        from kubecore._cli.kubeconfig import add_kubeconfig_command  # imports no cryptography

        add_kubeconfig_command(commands)
    else:
        commands.add_parser("kubeconfig", help=KUBECONFIG_HELP)

    if only not in COMMANDS:
        _add_plugin_commands(commands)
    return parser


def _add_plugin_commands(commands: Any) -> None:
    """The plugins' subcommands (``kubecore_add_commands``); a command of a plugin kubecore
    ships that is not there answers how to install it."""
    from kubecore._plugins.commands import CommandSet
    from kubecore._plugins.registry import plugin_manager

    added = CommandSet(commands, reserved=COMMANDS)
    plugin_manager().add_commands(added)
    for name, (help_text, extra) in PLUGIN_COMMANDS.items():
        if name not in added.names:
            missing = commands.add_parser(name, help=f"{help_text} (needs {extra})")
            missing.add_argument("words", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
            missing.set_defaults(handler=_plugin_missing(name, extra))


def _plugin_missing(name: str, extra: str) -> Callable[[argparse.Namespace, IO[str]], int]:
    def handler(args: argparse.Namespace, out: IO[str]) -> int:
        sys.stderr.write(
            f"kubecore {name}: the plugin that provides this command is not installed (or is"
            f" disabled by KUBECORE_DISABLE_PLUGINS): pip install '{extra}'\n"
        )
        return EXIT_USAGE

    return handler


def _add_run(commands: Any) -> None:
    from kubecore._cli.run_help import RUN_EXAMPLES, RUN_FLAG_GROUPS
    from kubecore._cli.settings import ENV_PREFIX, RUN_SETTINGS

    run = commands.add_parser(
        "run",
        help=_RUN_HELP,
        usage="kubecore run [flags] [MANIFEST ...]",
        epilog=RUN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the examples' lines as written
        description=textwrap.fill(
            "Run the node agent: keep the pods of the manifests running on a container runtime "
            "and serve the kubelet HTTP API. Every flag can also be set with an environment "
            f"variable {ENV_PREFIX}<FLAG> (--node-name -> {ENV_PREFIX}NODE_NAME) or in a YAML "
            "config file (--config, keys named like the flags); flags win over the environment, "
            "the environment over the file.",
            78,
        ),
    )
    by_dest = {setting.dest: setting for setting in RUN_SETTINGS}
    for title, what, dests in RUN_FLAG_GROUPS:
        group = run.add_argument_group(title, what)
        for dest in dests:
            _add_setting(group, by_dest.pop(dest))
    for setting in by_dest.values():  # a setting no group names yet (a test requires none)
        _add_setting(run, setting)
    run.add_argument(
        "--config",
        metavar="FILE",
        default=None,
        help=f"a YAML file of settings named like the flags [env {ENV_PREFIX}CONFIG]",
    )
    run.set_defaults(handler=cmd_run)


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), if any."""
    return next((word for word in argv if not word.startswith("-")), None)


def console_main() -> NoReturn:
    """The ``kubecore`` console script and ``python -m kubecore``: ``main``, then a quick exit.

    By then the command has stopped its threads, released its root directory and written its
    output; the interpreter's teardown of every module and object would only add time to each
    command (tens of milliseconds after ``run --once``), so the process ends at once, as a
    compiled program would, once the output and the logs are flushed. Its warnings go to
    stderr (``run`` sets the level its ``--log-level`` names)."""
    setup_logging(logging.WARNING)
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: nothing left to say
        pass
    logging.shutdown()
    os._exit(code)


def main(argv: Sequence[str] | None = None, out: IO[str] | None = None) -> int:
    """The ``kubecore`` command. Returns the exit status (the console script exits with it)."""
    stream = out or sys.stdout
    words = sys.argv[1:] if argv is None else argv
    command = command_of(words)
    parser = build_parser(only=command)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else EXIT_USAGE if exit_.code else 0
        # ``plan`` exits 2 when something would change: its usage errors exit 1
        return EXIT_FAILED if command == "plan" and code == EXIT_USAGE else code
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(stream)
        return EXIT_USAGE
    try:
        return int(handler(args, stream))
    except UsageError as error:
        sys.stderr.write(f"kubecore: {error}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:  # only outside `run`'s own signal handling (e.g. during --once)
        sys.stderr.write("kubecore: interrupted\n")
        return 130
    except OSError as error:
        sys.stderr.write(f"kubecore: {error}\n")
        return EXIT_FAILED
    except Exception as error:
        from kubecore._contract.errors import KubecoreError  # loaded by the command that raised it

        if isinstance(error, KubecoreError):
            sys.stderr.write(f"kubecore: {error}\n")
            return EXIT_FAILED
        # a bug: one line for the user, the traceback at debug level
        logger.debug("unexpected error", exc_info=True)
        sys.stderr.write(f"kubecore: unexpected error: {type(error).__name__}: {error}\n")
        return EXIT_FAILED
