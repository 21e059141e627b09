"""Text tables as kubectl prints them, for every command that lists things (``kubecore run``'s
pod table, a plugin's commands such as ``kubecore etcd get``)."""

from __future__ import annotations

from collections.abc import Sequence


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table as kubectl prints one: a header line then a line per row, each column as wide as
    its widest cell, three spaces between columns, no trailing blanks."""
    lines = [list(header), *(list(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "".join(
        "   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() + "\n"
        for line in lines
    )
