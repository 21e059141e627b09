"""The one writer of plain text tables (the CLI's pod table, ``kubecore runtimes``, ``kubecore etcd
get``): columns padded to their widest cell, three spaces apart, as kubectl prints them; and
the READY and RESTARTS cells of a pod document, as the API's pod Table and ``kubecore etcd get``
show them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


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


def ready_and_restarts(pod: Mapping[str, Any]) -> tuple[str, int]:
    """A pod document's READY cell (``1/2``: ready containers of all the spec's) and its
    RESTARTS (the containers' restart counts added up)."""
    containers = (pod.get("spec") or {}).get("containers") or ()
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    ready = sum(1 for cs in statuses if cs.get("ready"))
    restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    return f"{ready}/{len(containers)}", restarts
