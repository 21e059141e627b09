"""RuntimeBase: a plugin writes 12 methods; listing, status, events and stats are derived."""

from __future__ import annotations

import inspect

import pytest

from kubecore._contract.bases import RuntimeBase
from kubecore._contract.errors import ContainerNotFound, SandboxNotFound
from kubecore._contract.protocols import ContainerRuntime
from kubecore._contract.values import (
    RuntimeContainer,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    RuntimeVersion,
    SandboxState,
)
from tests.unit.contract.support import NullRuntime

SANDBOX = RuntimeSandbox("s1", "web", "default", "uid-1", 0, SandboxState.READY, 1.0)
CONTAINER = RuntimeContainer("c1", "s1", "app", "busybox", RuntimeState.RUNNING, 2.0)


class SnapshotOnly(NullRuntime):
    """The least a runtime writes; only ``snapshot`` does anything here."""

    def __init__(self) -> None:
        self.snapshots = 0

    def version(self) -> RuntimeVersion:
        return RuntimeVersion("snapshot-only", "1")

    def snapshot(self) -> RuntimeSnapshot:
        self.snapshots += 1
        return RuntimeSnapshot((SANDBOX,), (CONTAINER,))


def test_listing_and_status_come_from_the_snapshot() -> None:
    rt = SnapshotOnly()
    assert rt.list_sandboxes() == [SANDBOX]
    assert rt.list_containers() == [CONTAINER]
    assert rt.sandbox_status("s1") == SANDBOX
    assert rt.container_status("c1") == CONTAINER
    assert rt.snapshots == 4
    with pytest.raises(SandboxNotFound):
        rt.sandbox_status("c1")
    with pytest.raises(ContainerNotFound):
        rt.container_status("s1")


def test_no_event_stream_and_no_stats_by_default() -> None:
    rt = SnapshotOnly()
    assert rt.watch_events(lambda event: None) is None
    assert rt.container_stats() == []


def test_a_subclass_is_a_container_runtime() -> None:
    assert isinstance(SnapshotOnly(), ContainerRuntime)


def test_a_runtime_missing_a_method_cannot_be_made_and_is_told_which() -> None:
    written = {n: getattr(SnapshotOnly, n) for n in RuntimeBase.__abstractmethods__ if n != "logs"}
    forgetful = type("Forgetful", (RuntimeBase,), written)
    with pytest.raises(TypeError, match="logs"):
        forgetful()


def test_the_docstring_counts_the_methods_a_plugin_writes() -> None:
    required = sorted(RuntimeBase.__abstractmethods__)
    assert len(required) == 12
    doc = inspect.getdoc(RuntimeBase) or ""
    assert "write 12 methods" in doc
    for name in required:
        assert f"``{name}``" in doc
