"""The in-memory runtime's records of sandboxes and containers, and the frozen views it hands
out of them (rebuilt only once a field they show has changed)."""

from __future__ import annotations

import threading
from typing import Any, TypeVar

import attrs

from kubecore.runtime import (
    ContainerConfig,
    RuntimeContainer,
    RuntimeSandbox,
    RuntimeState,
    SandboxConfig,
    SandboxState,
)
from kubecore_fake._behaviour import Behaviour


class Changes:
    """A change counter shared by the records of one kind: bumped whenever one is added,
    removed, or changes a field its view shows, so that an unchanged listing is reused."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


_V = TypeVar("_V")


def _changed(
    record: SandboxRecord | ContainerRecord, _attribute: attrs.Attribute[Any], value: _V
) -> _V:
    """``on_setattr`` hook of the fields a view shows: the cached view is stale."""
    record.stale = True
    record.changes.count += 1
    return value


@attrs.define(eq=False)
class SandboxRecord:
    """A sandbox as the runtime keeps it."""

    id: str
    config: SandboxConfig
    state: SandboxState = attrs.field(on_setattr=_changed)
    created_at: float
    ip: str
    managed: bool = True
    changes: Changes = attrs.field(kw_only=True)
    # The frozen view, built when first asked for and again only once a shown field changed
    # (snapshot at 10,000 pods would otherwise build 30,000 values a call).
    view: RuntimeSandbox | None = None
    stale: bool = True


@attrs.define(eq=False)
class ContainerRecord:
    """A container as the runtime keeps it: its config, behaviour, state, log and files."""

    id: str
    sandbox_id: str
    config: ContainerConfig
    image_id: str
    behaviour: Behaviour
    created_at: float
    managed: bool = True
    pod: tuple[str, str, str] = ("", "", "")
    state: RuntimeState = attrs.field(default=RuntimeState.CREATED, on_setattr=_changed)
    started_at: float | None = attrs.field(default=None, on_setattr=_changed)
    started_mono: float = 0.0
    finished_at: float | None = attrs.field(default=None, on_setattr=_changed)
    exit_code: int | None = attrs.field(default=None, on_setattr=_changed)
    reason: str = attrs.field(default="", on_setattr=_changed)
    message: str = attrs.field(default="", on_setattr=_changed)
    logs: list[tuple[float, str]] = attrs.Factory(list)
    files: dict[str, str] = attrs.Factory(dict)
    signals: list[str] = attrs.Factory(list)
    run: int = 0
    exited: threading.Event | None = None
    """Set when the current run ends; made only once someone waits for that (an Event is
    about 1.5 kB, too much to keep for every container of a large node)."""
    changes: Changes = attrs.field(kw_only=True)
    view: RuntimeContainer | None = None
    stale: bool = True


def container_view(rec: ContainerRecord) -> RuntimeContainer:
    c = rec.config
    return RuntimeContainer(
        id=rec.id,
        sandbox_id=rec.sandbox_id,
        name=c.name,
        image=c.image,
        state=rec.state,
        created_at=rec.created_at,
        attempt=c.attempt,
        image_id=rec.image_id,
        started_at=rec.started_at,
        finished_at=rec.finished_at,
        exit_code=rec.exit_code,
        reason=rec.reason,
        message=rec.message,
        labels=c.labels,
        annotations=c.annotations,
    )


def sandbox_view(sb: SandboxRecord) -> RuntimeSandbox:
    c = sb.config
    return RuntimeSandbox(
        id=sb.id,
        name=c.name,
        namespace=c.namespace,
        uid=c.uid,
        attempt=c.attempt,
        state=sb.state,
        created_at=sb.created_at,
        ip=sb.ip,
        labels=c.labels,
        annotations=c.annotations,
    )
