"""The pluggy entry point (``kubecore: process``): registers the ``process`` runtime."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kubecore import InvalidConfig, RuntimeBundle, RuntimeRegistry, hookimpl
from kubecore_process._runtime import ProcessRuntime

NAME = "process"
DEFAULT_IMAGES = ("host",)


@hookimpl
def kubecore_register_runtimes(registry: RuntimeRegistry) -> None:
    registry.register(NAME, create_process_runtime, "Local processes, NO isolation (an example)")


def create_process_runtime(
    root_dir: str | Path | None = None, images: str | Iterable[str] = DEFAULT_IMAGES, **unknown: Any
) -> RuntimeBundle:
    """Build the process runtime.

    Options (strings are accepted, as from ``--runtime-option``): ``root_dir``, where sandbox
    directories and container logs live (default: a fresh temporary directory, removed by
    ``close()``); ``images``, the image names a pull accepts, comma separated (default ``host``).
    """
    if unknown:
        raise InvalidConfig(f"unknown option(s) for the process runtime: {', '.join(unknown)}")
    names = images.split(",") if isinstance(images, str) else list(images)
    if root_dir is None:
        root, own = Path(tempfile.mkdtemp(prefix="kubecore-process-")), True
    else:
        root, own = Path(root_dir), False
    runtime = ProcessRuntime(root, [name for name in names if name.strip()], own_root=own)
    return RuntimeBundle(runtime=runtime, puller=runtime.images, health_checker=None, name=NAME)
