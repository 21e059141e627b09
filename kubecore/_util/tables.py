"""The one writer of plain text tables (the CLI's pod table, ``kubecore runtimes``, ``kubecore etcd
get``): columns padded to their widest cell, three spaces apart, as kubectl prints them."""

from __future__ import annotations

from collections.abc import Sequence


def text_table(lines: Sequence[Sequence[str]]) -> str:
    """``lines`` (the header first) as aligned columns, each line ending in a newline and
    without trailing spaces; "" for no lines."""
    if not lines:
        return ""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "".join(
        "   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() + "\n"
        for line in lines
    )
