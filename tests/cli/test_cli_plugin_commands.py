"""Plugins add subcommands to ``kubecore`` (the ``kubecore_add_commands`` hook): ``kubecore etcd``
is one, listed by ``kubecore --help``; a name taken twice, or kubecore's own, makes the plugin
broken; named without its plugin, ``kubecore etcd`` says how to install it."""

from __future__ import annotations

import argparse
import io
from typing import IO

import pytest

from kubecore import hookimpl
from kubecore._cli.parser import COMMANDS, main
from kubecore._plugins.registry import plugin_manager
from kubecore.cli import EXIT_OK, EXIT_USAGE, CommandSet, text_table
from kubecore.runtime import PluginWarning


class _Hello:
    @hookimpl
    def kubecore_add_commands(self, commands: CommandSet) -> None:
        hello = commands.add("hello", help="say hello")
        hello.add_argument("--name", default="world")

        def handler(args: argparse.Namespace, out: IO[str]) -> int:
            out.write(text_table(["GREETING", "TO"], [["hello", args.name]]))
            return EXIT_OK

        hello.set_defaults(handler=handler)


class _Thief:
    @hookimpl
    def kubecore_add_commands(self, commands: CommandSet) -> None:
        commands.add("run", help="not mine to take")


def _parser(*plugins: object) -> tuple[argparse.ArgumentParser, CommandSet]:
    parser = argparse.ArgumentParser(prog="kubecore")
    subparsers = parser.add_subparsers(dest="command")
    for name in COMMANDS:
        subparsers.add_parser(name)
    commands = CommandSet(subparsers, reserved=COMMANDS)
    plugin_manager(plugins, entry_points=False).add_commands(commands)
    return parser, commands


def test_a_plugin_s_command_parses_and_runs() -> None:
    parser, commands = _parser(_Hello())
    assert commands.names == {"hello"}
    args = parser.parse_args(["hello", "--name", "node"])
    out = io.StringIO()
    assert args.handler(args, out) == EXIT_OK
    assert out.getvalue() == "GREETING   TO\nhello      node\n"


def test_a_plugin_cannot_take_a_command_of_kubecore_or_of_another_plugin() -> None:
    with pytest.warns(PluginWarning, match="the command 'run' is kubecore's own"):
        _, commands = _parser(_Thief(), _Hello())
    assert commands.names == {"hello"}
    with pytest.warns(PluginWarning, match="'hello' is already added"):
        _parser(_Hello(), _Hello())


def test_kubecore_help_lists_the_etcd_command(capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    assert main(["--help"], out) == 0
    help_text = capsys.readouterr().out + out.getvalue()
    assert "etcd" in help_text and "bind pods to nodes in etcd" in help_text


def test_the_etcd_command_without_its_plugin_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECORE_DISABLE_PLUGINS", "etcd")
    assert main(["etcd", "get", "pods"], io.StringIO()) == EXIT_USAGE
    assert "pip install 'kubecore[etcd]'" in capsys.readouterr().err
