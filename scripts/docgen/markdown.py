"""Small Markdown builders shared by the generators."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def cell(text: object) -> str:
    """One table cell: pipes escaped, lines joined."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: object) -> str:
    return f"`{text}`" if str(text) else ""


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def first_paragraph(doc: str | None) -> str:
    """A docstring's first paragraph, on one line."""
    if not doc:
        return ""
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


def rst_to_md(text: str) -> str:
    """reStructuredText's double backquotes as Markdown's single ones."""
    return text.replace("``", "`")
