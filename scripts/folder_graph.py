"""The folder graph: which folders of kubecore (and which plugin packages) import which, read
from the source (no import of the packages runs).

Every import counts, a lazy one inside a function too; only ``if TYPE_CHECKING:`` blocks are
left out (they never run). A folder is ``kubecore.<name>`` (``kubecore._agent``,
``kubecore.testing``; a top-level module such as ``kubecore.runtime`` is its own), or a whole
plugin package
(``kubecore_fake``). A name taken from a public namespace (``from kubecore.runtime import Clock``)
is counted as an import of the namespace and of the private module that defines the name
(``kubecore._util.exports.SURFACE``), since the namespace imports that module when the name is used.

Usage: python scripts/folder_graph.py [-v]   prints the number of pairs of folders that reach
each other round a circle (``-v``: and every import between the folders of each circle);
exit status 1 when there is any.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kubecore", "kubecore_docker", "kubecore_fake", "kubecore_cri", "kubecore_etcd")
"""The core and the in-tree plugins, read as one graph."""


def modules() -> dict[str, Path]:
    """Each module of the packages by dotted name (a package by its own name)."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = [package, *path.relative_to(ROOT / package).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = modules()


def folder_of(module: str) -> str:
    """``kubecore._agent.sync_pass`` -> ``kubecore._agent``; ``kubecore_fake._runtime`` ->
    ``kubecore_fake``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "kubecore" else parts[0]


def _surface() -> dict[str, dict[str, str]]:
    sys.path.insert(0, str(ROOT))
    from kubecore._util.exports import SURFACE

    return SURFACE


SURFACE = _surface()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", "")
    return name == "TYPE_CHECKING"


def imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` but those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                yield from imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from imports(node)


def _absolute(module: str, node: ast.ImportFrom) -> str:
    base = node.module or ""
    if not node.level:
        return base
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*parts, base] if base else parts)


def targets(module: str, node: ast.Import | ast.ImportFrom) -> set[tuple[str, str]]:
    """``(module, name)`` pairs of the packages' modules an import statement reaches (name is
    ``""`` for a whole module)."""
    if isinstance(node, ast.Import):
        return {(alias.name, "") for alias in node.names if alias.name in MODULES}
    base = _absolute(module, node)
    found = set()
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in MODULES:
            found.add((sub, ""))
        elif alias.name in SURFACE.get(base, {}):
            found |= {(base, ""), (SURFACE[base][alias.name], alias.name)}
        elif base in MODULES:
            found.add((base, alias.name))
    return found


def module_edges() -> dict[str, dict[str, set[str]]]:
    """``{importer: {imported module: names}}`` over the packages."""
    edges: dict[str, dict[str, set[str]]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges[module] = {}
        for node in imports(tree):
            for target, name in targets(module, node):
                if target != module:
                    edges[module].setdefault(target, set()).add(name)
    return edges


def folder_graph(edges: dict[str, dict[str, set[str]]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {folder_of(m): set() for m in edges}
    for module, reached in edges.items():
        for target in reached:
            if folder_of(target) != folder_of(module):
                graph[folder_of(module)].add(folder_of(target))
    return graph


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def cyclic_pairs(graph: dict[str, set[str]]) -> int:
    """How many unordered pairs of nodes reach each other."""
    return sum(len(c) * (len(c) - 1) // 2 for c in components(graph))


def main(argv: list[str]) -> int:
    edges = module_edges()
    graph = folder_graph(edges)
    found = components(graph)
    print(f"{cyclic_pairs(graph)} cyclic folder pairs in {len(found)} circle(s)")
    if "-v" in argv:
        for component in found:
            print(f"\ncircle: {' '.join(component)}")
            for module, reached in sorted(edges.items()):
                for target, names in sorted(reached.items()):
                    inside = folder_of(module) in component and folder_of(target) in component
                    if inside and folder_of(module) != folder_of(target):
                        shown = ", ".join(sorted(n for n in names if n)) or "(module)"
                        print(f"  {module} -> {target}: {shown}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
