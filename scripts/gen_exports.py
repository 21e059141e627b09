"""Write each public module's type-checking imports from the one table of the public surface
(``kubecore._util.exports.SURFACE``), so type checkers and editors see what ``__getattr__``
imports at run time.

    python scripts/gen_exports.py          # rewrite the blocks
    python scripts/gen_exports.py --check  # exit 1 if a block differs from the table
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kubecore._util.exports import SURFACE, submodules  # noqa: E402

MARKER = "# written by scripts/gen_exports.py from kubecore._util.exports.SURFACE"


def module_path(namespace: str) -> Path:
    """The file of a public namespace (a package's ``__init__.py``)."""
    parts = namespace.split(".")
    package = REPO.joinpath(*parts, "__init__.py")
    return package if package.exists() else REPO.joinpath(*parts[:-1], f"{parts[-1]}.py")


def block(namespace: str) -> list[str]:
    """The ``if TYPE_CHECKING:`` block that imports every name of ``namespace`` from its home."""
    by_module: dict[str, list[str]] = {}
    for name, module in SURFACE[namespace].items():
        by_module.setdefault(module, []).append(name)
    lines = [f"if _typing.TYPE_CHECKING:  {MARKER}"]
    for sub in sorted(submodules(namespace)):
        lines.append(f"    from {namespace} import {sub} as {sub}")
    for module in sorted(by_module):
        lines.append(f"    from {module} import (")
        lines += [f"        {name} as {name}," for name in sorted(by_module[module])]
        lines.append("    )")
    return lines


def generated_span(lines: list[str]) -> tuple[int, int]:
    """The first and past-the-last line index of the marked block."""
    tree = ast.parse("\n".join(lines))
    for node in tree.body:
        if isinstance(node, ast.If) and MARKER in lines[node.lineno - 1]:
            return node.lineno - 1, node.end_lineno or node.lineno
    raise SystemExit(f"no line with {MARKER!r}")


def imported(text: str) -> set[tuple[str, str]]:
    """``(module, name)`` of every import in the marked block."""
    lines = text.split("\n")
    start, end = generated_span(lines)
    found = set()
    for node in ast.walk(ast.parse("\n".join(lines[start:end]))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {(node.module, alias.name) for alias in node.names}
    return found


def expected(namespace: str) -> set[tuple[str, str]]:
    """``(module, name)`` the table says the block of ``namespace`` imports."""
    subs = {(namespace, sub) for sub in submodules(namespace)}
    return subs | {(module, name) for name, module in SURFACE[namespace].items()}


def main(argv: list[str]) -> int:
    stale = []
    for namespace in SURFACE:
        path = module_path(namespace)
        text = path.read_text(encoding="utf-8")
        if "--check" in argv:
            if imported(text) != expected(namespace):
                stale.append(str(path.relative_to(REPO)))
            continue
        lines = text.split("\n")
        start, end = generated_span(lines)
        lines[start:end] = block(namespace)
        path.write_text("\n".join(lines), encoding="utf-8")
        ruff = [sys.executable, "-m", "ruff"]
        subprocess.run([*ruff, "check", "-q", "--fix", "--select", "I", str(path)], check=True)
        subprocess.run([*ruff, "format", "-q", str(path)], check=True)
    for path in stale:
        print(f"{path}: its type-checking imports differ from SURFACE: run scripts/gen_exports.py")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
