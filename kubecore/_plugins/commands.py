"""The subcommands a plugin adds to the ``kubecore`` command (the ``kubecore_add_commands`` hook).

A plugin's hook gets a ``CommandSet`` and adds each command with ``commands.add(name, help=...)``:
an ``argparse`` parser, on which the plugin declares its arguments (or subcommands of its own) and
sets ``handler``, called as ``handler(args, out) -> exit status`` with the parsed arguments and
the stream to write the command's output to::

    @hookimpl
    def kubecore_add_commands(commands):
        mine = commands.add("mine", help="what my command does")
        mine.add_argument("--name")
        mine.set_defaults(handler=lambda args, out: out.write(f"hi {args.name}\\n") and 0)

The hook is called only when the command line may need it (``kubecore --help``, or a command
kubecore does not define itself), so a plugin's module must stay light to import: its commands
import what they need when they run.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Collection
from typing import IO, Any

EXIT_OK = 0
"""The command did what it was asked."""
EXIT_FAILED = 1
"""The command ran and failed (a problem in a manifest, an engine or a service that answered no)."""
EXIT_USAGE = 2
"""The command line was wrong (an unknown flag, a missing argument): nothing was done."""

CommandHandler = Callable[[argparse.Namespace, IO[str]], int]
"""What a command's parser sets as ``handler``: called with the parsed arguments and the output
stream, it returns the exit status (``EXIT_OK``, ``EXIT_FAILED``, ``EXIT_USAGE``)."""

_COMMAND_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")


class CommandSet:
    """Handed to each plugin's ``kubecore_add_commands`` hook: the ``kubecore`` command's
    subcommands, which the plugin adds to with ``add``."""

    def __init__(self, subparsers: Any, reserved: Collection[str]) -> None:
        self._subparsers = subparsers
        self._reserved = frozenset(reserved)
        self._owners: dict[str, str] = {}
        self._plugin = ""

    def add(self, name: str, *, help: str, description: str = "") -> argparse.ArgumentParser:
        """Add ``kubecore <name>``: its parser, on which the plugin declares its arguments and
        sets ``handler`` (``parser.set_defaults(handler=...)``). A name kubecore or another
        plugin already has is a ``PluginError``."""
        from kubecore._contract.errors import PluginError  # attrs: only when a plugin adds one

        if not _COMMAND_NAME.match(name):
            raise PluginError(
                f"invalid command name {name!r} (lower-case letters, digits and '-', "
                "starting with a letter, at most 31 characters)"
            )
        if name in self._reserved:
            raise PluginError(f"the command {name!r} is kubecore's own")
        if name in self._owners:
            raise PluginError(f"the command {name!r} is already added by {self._owners[name]!r}")
        self._owners[name] = self._plugin
        parser: argparse.ArgumentParser = self._subparsers.add_parser(
            name, help=help, description=description or None
        )
        return parser

    @property
    def names(self) -> frozenset[str]:
        """The commands the plugins added."""
        return frozenset(self._owners)

    def _set_current(self, plugin: str) -> None:
        self._plugin = plugin
