"""The subcommands that need little: ``version``, ``runtimes`` and ``validate``. This module
imports only what they use, so that they start fast (``run`` lives in ``commands``)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import kubecore
from kubecore._plugins.commands import EXIT_FAILED, EXIT_OK

KUBECONFIG_HELP = "make a CA, a serving certificate, a token and a kubeconfig for kubectl"


def setup_logging(level: int) -> None:
    """The command's logs on stderr from ``level`` up: the library itself prints nothing (its
    ``NullHandler``), so the command, which owns its process, configures logging. Each line
    names the room that logged (``kubecore.agent``, not ``kubecore._agent.pod_workers``). A
    handler the host installed first (a test's, say) is kept."""
    from kubecore._util.log_names import RoomFormatter

    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            RoomFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
        )
        root.addHandler(handler)
    root.setLevel(level)


class UsageError(Exception):
    """A bad flag, environment variable or config file: exit 2 with the message."""


@contextlib.contextmanager
def warnings_shown(err: IO[str], skip: tuple[type[Warning], ...] = ()) -> Iterator[None]:
    """Show each warning raised inside (loading plugins) as one line on ``err``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            shown: set[str] = set()
            for warning in caught:
                line = (str(warning.message).strip().splitlines() or [""])[0]
                if issubclass(warning.category, skip) or line in shown:
                    continue
                shown.add(line)
                err.write(f"kubecore: warning: {line}\n")


# --- version, runtimes, validate ----------------------------------------------------------


def cmd_version(args: argparse.Namespace, out: IO[str]) -> int:
    out.write(
        f"kubecore {kubecore.__version__} (python {sys.version.split()[0]}, {sys.platform})\n"
    )
    return EXIT_OK


def cmd_runtimes(args: argparse.Namespace, out: IO[str]) -> int:
    from kubecore._plugins.registry import PluginWarning, plugin_manager
    from kubecore._util.tables import text_table

    manager = plugin_manager()
    # a broken plugin is listed below; any other warning goes to stderr
    with warnings_shown(sys.stderr, skip=(PluginWarning,)):
        infos = manager.runtimes()
        broken = manager.broken_plugins()
    rows = []
    for info in infos:
        plugin = info.plugin + (f" ({info.distribution})" if info.distribution else "")
        note = f" (unavailable: {info.unavailable})" if info.unavailable else ""
        rows.append([info.name, info.description + note, plugin])
    out.write(text_table(["NAME", "DESCRIPTION", "PLUGIN"], rows))
    for bad in broken:
        where = f" ({bad.distribution})" if bad.distribution else ""
        out.write(f"broken plugin {bad.name}{where}: {bad.error}\n")
    return EXIT_OK if infos else EXIT_FAILED


def validate_paths(paths: Sequence[str]) -> tuple[list[str], int, int]:
    """Every problem line (``file: path: message``), the file count and the valid pod count."""
    from kubecore._config.base import SourceProblem, parse_manifest
    from kubecore._config.listing import list_manifest_files
    from kubecore._contract.errors import ValidationError
    from kubecore._manifest import read_manifest_text

    lines: list[str] = []
    files = 0
    pods = 0
    for raw in paths:
        root = Path(raw)
        if not root.exists():
            lines.append(f"{raw}: no such file or directory")
            continue
        found = list_manifest_files(root) if root.is_dir() else [root]
        if not found:
            lines.append(f"{raw}: no manifest files")
            continue
        for path in found:
            files += 1
            try:
                text = read_manifest_text(path)  # regular files within the size cap only
            except ValidationError as error:
                lines.extend(str(SourceProblem(str(path), (e,))) for e in error.problems)
                continue
            except OSError as error:
                lines.append(f"{path}: cannot read: {error.strerror or error}")
                continue
            valid, errors = parse_manifest(text, str(path))
            pods += len(valid)
            lines.extend(str(SourceProblem(str(path), (error,))) for error in errors)
    return lines, files, pods


def cmd_validate(args: argparse.Namespace, out: IO[str]) -> int:
    problems, files, pods = validate_paths(args.files)
    for line in problems:
        out.write(line + "\n")
    noun = "file" if files == 1 else "files"
    if problems:
        out.write(f"{len(problems)} problem(s) in {files} {noun}; {pods} valid pod(s)\n")
        return EXIT_FAILED
    out.write(f"{files} {noun} OK, {pods} pod(s)\n")
    return EXIT_OK
