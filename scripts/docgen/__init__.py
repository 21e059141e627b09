"""The generated parts of the documentation site: each reference page holds a marker
``<!-- generated: NAME -->`` that the MkDocs hook (``scripts/docgen/hook.py``) replaces at build
time with what ``GENERATORS[NAME]`` renders from the code, so that no reference can drift from
what it describes."""

from __future__ import annotations

import re
from collections.abc import Callable

MARKER = re.compile(r"<!-- generated: ([a-z0-9-]+) -->")


def _generators() -> dict[str, Callable[[], str]]:
    from scripts.docgen import (
        api,
        benchmark_figures,
        cli,
        conformance,
        contract,
        endpoints,
        events,
        metrics,
        pod_fields,
    )

    return {
        "cli": cli.render,
        "conformance": conformance.render,
        "runtime-contract": contract.render,
        "kubelet-endpoints": endpoints.render_kubelet,
        "kubernetes-api": endpoints.render_kubernetes_api,
        "metrics": metrics.render,
        "events": events.render,
        "pod-fields": pod_fields.render,
        **api.generators(),
        **benchmark_figures.generators(),
    }


def expand(markdown: str, where: str = "") -> str:
    """``markdown`` with each marker replaced by its generated text; an unknown name is an
    error naming it (and the page), so a mistyped marker fails the build."""
    generators = _generators()

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in generators:
            known = ", ".join(sorted(generators))
            raise ValueError(f"{where}: unknown generated section {name!r} (known: {known})")
        return generators[name]().rstrip("\n") + "\n"

    return MARKER.sub(replace, markdown)


def markers(markdown: str) -> list[str]:
    """The generated sections a page asks for, in order."""
    return MARKER.findall(markdown)
