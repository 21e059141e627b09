"""Containers outlive their runtime object: every test's state directory is emptied at the end."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import kubecore


def load(state_dir: Path, images: str = "host,spare") -> kubecore.runtime.RuntimeBundle:
    return kubecore.load_runtime("process", state_dir=str(state_dir), images=images)


def remove_everything(state_dir: Path) -> None:
    """What a test left, managed or not, is removed: its processes stop."""
    if not (state_dir / "containers").is_dir():
        return
    runtime = load(state_dir).runtime
    try:
        for container in (state_dir / "containers").iterdir():
            runtime.remove_container(container.name)
        for sandbox in (state_dir / "sandboxes").glob("*.json"):
            runtime.remove_sandbox(sandbox.stem)
    finally:
        runtime.close()


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "state"
    remove_everything(tmp_path / "state")


@pytest.fixture
def open_runtime(state_dir: Path) -> Iterator[Callable[[], kubecore.runtime.RuntimeBundle]]:
    """Loads an instance of the runtime on the test's state directory (each one a restarted
    agent would load); every instance is closed at the end."""
    opened: list[kubecore.runtime.RuntimeBundle] = []

    def open_one() -> kubecore.runtime.RuntimeBundle:
        opened.append(load(state_dir))
        return opened[-1]

    yield open_one
    for bundle in opened:
        bundle.runtime.close()
