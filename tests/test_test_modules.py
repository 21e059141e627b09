"""No module of the test suite imports a test module (``test_*.py``), read from the source (no
import runs): what several test modules share lives in a module of its own, ``tests/builders.py``
for the values the whole suite builds, a ``support.py`` or ``helpers.py`` beside the tests of one
area, and fixtures in the nearest ``conftest.py``.

A helper borrowed from a test module is tied to that file: it cannot move or change without
breaking a module that only borrowed it, and a fixture imported by name is easy to lose to a
linter that sees an unused import."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import REPO

TESTS = REPO / "tests"


def module_name(path: Path) -> str:
    """``tests.unit.planner.test_planner`` for ``tests/unit/planner/test_planner.py``."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path) for path in TESTS.rglob("*.py")}


def is_test_module(name: str) -> bool:
    """A module pytest collects tests from (``test_*.py``)."""
    return name.rpartition(".")[2].startswith("test_")


def imported_modules(module: str, is_package: bool, tree: ast.AST) -> set[str]:
    """The modules the imports anywhere in ``tree`` import from (for ``from package import
    name``, the submodule ``name`` when the suite has one), relative ones resolved against
    ``module``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if is_package else module.rpartition(".")[0]
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in MODULES else base)
    return found


def imports_of_test_modules(source: str, module: str = "tests.agent.support") -> set[str]:
    """The test modules that ``source``, as the text of ``module``, imports."""
    tree = ast.parse(source)
    return {name for name in imported_modules(module, False, tree) if is_test_module(name)}


def test_no_module_of_the_suite_imports_a_test_module() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        module = module_name(path)
        tree = ast.parse(path.read_text(), str(path))
        for name in sorted(imported_modules(module, path.name == "__init__.py", tree)):
            if is_test_module(name) and name != module:
                offenders.append(f"{path.relative_to(REPO)} imports {name}")
    assert not offenders, (
        "move what is shared into tests/builders.py, a support module of its folder, or the "
        "nearest conftest.py:\n" + "\n".join(offenders)
    )


def test_every_way_of_importing_a_test_module_is_caught() -> None:
    caught = imports_of_test_modules
    assert caught("from tests.cli.test_cli import run_cli") == {"tests.cli.test_cli"}
    assert caught("def f():\n    import tests.api.test_server") == {"tests.api.test_server"}
    assert caught("from tests.engines.etcd import test_etcd") == {"tests.engines.etcd.test_etcd"}
    assert caught("from .test_kubelet_pods import node") == {"tests.agent.test_kubelet_pods"}
    assert caught("from ..unit.planner import test_planner as p") == {
        "tests.unit.planner.test_planner"
    }
    assert caught("from tests.builders import ctr\nfrom tests.agent import support") == set()
