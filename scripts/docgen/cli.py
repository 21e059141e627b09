"""The CLI reference: every command and flag of ``kubecore``, read from its argparse parser
(``kubecore._cli.parser.build_parser``), as ``--help`` prints them: in the groups and with the
examples ``--help`` shows."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from scripts.docgen.markdown import code, rst_to_md, table


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _help_of(parser: argparse.ArgumentParser, name: str) -> str:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help or ""
    return ""


def _spelling(action: argparse.Action) -> str:
    metavar = action.metavar if isinstance(action.metavar, str) else None
    if not action.option_strings:
        word = metavar or action.dest
        return f"{word}..." if action.nargs in ("*", "+") else word
    if isinstance(action, argparse.BooleanOptionalAction):
        return " / ".join(action.option_strings)
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    value = metavar or action.dest.upper()
    return ", ".join(f"{option} {value}" for option in action.option_strings)


def _arguments(
    parser: argparse.ArgumentParser, actions: list[argparse.Action]
) -> list[tuple[str, str]]:
    formatter = parser._get_formatter()
    rows = []
    for action in actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        text = formatter._expand_help(action) if action.help else ""
        if action.choices and not isinstance(action.choices, dict):
            text += f" (one of: {', '.join(map(str, action.choices))})"
        if isinstance(action, argparse._AppendAction) and "repeatable" not in text:
            text += " (repeatable)"
        rows.append((code(_spelling(action)), rst_to_md(text)))
    return rows


def _command(path: str, parser: argparse.ArgumentParser, summary: str, depth: int) -> list[str]:
    heading = "#" * min(depth, 6)
    parts = [f"{heading} `{path}`", ""]
    if summary:
        parts += [summary[0].upper() + summary[1:] + ".", ""]
    prefix = "usage: "
    lines = parser.format_usage().removeprefix(prefix).rstrip().splitlines()
    usage = "\n".join([lines[0], *(line.removeprefix(" " * len(prefix)) for line in lines[1:])])
    parts += ["```", usage, "```", ""]
    if parser.description and parser.description != summary:
        parts += [rst_to_md(parser.description), ""]
    groups = parser._action_groups
    if len(groups) <= 2:  # argparse's own two: positional arguments and options
        rows = _arguments(parser, parser._actions)
        if rows:
            parts += [table(("argument", "meaning"), rows)]
    for group in groups if len(groups) > 2 else ():  # as --help shows them
        rows = _arguments(parser, group._group_actions)
        if not rows:
            continue
        title = group.title or ""
        parts += [
            f"**{title[0].upper() + title[1:]}**"
            + (f": {group.description}." if group.description else ""),
            "",
        ]
        parts += [table(("argument", "meaning"), rows)]
    if parser.epilog:  # the examples, as --help ends with them
        title, _, lines = parser.epilog.partition("\n")
        parts += [f"**{title.rstrip(':').capitalize()}**", "", "```", lines.rstrip(), "```", ""]
    for name, sub in _subcommands(parser):
        parts += _command(f"{path} {name}", sub, _help_of(parser, name), depth + 1)
    return parts


def render() -> str:
    from kubecore._cli.parser import build_parser

    parser = build_parser()
    parts: list[str] = []
    for name, sub in _subcommands(parser):
        parts += _command(f"kubecore {name}", sub, _help_of(parser, name), 2)
    return "\n".join(parts)
