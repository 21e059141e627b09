"""Containers of the in-memory runtime: create, start, stop (with its grace period on the
clock), resize, remove, status and stats, and the test controls that act on one (exit, crash,
OOM kill, logs and files written from outside, unmanaged containers, lookups)."""

from __future__ import annotations

import threading
from collections.abc import Mapping

import attrs

from kubecore import ContainerRuntimeError
from kubecore.runtime import (
    CONTAINER_NAME_LABEL,
    POD_NAME_LABEL,
    POD_UID_LABEL,
    Conflict,
    ContainerConfig,
    ContainerResources,
    ContainerStats,
    ImageNotFound,
    InvalidConfig,
    NamespaceMode,
    RuntimeContainer,
    RuntimeEventType,
    RuntimeState,
    SandboxConfig,
    SandboxState,
    SandboxUnusable,
)
from kubecore_fake._behaviour import Behaviour
from kubecore_fake._engine import Engine
from kubecore_fake._events import Events
from kubecore_fake._images import image_id_for
from kubecore_fake._mounts import PROC_MOUNTS, proc_mounts
from kubecore_fake._records import ContainerRecord


class Containers:
    """The container operations and controls, on the engine's records."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    # -- the runtime contract ----------------------------------------------------------------

    def create(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str:
        if not config.image:
            raise InvalidConfig(f"container {config.name!r}: an image is required")
        engine = self._engine
        events: Events = []
        with engine.lock:
            engine.get_sandbox(sandbox_id)
            image = engine.images.find(config.image)
            if image is None:
                raise ImageNotFound(f"No such image: {config.image}")
            # Recorded in the config: ``ps`` in the container sees its target's processes.
            namespaces = config.namespace_options
            if (
                namespaces is not None
                and namespaces.pid is NamespaceMode.TARGET
                and namespaces.target_id not in engine.containers
            ):
                raise InvalidConfig(
                    f"container {config.name!r}: namespace_options.target_id: no container"
                    f" {namespaces.target_id!r} to share the pid namespace of"
                )
            # Names are unique per pod, container and attempt (as dockershim's names are).
            pod = (sandbox_config.name, sandbox_config.namespace, sandbox_config.uid)
            other_id = engine.container_names.get((pod, config.name, config.attempt))
            if other_id is not None:
                raise Conflict(
                    f"container name {config.name!r} attempt {config.attempt} of pod"
                    f" {pod[1]}/{pod[0]} is already in use by {other_id}"
                )
            cid = f"container-{next(engine.container_ids)}"
            rec = ContainerRecord(
                cid,
                sandbox_id,
                config,
                image.id,
                engine.scripts.behaviour_of(config, sandbox_config.hostname or sandbox_config.name),
                engine.clock.now(),
                pod=pod,
                changes=engine.container_changes,
            )
            rec.files[PROC_MOUNTS] = proc_mounts(config.mounts)
            engine.containers[cid] = rec
            engine.container_changes.count += 1
            engine.container_names[(pod, config.name, config.attempt)] = cid
            engine.hub.note(events, RuntimeEventType.CREATED, rec)
        engine.hub.emit(events)
        return cid

    def start(self, container_id: str) -> None:
        engine = self._engine
        events: Events = []
        with engine.lock:
            rec = engine.get_container(container_id)
            if rec.state is RuntimeState.RUNNING:
                return
            if rec.state is not RuntimeState.CREATED:
                raise Conflict(f"container {container_id} has exited; create a new one")
            sb = engine.sandboxes.get(rec.sandbox_id)
            if rec.managed and (sb is None or sb.state is not SandboxState.READY):
                raise SandboxUnusable(f"cannot start {container_id}: its sandbox is not ready")
            behaviour = rec.behaviour
            if behaviour.fail_start:
                message = (
                    behaviour.fail_start
                    if isinstance(behaviour.fail_start, str)
                    else f"failed to start container {container_id}"
                )
                rec.exit_code, rec.reason, rec.message = 128, "ContainerCannotRun", message
                raise ContainerRuntimeError(f"start {container_id}: {message}")
            engine.start(rec, events)
        engine.hub.emit(events)

    def stop(self, container_id: str, timeout: float) -> None:
        engine = self._engine
        events: Events = []
        with engine.lock:
            rec = engine.containers.get(container_id)
            if rec is None or rec.state is not RuntimeState.RUNNING:
                return
            # The container's stop signal stands in for TERM (its behaviour answers it alike).
            rec.signals.append(rec.config.stop_signal.removeprefix("SIG") or "TERM")
            if rec.exited is None:
                rec.exited = threading.Event()
            run, exited = rec.run, rec.exited
            if rec.behaviour.traps_term:
                engine.exit(rec, 0, "", "", events)
        engine.hub.emit(events)
        if exited.is_set():
            return
        engine.clock.wait(exited, max(0.0, timeout))
        with engine.lock:
            rec = engine.containers.get(container_id)
            if rec is not None and rec.run == run and rec.state is RuntimeState.RUNNING:
                rec.signals.append("KILL")
                engine.exit(rec, 137, "Error", "", events)
        engine.hub.emit(events)

    def update_resources(self, container_id: str, resources: ContainerResources) -> None:
        with self._engine.lock:
            rec = self._engine.get_container(container_id)
            rec.config = attrs.evolve(
                rec.config,
                cpu_shares=resources.cpu_shares,
                cpu_quota=resources.cpu_quota,
                cpu_period=resources.cpu_period,
                memory_limit=resources.memory_limit,
            )

    def remove(self, container_id: str) -> None:
        engine = self._engine
        events: Events = []
        with engine.lock:
            rec = engine.containers.get(container_id)
            if rec is None:
                return
            engine.remove_container(rec, events)
        engine.hub.emit(events)

    def status(self, container_id: str) -> RuntimeContainer:
        with self._engine.lock:
            return self._engine.view(self._engine.get_container(container_id))

    def stats(self) -> list[ContainerStats]:
        engine = self._engine
        with engine.lock:
            mono, now = engine.clock.monotonic(), engine.clock.now()
            return [
                ContainerStats(
                    rec.id,
                    now,
                    cpu_usage_nanos=int(
                        max(0.0, mono - rec.started_mono) * rec.behaviour.cpu_fraction * 1e9
                    ),
                    memory_working_set_bytes=rec.behaviour.memory_bytes,
                    memory_usage_bytes=rec.behaviour.memory_bytes,
                    memory_rss_bytes=rec.behaviour.memory_bytes,
                    memory_page_faults=0,
                    memory_major_page_faults=0,
                    writable_layer_used_bytes=rec.behaviour.writable_layer_bytes,
                    writable_layer_inodes_used=0,
                    log_used_bytes=sum(len(line.encode()) for _, line in rec.logs),
                )
                for rec in engine.containers.values()
                if rec.managed and rec.state is RuntimeState.RUNNING
            ]

    # -- test controls -------------------------------------------------------------------------

    def exit(self, container_id: str, code: int, reason: str, message: str) -> None:
        events: Events = []
        with self._engine.lock:
            rec = self._engine.running(container_id)
            self._engine.exit(rec, code, reason, message, events)
        self._engine.hub.emit(events)

    def oom_kill(self, container_id: str) -> None:
        events: Events = []
        with self._engine.lock:
            rec = self._engine.running(container_id)
            rec.signals.append("KILL")
            self._engine.exit(rec, 137, "OOMKilled", "", events, oom=True)
        self._engine.hub.emit(events)

    def write_log(self, container_id: str, text: str) -> None:
        with self._engine.lock:
            self._engine.log(self._engine.get_container(container_id), text)

    def write_file(self, container_id: str, path: str, content: str | None) -> None:
        with self._engine.lock:
            rec = self._engine.get_container(container_id)
            if content is None:
                rec.files.pop(path, None)
            else:
                rec.files[path] = content

    def add_unmanaged(
        self, name: str, image: str, labels: Mapping[str, str] | None, *, running: bool
    ) -> str:
        engine = self._engine
        with engine.lock:
            cid = f"unmanaged-{next(engine.unmanaged_ids)}"
            now = engine.clock.now()
            rec = ContainerRecord(
                cid,
                "",
                ContainerConfig(name=name, image=image, labels=dict(labels or {})),
                image_id_for(image),
                Behaviour(),
                now,
                managed=False,
                changes=engine.container_changes,
            )
            if running:
                rec.state = RuntimeState.RUNNING
                rec.started_at = now
                rec.started_mono = engine.clock.monotonic()
                rec.run = 1
            engine.containers[cid] = rec
            engine.container_changes.count += 1
            engine.container_names.setdefault((rec.pod, name, 0), cid)
            return cid

    def signals(self, container_id: str) -> tuple[str, ...]:
        with self._engine.lock:
            return tuple(self._engine.get_container(container_id).signals)

    def config(self, container_id: str) -> ContainerConfig:
        with self._engine.lock:
            return self._engine.get_container(container_id).config

    def behaviour(self, container_id: str) -> Behaviour:
        with self._engine.lock:
            return self._engine.get_container(container_id).behaviour

    def find(
        self,
        name: str | None,
        pod_name: str | None,
        pod_uid: str | None,
        state: RuntimeState | None,
    ) -> list[RuntimeContainer]:
        with self._engine.lock:
            found = []
            for rec in self._engine.containers.values():
                labels = rec.config.labels
                if not rec.managed:
                    continue
                if name is not None and name not in (
                    labels.get(CONTAINER_NAME_LABEL),
                    rec.config.name,
                ):
                    continue
                if pod_name is not None and labels.get(POD_NAME_LABEL) != pod_name:
                    continue
                if pod_uid is not None and labels.get(POD_UID_LABEL) != pod_uid:
                    continue
                if state is not None and rec.state is not state:
                    continue
                found.append(self._engine.view(rec))
            return found
