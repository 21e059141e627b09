"""kubecore's modules import each other without cycles, read from their source (no import runs).

Module level counts every import a module's body makes, those under ``if TYPE_CHECKING:`` too
(a cycle hidden from the interpreter is still one for a reader). An import inside a function is
allowed, for what a command needs only when it runs, but not to hide a cycle: one whose target
imports the importer back at module level is listed below or fails.

Between folders the rule is stricter: counting every import, lazy ones too (only ``if
TYPE_CHECKING:`` blocks are left out), the folders of kubecore and the plugin packages form layers,
none reaching another that reaches it back (``scripts/folder_graph.py``); and a plugin imports
only public kubecore names."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import kubecore
from scripts import folder_graph

PACKAGE = Path(kubecore.__file__).parent

KNOWN_DEFERRED_CYCLES: set[tuple[str, str]] = set()


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["kubecore", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


MODULES = module_names()


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.Try):
            yield from _module_level(stmt.body + stmt.orelse + getattr(stmt, "finalbody", []))
            for handler in getattr(stmt, "handlers", []):
                yield from _module_level(handler.body)


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The kubecore modules an import statement in ``module`` imports."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in MODULES}
    base = node.module or ""
    if node.level:
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parts, base] if base else parts)
    found = set()
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in MODULES:
            found.add(sub)
        elif base in MODULES:
            found.add(base)
    return found


def import_graphs() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Each module's imports of kubecore modules: at module level, and inside functions."""
    top: dict[str, set[str]] = {}
    deferred: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        level = {id(s) for s in _module_level(tree.body)}
        top[module], deferred[module] = set(), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                into = top if id(node) in level else deferred
                into[module] |= _targets(module, node) - {module}
    return top, deferred


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (one Tarjan walk, the
    folders' own)."""
    return folder_graph.components(graph)


def reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        v = todo.pop()
        if v == goal:
            return True
        if v not in seen:
            seen.add(v)
            todo.extend(graph[v])
    return False


def test_the_module_level_import_graph_has_no_cycles() -> None:
    top, _ = import_graphs()
    assert "kubecore._agent.pod_workers.room" in top["kubecore._agent.desired"]  # the graph is read
    assert cycles(top) == []


def test_no_import_inside_a_function_hides_a_cycle_but_the_known_ones() -> None:
    top, deferred = import_graphs()
    hiding = {
        (module, target)
        for module, targets in deferred.items()
        for target in targets
        if reaches(top, target, module)
    }
    assert hiding == KNOWN_DEFERRED_CYCLES


def test_cycles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert reaches(graph, "d", "c") and not reaches(graph, "c", "d")


def room_of(module: str) -> str:
    """``kubecore._agent.sync_pass`` -> ``kubecore._agent``; a top-level module is its own room."""
    return ".".join(module.split(".")[:2])


def private_reaches(module: str, tree: ast.Module) -> list[str]:
    """The underscore names ``module`` imports from a module of another room."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kubecore"):
            source = node.module or ""
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                submodule = f"{source}.{alias.name}" in MODULES
                if private and not submodule and room_of(source) != room_of(module):
                    found.append(f"{module} imports {source}.{alias.name}")
    return found


def test_no_room_imports_another_rooms_private_names() -> None:
    reaching = [
        reach
        for module, path in MODULES.items()
        for reach in private_reaches(module, ast.parse(path.read_text(), str(path)))
    ]
    assert reaching == []


def test_a_reach_into_another_rooms_private_name_is_found() -> None:
    tree = ast.parse(
        "from kubecore._kuberuntime.execute import _newest, Executor\n"
        "from kubecore._prober.manager import _schedule\n"
        "from kubecore._agent import wiring\n"
    )
    assert private_reaches("kubecore._prober.runner", tree) == [
        "kubecore._prober.runner imports kubecore._kuberuntime.execute._newest"
    ]


def test_the_folders_of_kubecore_and_its_plugins_are_layers() -> None:
    edges = folder_graph.module_edges()
    assert "kubecore._agent.wiring" in edges  # the graph is read
    assert "kubecore_cri" in {folder_graph.folder_of(m) for m in edges}
    graph = folder_graph.folder_graph(edges)
    assert folder_graph.components(graph) == []


def test_a_circle_between_folders_is_counted() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert folder_graph.components(graph) == [["a", "b", "c"], ["d", "e"]]
    assert folder_graph.cyclic_pairs(graph) == 4


def test_a_lazy_import_counts_and_a_type_checking_one_does_not() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from kubecore._agent import kubelet\n"
        "def f():\n    from kubecore._planner import plan\n"
    )
    found = [node.module for node in folder_graph.imports(tree) if isinstance(node, ast.ImportFrom)]
    assert found == ["typing", "kubecore._planner"]


def private_kubecore_imports(tree: ast.Module) -> list[str]:
    """The private kubecore modules and names a plugin's module imports."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("kubecore._")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "kubecore":
            module = node.module or ""
            if module.startswith("kubecore._"):
                found.append(module)
            else:
                found += [f"{module}.{a.name}" for a in node.names if a.name.startswith("_")]
    return found


def test_no_plugin_imports_a_private_kubecore_name() -> None:
    reaching = [
        f"{module}: {name}"
        for module, path in folder_graph.MODULES.items()
        if not module.startswith("kubecore.") and module != "kubecore"
        for name in private_kubecore_imports(ast.parse(path.read_text(), str(path)))
    ]
    assert reaching == []


def test_a_plugins_private_import_is_found() -> None:
    tree = ast.parse(
        "import kubecore._util.files\n"
        "from kubecore._streaming.spdy import FrameReader\n"
        "from kubecore import _model, Kubelet\n"
        "from kubecore.streaming import SpdyConnection\n"
        "from kubecore_cri._client import CriConnection\n"
    )
    assert private_kubecore_imports(tree) == [
        "kubecore._util.files",
        "kubecore._streaming.spdy",
        "kubecore._model",
    ]
