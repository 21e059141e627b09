"""The pod-source tests' shared pieces: ``pod_yaml`` (a pod document as text), ``write`` (a file
change in place a source's mtime check cannot miss) and ``replace`` (a rename over the file, as
editors and config management write)."""

from __future__ import annotations

import os
from pathlib import Path

from kubecore._config.base import PodSource
from kubecore._config.updates import PodUpdate


def pod_yaml(name: str, image: str = "busybox:1.35", namespace: str = "default") -> str:
    """A pod document with one container ``main``."""
    return (
        "apiVersion: v1\nkind: Pod\n"
        f"metadata:\n  name: {name}\n  namespace: {namespace}\n"
        f"spec:\n  containers:\n  - name: main\n    image: {image}\n"
    )


def write(path: Path, text: str) -> None:
    """Write and move the mtime forward so that a change is seen even within one tick."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    after = path.stat().st_mtime_ns
    if after <= before:
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


def replace(path: Path, text: str) -> None:
    """Write ``text`` to a new file and rename it over ``path`` (another inode: a whole write)."""
    new = path.with_name(f".{path.name}.new")
    new.write_text(text)
    os.replace(new, path)


def first_update(
    source: PodSource, start: float, end: float, step: float = 0.25
) -> tuple[float, PodUpdate | None]:
    """Poll ``source`` every ``step`` seconds from ``start``: when it first sends an update (and
    the update), or ``(end, None)``."""
    now = start
    while now < end:
        update = source.poll(now)
        if update is not None:
            return now, update
        now += step
    return end, None
