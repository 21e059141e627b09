"""The in-memory runtime's state: its sandboxes and containers, their name indexes and cached
listings, and what happens to a container over (virtual) time: it starts, prints and writes on
its timeline, exits, is removed."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from kubecore.runtime import (
    Clock,
    Conflict,
    ContainerNotFound,
    NamespaceMode,
    RuntimeContainer,
    RuntimeEventType,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    SandboxNotFound,
    TimerHandle,
)
from kubecore_fake._behaviour import Behaviour, Scripts
from kubecore_fake._events import EventHub, Events
from kubecore_fake._images import ImageService
from kubecore_fake._mounts import write_through
from kubecore_fake._records import (
    Changes,
    ContainerRecord,
    SandboxRecord,
    container_view,
    sandbox_view,
)
from kubecore_fake._shell import TimedFile, TimedLog

Action = Callable[["Engine", ContainerRecord, Events], None]
"""What a timer does to a container that still runs the same run (the lock is held)."""


class Engine:
    """The records and their lifecycle. Methods run with the runtime's lock held (they take it
    again where they may be called without it: it is re-entrant)."""

    def __init__(
        self, clock: Clock, lock: threading.RLock, images: ImageService, node_ip: str
    ) -> None:
        self.clock = clock
        self.lock = lock
        self.cond = threading.Condition(lock)
        self.images = images
        self.hub = EventHub(clock, lock)
        self.scripts = Scripts()
        self.node_ip = node_ip
        self.sandbox_ids = itertools.count(1)
        self.container_ids = itertools.count(1)
        self.unmanaged_ids = itertools.count(1)
        self._ips = itertools.count(2)
        self.sandboxes: dict[str, SandboxRecord] = {}
        self.containers: dict[str, ContainerRecord] = {}
        # Name indexes, so the uniqueness checks stay O(1) with many thousands of pods.
        self.sandbox_names: dict[tuple[str, str, str, int], str] = {}
        self.container_names: dict[tuple[tuple[str, str, str], str, int], str] = {}
        # Change counters of the listed records, and the listings built at those counts.
        self.sandbox_changes = Changes()
        self.container_changes = Changes()
        self._sandboxes_listed: tuple[int, tuple[RuntimeSandbox, ...]] = (-1, ())
        self._containers_listed: tuple[int, tuple[RuntimeContainer, ...]] = (-1, ())
        self.timers: set[TimerHandle] = set()
        self.closed = False

    # -- lookups -------------------------------------------------------------------------------

    def get_sandbox(self, sandbox_id: str) -> SandboxRecord:
        sb = self.sandboxes.get(sandbox_id)
        if sb is None:
            raise SandboxNotFound(f"no such sandbox: {sandbox_id}")
        return sb

    def get_container(self, container_id: str) -> ContainerRecord:
        rec = self.containers.get(container_id)
        if rec is None:
            raise ContainerNotFound(f"no such container: {container_id}")
        return rec

    def running(self, container_id: str) -> ContainerRecord:
        rec = self.get_container(container_id)
        if rec.state is not RuntimeState.RUNNING:
            raise Conflict(f"container {container_id} is not running")
        return rec

    def is_unmanaged(self, object_id: str) -> bool:
        rec = self.containers.get(object_id)
        if rec is not None:
            return not rec.managed
        sb = self.sandboxes.get(object_id)
        return sb is not None and not sb.managed

    def next_ip(self) -> str:
        n = next(self._ips)
        return f"10.88.{(n // 254) % 256}.{n % 254 + 1}"

    def image_users(self, image_id: str) -> list[str]:
        """The containers (managed or not) made from the image."""
        return [c.id for c in self.containers.values() if c.image_id == image_id]

    # -- a container over time -------------------------------------------------------------------

    def start(self, rec: ContainerRecord, events: Events) -> None:
        behaviour = rec.behaviour
        rec.state = RuntimeState.RUNNING
        rec.started_at = self.clock.now()
        rec.started_mono = self.clock.monotonic()
        rec.exit_code, rec.reason, rec.message = None, "", ""
        rec.run += 1
        rec.exited = None
        self.hub.note(events, RuntimeEventType.STARTED, rec)
        for line in behaviour.logs:
            self.log(rec, line)
        limit = rec.config.memory_limit
        oom = behaviour.oom or (limit is not None and 0 < limit < behaviour.memory_bytes)
        ends = oom or behaviour.exit_code is not None
        for item in behaviour.timeline:
            if ends and item.at > behaviour.after:
                continue
            if item.at <= 0:
                self.apply(rec, item)
            else:
                self.schedule(item.at, rec, _apply_item(item))
        if not ends:
            return
        finish = _finisher(oom, behaviour)
        if behaviour.after <= 0:
            finish(self, rec, events)
        else:
            self.schedule(behaviour.after, rec, finish)

    def apply(self, rec: ContainerRecord, item: TimedLog | TimedFile) -> None:
        if isinstance(item, TimedLog):
            self.log(rec, item.line)
            return
        if item.content is None:
            rec.files.pop(item.path, None)
        else:
            rec.files[item.path] = item.content
        write_through(rec.config.mounts, item.path, item.content)

    def schedule(self, delay: float, rec: ContainerRecord, action: Action) -> None:
        cid, run = rec.id, rec.run

        def fire() -> None:
            events: Events = []
            with self.lock:
                self.timers.discard(handle)
                current = self.containers.get(cid)
                if (
                    self.closed
                    or current is None
                    or current.run != run
                    or current.state is not RuntimeState.RUNNING
                ):
                    return
                action(self, current, events)
            self.hub.emit(events)

        # Under the lock, so that a timer firing at once finds its handle already recorded.
        with self.lock:
            handle = self.clock.call_at(self.clock.monotonic() + delay, fire)
            self.timers.add(handle)

    def log(self, rec: ContainerRecord, text: str) -> None:
        now = self.clock.now()
        for line in text.splitlines() or [""]:
            rec.logs.append((now, line))
        self.cond.notify_all()

    def exit(
        self,
        rec: ContainerRecord,
        code: int,
        reason: str,
        message: str,
        events: Events,
        *,
        oom: bool = False,
    ) -> None:
        rec.state = RuntimeState.EXITED
        rec.finished_at = self.clock.now()
        rec.exit_code = code
        rec.reason = reason or ("Completed" if code == 0 else "Error")
        rec.message = message
        if rec.exited is not None:
            rec.exited.set()
        if oom:
            self.hub.note(events, RuntimeEventType.OOM, rec)
        self.hub.note(events, RuntimeEventType.DIED, rec, exit_code=code)
        self.cond.notify_all()

    def remove_container(self, rec: ContainerRecord, events: Events) -> None:
        if rec.state is RuntimeState.RUNNING:
            rec.signals.append("KILL")
            self.exit(rec, 137, "Error", "", events)
        self.hub.note(events, RuntimeEventType.DELETED, rec)
        del self.containers[rec.id]
        self.container_changes.count += 1
        key = (rec.pod, rec.config.name, rec.config.attempt)
        if self.container_names.get(key) == rec.id:
            del self.container_names[key]
        self.cond.notify_all()

    # -- what containers see of each other ---------------------------------------------------

    def listening(self, sandbox_id: str, rec: ContainerRecord | None) -> frozenset[int]:
        ports: set[int] = set()
        for other in self.containers.values():
            same = other is rec or (sandbox_id != "" and other.sandbox_id == sandbox_id)
            if same and other.state is RuntimeState.RUNNING:
                ports.update(other.behaviour.ports)
        return frozenset(ports)

    def processes(self, rec: ContainerRecord) -> tuple[str, ...]:
        """The command lines ``ps`` in ``rec`` sees, as its sandbox's PID namespace mode says:
        its own (CONTAINER), its pod's running containers' (POD) or every one's (NODE); in
        another container's (its own ``namespace_options.pid`` TARGET), what that one sees."""
        own = rec.config.namespace_options
        if own is not None and own.pid is NamespaceMode.TARGET:
            target = self.containers.get(own.target_id)
            mine = " ".join((*rec.config.command, *rec.config.args))
            shared = self.processes(target) if target is not None else ()
            return (*shared, mine) if rec.state is RuntimeState.RUNNING else shared
        sandbox = self.sandboxes.get(rec.sandbox_id)
        mode = sandbox.config.namespace_options.pid if sandbox else NamespaceMode.CONTAINER
        seen = []
        for other in self.containers.values():
            if other.state is not RuntimeState.RUNNING:
                continue
            if (
                other is rec
                or mode is NamespaceMode.NODE
                or (mode is NamespaceMode.POD and other.sandbox_id == rec.sandbox_id)
            ):
                seen.append(" ".join((*other.config.command, *other.config.args)))
        return tuple(seen)

    # -- views and listings ----------------------------------------------------------------------

    def snapshot(self) -> RuntimeSnapshot:
        with self.lock:
            return RuntimeSnapshot(
                sandboxes=self.sandboxes_listed(),
                containers=self.containers_listed(),
                taken_at=self.clock.now(),
            )

    def sandboxes_listed(self) -> tuple[RuntimeSandbox, ...]:
        """The managed sandboxes' views, rebuilt only after a sandbox changed."""
        count, listed = self._sandboxes_listed
        if count != self.sandbox_changes.count:
            listed = tuple(self.sandbox_view(sb) for sb in self.sandboxes.values() if sb.managed)
            self._sandboxes_listed = (self.sandbox_changes.count, listed)
        return listed

    def containers_listed(self) -> tuple[RuntimeContainer, ...]:
        """The managed containers' views, rebuilt only after a container changed."""
        count, listed = self._containers_listed
        if count != self.container_changes.count:
            listed = tuple(self.view(rec) for rec in self.containers.values() if rec.managed)
            self._containers_listed = (self.container_changes.count, listed)
        return listed

    def view(self, rec: ContainerRecord) -> RuntimeContainer:
        """The container's frozen view, shared by every call until a shown field changes (its
        labels and annotations are the config's own: both are frozen)."""
        view = rec.view
        if view is None or rec.stale:
            view = rec.view = container_view(rec)
            rec.stale = False
        return view

    def sandbox_view(self, sb: SandboxRecord) -> RuntimeSandbox:
        view = sb.view
        if view is None or sb.stale:
            view = sb.view = sandbox_view(sb)
            sb.stale = False
        return view

    def close(self) -> list[TimerHandle]:
        """Closed from now on: the timers still set (to cancel once the lock is released)."""
        with self.lock:
            self.closed = True
            timers = list(self.timers)
            self.timers.clear()
            self.hub.clear()
            self.cond.notify_all()
        return timers


def _finisher(oom: bool, behaviour: Behaviour) -> Action:
    def finish(engine: Engine, rec: ContainerRecord, events: Events) -> None:
        if oom:
            rec.signals.append("KILL")
            engine.exit(rec, 137, "OOMKilled", "", events, oom=True)
        else:
            code = behaviour.exit_code if behaviour.exit_code is not None else 0
            engine.exit(rec, code, behaviour.reason, behaviour.message, events)

    return finish


def _apply_item(item: TimedLog | TimedFile) -> Action:
    def apply(engine: Engine, rec: ContainerRecord, events: Events) -> None:
        engine.apply(rec, item)

    return apply
