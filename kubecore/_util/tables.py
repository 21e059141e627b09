"""The one writer of plain text tables (the CLI's pod table, ``kubecore runtimes``, a plugin's
commands such as ``kubecore etcd get``): columns padded to their widest cell, three spaces
apart, as kubectl prints them; and the READY and RESTARTS cells of a pod document, as the API's
pod Table and ``kubecore etcd get`` show them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table as kubectl prints one: a header line then a line per row, each column as wide as
    its widest cell, three spaces between columns, no trailing blanks."""
    lines = [list(header), *(list(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "".join(
        "   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() + "\n"
        for line in lines
    )


def ready_and_restarts(pod: Mapping[str, Any]) -> tuple[str, int]:
    """A pod document's READY cell (``1/2``: ready containers of all the spec's) and its
    RESTARTS (the containers' restart counts added up)."""
    containers = (pod.get("spec") or {}).get("containers") or ()
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    ready = sum(1 for cs in statuses if cs.get("ready"))
    restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    return f"{ready}/{len(containers)}", restarts
