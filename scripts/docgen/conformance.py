"""The conformance suite's checks, read from ``kubecore.testing.conformance.RuntimeConformance``:
each area (a check class, in the order pytest runs them) with its checks and what each says it
checks."""

from __future__ import annotations

import inspect

from scripts.docgen.markdown import code, first_paragraph, rst_to_md, table


def render() -> str:
    from kubecore.testing.conformance import RuntimeConformance

    areas = [
        cls
        for cls in reversed(RuntimeConformance.__mro__)
        if cls.__module__.startswith("kubecore.testing.conformance.")
        and cls.__name__.endswith("Checks")
    ]
    parts = []
    total = 0
    for area in areas:
        checks = [
            (name, function)
            for name, function in vars(area).items()
            if name.startswith("test_") and inspect.isfunction(function)
        ]
        total += len(checks)
        parts += [f"### {area.__name__}", ""]
        if area.__doc__:
            parts += [rst_to_md(first_paragraph(area.__doc__)), ""]
        rows = [
            (code(name), rst_to_md(first_paragraph(function.__doc__)) or name[5:].replace("_", " "))
            for name, function in checks
        ]
        parts += [table(("check", "what it requires"), rows)]
    return "\n".join([f"{total} checks in {len(areas)} areas, in the order they run.", "", *parts])
