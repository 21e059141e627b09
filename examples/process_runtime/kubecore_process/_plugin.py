"""The pluggy entry point (``kubecore: process``): registers the ``process`` runtime."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kubecore import RuntimeRegistry, hookimpl
from kubecore.runtime import InvalidConfig, RuntimeBundle
from kubecore_process._runtime import ProcessRuntime

NAME = "process"
DEFAULT_IMAGES = ("host",)


@hookimpl
def kubecore_register_runtimes(registry: RuntimeRegistry) -> None:
    registry.register(NAME, create_process_runtime, "Local processes, NO isolation (an example)")


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/kubecore-process``, by default ``~/.local/state/kubecore-process``."""
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "kubecore-process"


def create_process_runtime(
    state_dir: str | Path | None = None,
    images: str | Iterable[str] = DEFAULT_IMAGES,
    **unknown: Any,
) -> RuntimeBundle:
    """Build the process runtime.

    Options (strings are accepted, as from ``--runtime-option``): ``state_dir``, where the
    records of sandboxes and containers, their directories and logs live, so that a restarted
    agent finds them (default: ``default_state_dir()``); ``images``, the image names a pull
    accepts, comma separated (default ``host``).
    """
    if unknown:
        raise InvalidConfig(f"unknown option(s) for the process runtime: {', '.join(unknown)}")
    names = images.split(",") if isinstance(images, str) else list(images)
    root = Path(state_dir) if state_dir is not None else default_state_dir()
    runtime = ProcessRuntime(root, [name for name in names if name.strip()])
    return RuntimeBundle(runtime=runtime, puller=runtime.images, health_checker=None, name=NAME)
