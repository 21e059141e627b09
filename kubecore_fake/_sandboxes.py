"""Sandboxes of the in-memory runtime: run, stop, remove, status, and unmanaged ones."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kubecore.runtime import Conflict, RuntimeSandbox, RuntimeState, SandboxConfig, SandboxState
from kubecore_fake._engine import Engine
from kubecore_fake._events import Events
from kubecore_fake._records import SandboxRecord

logger = logging.getLogger(__name__)


class Sandboxes:
    """The sandbox operations, on the engine's records."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def run(self, config: SandboxConfig) -> str:
        engine = self._engine
        with engine.lock:
            key = (config.name, config.namespace, config.uid, config.attempt)
            if key in engine.sandbox_names:
                raise Conflict(
                    f"sandbox name {config.namespace}/{config.name} attempt {config.attempt}"
                    f" (uid {config.uid}) is already in use by {engine.sandbox_names[key]}"
                )
            sid = f"sandbox-{next(engine.sandbox_ids)}"
            ip = engine.node_ip if config.host_network else engine.next_ip()
            engine.sandboxes[sid] = SandboxRecord(
                sid,
                config,
                SandboxState.READY,
                engine.clock.now(),
                ip,
                changes=engine.sandbox_changes,
            )
            engine.sandbox_changes.count += 1
            engine.sandbox_names[key] = sid
            logger.debug("sandbox %s created", sid, extra={"sandbox_id": sid, "pod": config.name})
            return sid

    def stop(self, sandbox_id: str) -> None:
        engine = self._engine
        events: Events = []
        with engine.lock:
            sb = engine.sandboxes.get(sandbox_id)
            if sb is None:
                return
            for rec in engine.containers.values():
                if rec.sandbox_id == sandbox_id and rec.state is RuntimeState.RUNNING:
                    rec.signals.append("KILL")
                    engine.exit(rec, 137, "Error", "", events)
            sb.state = SandboxState.NOTREADY
        engine.hub.emit(events)

    def remove(self, sandbox_id: str) -> None:
        engine = self._engine
        events: Events = []
        with engine.lock:
            if sandbox_id not in engine.sandboxes:
                return
            for rec in [c for c in engine.containers.values() if c.sandbox_id == sandbox_id]:
                engine.remove_container(rec, events)
            c = engine.sandboxes.pop(sandbox_id).config
            engine.sandbox_changes.count += 1
            key = (c.name, c.namespace, c.uid, c.attempt)
            if engine.sandbox_names.get(key) == sandbox_id:
                del engine.sandbox_names[key]
            engine.cond.notify_all()
        engine.hub.emit(events)

    def status(self, sandbox_id: str) -> RuntimeSandbox:
        with self._engine.lock:
            return self._engine.sandbox_view(self._engine.get_sandbox(sandbox_id))

    def config(self, sandbox_id: str) -> SandboxConfig:
        with self._engine.lock:
            return self._engine.get_sandbox(sandbox_id).config

    def add_unmanaged(self, name: str, labels: Mapping[str, str] | None) -> str:
        engine = self._engine
        with engine.lock:
            sid = f"unmanaged-{next(engine.unmanaged_ids)}"
            config = SandboxConfig(name=name, namespace="", uid="", labels=dict(labels or {}))
            engine.sandboxes[sid] = SandboxRecord(
                sid,
                config,
                SandboxState.READY,
                engine.clock.now(),
                "",
                managed=False,
                changes=engine.sandbox_changes,
            )
            engine.sandbox_changes.count += 1
            return sid
