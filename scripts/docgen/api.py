"""The Python API reference: one mkdocstrings directive per public name, for each public
namespace of ``kubecore._util.exports.SURFACE`` (the table every ``__all__`` is made from), in
groups by the module that defines the names."""

from __future__ import annotations

from collections.abc import Callable

from scripts.docgen.codescan import loaded

TOP_LEVEL_GROUPS = (
    ("The agent", ("kubecore._agent.",)),
    ("Pod sources", ("kubecore._config.",)),
    ("Pods and manifests", ("kubecore._manifest", "kubecore._model.", "kubecore._status.")),
    ("Runtimes and their plugins", ("kubecore._plugins.", "kubecore._contract.protocols")),
    ("Errors", ("kubecore._contract.errors",)),
)
"""``kubecore``'s names, grouped as a user embedding the agent meets them."""

MODULE_TITLES = {
    "kubecore._contract.protocols": "Protocols",
    "kubecore._contract.bases": "Base classes",
    "kubecore._contract.capabilities": "Optional capabilities",
    "kubecore._contract.streaming": "Streaming (exec, attach, port-forward)",
    "kubecore._contract.values": "Values",
    "kubecore._contract.labels": "Labels and annotations",
    "kubecore._contract.errors": "Errors",
    "kubecore._plugins.registry": "Plugins and their registry",
    "kubecore._util.clock": "Clocks",
    "kubecore._util.timefmt": "Times",
    "kubecore._util.files": "Files",
    "kubecore._planner.backoff": "Back-off",
    "kubecore._model.imageref": "Image references",
    "kubecore._model.v1": "Objects",
    "kubecore._model.quantity": "Quantities",
    "kubecore._model.qos": "Quality of service",
    "kubecore._observability.cri_logs": "CRI log files",
    "kubecore._observability.cri_log_format": "CRI log format",
    "kubecore._observability.events": "Events and recorders",
    "kubecore._observability.event_log": "The aggregated event log",
    "kubecore._observability.metrics": "Metrics",
    "kubecore._http.server": "The kubelet HTTP server",
    "kubecore._streaming.spdy": "SPDY/3.1 frames",
    "kubecore._streaming.spdy_connection": "SPDY/3.1 connections",
    "kubecore._kuberuntime.credentials": "Registry credentials",
    "kubecore.testing._node": "The fake node",
}
"""A section title for each defining module (others are titled by their own name)."""

RUNTIME_PAGES = (
    ("bases", ("kubecore._contract.bases",)),
    ("protocols", ("kubecore._contract.protocols", "kubecore._contract.capabilities")),
    ("values", ("kubecore._contract.values",)),
    ("streaming", ("kubecore._contract.streaming",)),
)
"""The plugin author's pages of ``kubecore.runtime``, each from its defining modules (marker
``api-kubecore-runtime-<page>``); the namespace's page (``api-kubecore-runtime``) holds the rest:
labels, errors, plugins and their registry, clocks, image references, log files."""

NAMESPACES = (
    "kubecore",
    "kubecore.v1",
    "kubecore.runtime",
    "kubecore.manifest",
    "kubecore.events",
    "kubecore.server",
    "kubecore.streaming",
    "kubecore.credentials",
    "kubecore.aio",
    "kubecore.cli",
    "kubecore.testing",
)

PLUGIN_OPTIONS = (
    (
        "`docker`",
        "kubecore_docker._plugin.create_docker_runtime",
        "kubecore_docker._client.DockerOptions",
    ),
    ("`cri`", "kubecore_cri._plugin.create_cri_runtime", "kubecore_cri._client.CriOptions"),
    ("`fake`", "kubecore_fake._plugin.create_fake_runtime", ""),
)
"""Each in-tree runtime plugin: its factory (whose docstring lists its options) and its
options class, if it has one."""


def _surface() -> dict[str, dict[str, str]]:
    surface: dict[str, dict[str, str]] = loaded("kubecore._util.exports").SURFACE
    return surface


def _title(module: str) -> str:
    return MODULE_TITLES.get(module, f"`{module.rsplit('.', 1)[-1].strip('_')}`")


def _directive(namespace: str, name: str) -> str:
    return f"::: {namespace}.{name}"


def _groups(namespace: str) -> list[tuple[str, list[str]]]:
    homes = _surface()[namespace]
    if namespace == "kubecore":
        groups: list[tuple[str, list[str]]] = []
        for title, prefixes in TOP_LEVEL_GROUPS:
            names = [n for n, m in homes.items() if m.startswith(prefixes)]
            groups.append((title, names))
        placed = {n for _, names in groups for n in names}
        rest = [n for n in homes if n not in placed]
        return groups + ([("Other names", rest)] if rest else [])
    by_module: dict[str, list[str]] = {}
    for name, module in homes.items():
        by_module.setdefault(module, []).append(name)
    return [(_title(module), names) for module, names in by_module.items()]


def _on_pages_of_their_own(namespace: str) -> set[str]:
    if namespace != "kubecore.runtime":
        return set()
    return {module for _, modules in RUNTIME_PAGES for module in modules}


def render_namespace(namespace: str, modules: tuple[str, ...] = ()) -> str:
    """Every public name of ``namespace`` by group; with ``modules``, only those they define
    (else those no page of their own holds)."""
    homes = _surface()[namespace]
    elsewhere = _on_pages_of_their_own(namespace)
    parts = []
    for title, names in _groups(namespace):
        names = [
            name
            for name in names
            if (homes[name] in modules if modules else homes[name] not in elsewhere)
        ]
        if not names:
            continue
        parts += [f"## {title}", ""]
        parts += [_directive(namespace, name) + "\n" for name in sorted(names)]
    return "\n".join(parts)


def render_plugins() -> str:
    parts = []
    for name, factory, options in PLUGIN_OPTIONS:
        parts += [f"## {name}", "", f"::: {factory}", ""]
        if options:
            parts += [f"::: {options}", ""]
    return "\n".join(parts)


def generators() -> dict[str, Callable[[], str]]:
    found: dict[str, Callable[[], str]] = {
        "api-" + namespace.replace(".", "-"): (lambda ns=namespace: render_namespace(ns))
        for namespace in NAMESPACES
    }
    for page, modules in RUNTIME_PAGES:
        found[f"api-kubecore-runtime-{page}"] = lambda modules=modules: render_namespace(
            "kubecore.runtime", modules
        )
    found["api-plugins"] = render_plugins
    return found
