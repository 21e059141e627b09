"""The pod-source tests' shared pieces: ``pod_yaml`` (a pod document as text) and ``write``
(a file change a source's mtime check cannot miss)."""

from __future__ import annotations

import os
from pathlib import Path


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
