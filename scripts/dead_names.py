"""The dead-name check: names defined in the shipped code and used nowhere in the tree.

Runs vulture over the whole tree so that a use anywhere (tests, benchmarks, examples included)
counts, and reports only what the shipped packages define. Names vulture cannot see used
(hooks called by a framework, attrs fields set by keyword, public API the tree itself never
calls...) are listed, with the reason, in ``scripts/dead_names_whitelist.txt``; an entry that no
longer silences anything is reported too, so the list cannot rot.

Usage: python scripts/dead_names.py    (exit status 1 when something is reported)
"""

from __future__ import annotations

import sys
from fnmatch import fnmatchcase
from pathlib import Path

import vulture

ROOT = Path(__file__).resolve().parent.parent
CHECKED = (
    "kubecore",
    "kubecore_cri",
    "kubecore_docker",
    "kubecore_fake",
    "kubecore_etcd",
    "examples/process_runtime/kubecore_process",
    "examples/embed/agent.py",
)
"""What the check reports on: the shipped code."""
GENERATED = ("kubecore_cri/_pb",)
"""Shipped but generated (grpcio-tools): read for uses, never reported."""
SCANNED = (
    "kubecore",
    "kubecore_cri",
    "kubecore_docker",
    "kubecore_fake",
    "kubecore_etcd",
    "examples",
    "tests",
    "benchmarks",
)
"""Read for the names they use (the tests, benchmarks and examples define names of their own
that are not reported: test functions, fixtures, arguments asked for their side effect...)."""
WHITELIST = ROOT / "scripts" / "dead_names_whitelist.txt"


def read_whitelist(path: Path) -> tuple[list[str], list[str]]:
    """The name patterns and the decorator patterns (those starting with ``@``) of the
    whitelist, ``fnmatch`` globs: one or more a line, ``#`` starting a comment."""
    names: list[str] = []
    decorators: list[str] = []
    for line in path.read_text().splitlines():
        for pattern in line.split("#", 1)[0].split():
            (decorators if pattern.startswith("@") else names).append(pattern)
    return names, decorators


def is_checked(filename: Path) -> bool:
    relative = filename.resolve().relative_to(ROOT).as_posix()
    if any(relative.startswith(g + "/") for g in GENERATED):
        return False
    return any(relative == c or relative.startswith(c + "/") for c in CHECKED)


def main() -> int:
    patterns, decorators = read_whitelist(WHITELIST)
    scanner = vulture.Vulture(ignore_decorators=decorators)
    scanner.scavenge([ROOT / p for p in SCANNED])
    silenced: set[str] = set()
    reported = 0
    for item in scanner.get_unused_code():
        if not is_checked(Path(item.filename)):
            continue
        matched = [p for p in patterns if fnmatchcase(item.name, p)]
        if matched:
            silenced.update(matched)
            continue
        print(item.get_report())
        reported += 1
    stale = [p for p in patterns if p not in silenced]
    for pattern in stale:
        print(f"{WHITELIST.relative_to(ROOT)}: {pattern!r} silences nothing: remove it")
    if reported:
        print(
            f"{reported} name(s) defined and never used: delete them, or list them in"
            f" {WHITELIST.relative_to(ROOT)} with the reason they are used after all"
        )
    return 1 if reported or stale or scanner.exit_code == vulture.utils.ExitCode.InvalidInput else 0


if __name__ == "__main__":
    sys.exit(main())
