"""Kubernetes' env file syntax (``env[].valueFrom.fileKeyRef``), read as the kubelet reads it.

The syntax is a strict subset of what a POSIX shell accepts for assignments: ``VAR='value'``
per declaration, spaces around ``=`` and at the start of a line ignored, blank lines and lines
starting with ``#`` ignored, the value in single quotes and taken literally (newlines included:
a value may span lines). Unquoted and double-quoted values, several quoted strings in a row,
and anything after the closing quote are refused, as is a name holding characters other than
printable ASCII or an ``=``.
"""

from __future__ import annotations


class EnvFileError(ValueError):
    """The file does not follow the env file syntax; the message names the line."""


def _valid_name(name: str) -> bool:
    return bool(name) and all(" " < c <= "~" and c != "=" for c in name)


def parse_env_file(text: str) -> dict[str, str]:
    """Every declaration of the env file ``text``, in order (a later one of a name wins)."""
    result: dict[str, str] = {}
    pos, line, size = 0, 1, len(text)
    while pos < size:
        end = text.find("\n", pos)
        end = size if end < 0 else end
        current = text[pos:end].lstrip(" \t")
        if not current.strip() or current.startswith("#"):
            pos, line = end + 1, line + 1
            continue
        name, equals, rest = current.partition("=")
        name = name.strip(" \t")
        if not equals:
            raise EnvFileError(f"line {line}: expected NAME='value', got {current.strip()!r}")
        if not _valid_name(name):
            raise EnvFileError(
                f"line {line}: invalid name {name!r}: use printable ASCII characters other"
                " than '=' and spaces"
            )
        value_start = end - len(rest) + (len(rest) - len(rest.lstrip(" \t")))
        if not text.startswith("'", value_start):
            raise EnvFileError(
                f"line {line}: the value of {name} must be in single quotes"
                " (unquoted and double-quoted values are not supported)"
            )
        close = text.find("'", value_start + 1)
        if close < 0:
            raise EnvFileError(f"line {line}: the value of {name} has no closing quote")
        value = text[value_start + 1 : close]
        after_end = text.find("\n", close)
        after_end = size if after_end < 0 else after_end
        trailing = text[close + 1 : after_end]
        if trailing.strip(" \t"):
            raise EnvFileError(
                f"line {line + value.count(chr(10))}: unexpected {trailing.strip()!r} after the"
                f" value of {name} (one single-quoted value a declaration)"
            )
        result[name] = value
        line += value.count("\n") + 1
        pos = after_end + 1
    return result
