"""``FakeRuntime``: an in-memory container runtime and image service.

It honours the contract in ``kubecore.runtime`` exactly, so the core can be tested (and
demoed)
without an engine. Everything is deterministic: ids count up (``sandbox-1``, ``container-1``),
time comes from an injected ``Clock``, and with a ``ManualClock`` every timed behaviour (a
container that exits after ``sleep 5``, a grace period, injected latency) happens while a test
calls ``clock.advance`` (or while a call "takes time", which advances it).

Semantics worth knowing:

* Objects created through the runtime API are kubecore's (listed by ``snapshot``/``list_*``);
  ``add_unmanaged_container`` makes objects that only exist "in the engine": they are never
  listed, and any call that targets them is recorded in ``unmanaged_calls``.
* A container's behaviour comes from the most recent matching ``script(...)``, else from a small
  reading of its command (see ``kubecore_fake._shell``): ``sh -c 'echo crashing; exit 1'`` logs
  ``crashing`` and exits 1; ``sleep 5`` exits 0 five (virtual) seconds after it starts; anything
  unknown runs until stopped.
* ``stop_container`` sends TERM, or the config's ``stop_signal`` (recorded in ``signals(id)``,
  as ``TERM``, ``USR1``; it is answered as TERM would be). A behaviour with ``traps_term``
  exits 0 at once; otherwise the call waits the grace period on the clock (a virtual clock
  advances, stopping early if the container exits on its own) and the container is killed
  with exit code 137. Unknown programs trap TERM; shell
  scripts without a ``trap ... TERM`` and a bare ``sleep`` do not (as PID 1 in a real engine).
* Events are delivered synchronously, in the thread that caused the change, after the runtime's
  lock is released. Only managed containers produce events.
* Node leases (``claim_node``) live in the runtime object, timed by its clock: every agent
  handed the same ``FakeRuntime`` shares them, as agents on one engine do; ``node_lease(name)``
  shows one.
* Once ``close()`` is called every runtime call raises ``RuntimeUnavailable``.
"""

from __future__ import annotations

import collections
import copy
import functools
import hashlib
import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import attrs

from kubecore import ContainerRuntimeError
from kubecore.runtime import (
    CONTAINER_NAME_LABEL,
    EMPTY_DIR_PLUGIN,
    INIT_CONTAINER_ANNOTATION,
    POD_NAME_LABEL,
    POD_UID_LABEL,
    SIDECAR_ANNOTATION,
    Clock,
    Conflict,
    ContainerConfig,
    ContainerNotFound,
    ContainerResources,
    ContainerStats,
    ExecResult,
    Image,
    ImageFsUsage,
    ImageNotFound,
    ImagePullError,
    InvalidConfig,
    Mount,
    NamespaceMode,
    NodeClaim,
    NodeHolder,
    NodeLease,
    PullProgress,
    RegistryAuth,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    RuntimeTimeout,
    RuntimeUnavailable,
    RuntimeVersion,
    SandboxConfig,
    SandboxNotFound,
    SandboxState,
    SandboxUnusable,
    SystemClock,
    TimerHandle,
    parse_image_ref,
    parse_image_user,
)
from kubecore_fake import _shell
from kubecore_fake._shell import TimedFile, TimedLog

logger = logging.getLogger(__name__)

MiB = 1024 * 1024
GiB = 1024 * MiB
FAKE_VERSION = "0.1.0"
DEFAULT_SANDBOX_IMAGE = "registry.k8s.io/pause:3.9"

OPERATIONS = frozenset(
    {
        "version",
        "run_sandbox",
        "stop_sandbox",
        "remove_sandbox",
        "list_sandboxes",
        "sandbox_status",
        "create_container",
        "start_container",
        "stop_container",
        "update_container_resources",
        "remove_container",
        "list_containers",
        "container_status",
        "snapshot",
        "exec_sync",
        "logs",
        "watch_events",
        "container_stats",
        "claim_node",
        "release_node",
        "pull",
        "image_status",
        "list_images",
        "remove_image",
        "image_fs_usage",
    }
)
"""Operation names accepted by ``fail_next``, ``add_latency`` and ``call_count`` (``*``: all)."""


def _str_tuple(values: Iterable[str]) -> tuple[str, ...]:
    return (values,) if isinstance(values, str) else tuple(values)


def _int_tuple(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _timeline(values: Iterable[TimedLog | TimedFile]) -> tuple[TimedLog | TimedFile, ...]:
    return tuple(values)


@attrs.frozen
class Behaviour:
    """What a container does once started (scripted with ``FakeRuntime.script``)."""

    exit_code: int | None = None
    """Exit with this code ``after`` seconds; None runs until stopped."""
    after: float = 0.0
    fail_start: bool | str = False
    """Make ``start_container`` fail (a string is the engine's message)."""
    logs: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    """Lines printed when the container starts."""
    traps_term: bool = True
    """True: TERM makes it exit 0 at once. False: it is killed (137) after the grace period."""
    oom: bool = False
    """OOM-killed (137, ``OOMKilled``) ``after`` seconds. Also happens when ``memory_bytes``
    exceeds the container's ``memory_limit``."""
    memory_bytes: int = 4 * MiB
    cpu_fraction: float = 0.01
    writable_layer_bytes: int = 0
    """Disk its writable layer uses (reported by ``container_stats``)."""
    ports: tuple[int, ...] = attrs.field(default=(), converter=_int_tuple)
    """TCP ports it listens on (inside its sandbox's network) while running."""
    reason: str = ""
    """Reason reported on exit ('' derives it: ``Completed`` for 0, else ``Error``)."""
    timeline: tuple[TimedLog | TimedFile, ...] = attrs.field(default=(), converter=_timeline)
    """Lines printed and files written at given offsets after start."""
    message: str = ""
    """The termination message it exits with."""


PROC_MOUNTS = "/proc/mounts"


def proc_mounts(mounts: Sequence[Mount]) -> str:
    """The container's mount table as Linux shows it, from its config: a memory-backed mount is
    a tmpfs with its size (in KiB, as the kernel prints it) and its root's mode (printed when
    not the tmpfs default, 1777), a bind shows its host path."""
    lines = []
    for m in mounts:
        options = ["ro" if m.read_only else "rw"]
        if m.memory_backed:
            if m.size_limit_bytes is not None:
                options.append(f"size={m.size_limit_bytes // 1024}k")
            if m.mode is not None and m.mode != 0o1777:
                options.append(f"mode={m.mode:o}")
            lines.append(f"tmpfs {m.container_path} tmpfs {','.join(options)} 0 0\n")
        else:
            lines.append(f"{m.host_path} {m.container_path} bind {','.join(options)} 0 0\n")
    return "".join(lines)


@attrs.frozen
class ExecRequest:
    """What an ``on_exec`` handler is given."""

    container: RuntimeContainer
    argv: tuple[str, ...]


ExecHandler = Callable[[ExecRequest], ExecResult | int]
ExecMatcher = str | Sequence[str] | Callable[[tuple[str, ...]], bool]


@attrs.frozen
class _Script:
    image: str | None
    command: str | tuple[str, ...] | None
    behaviour: Behaviour


@attrs.frozen
class _ExecRule:
    matcher: ExecMatcher
    handler: ExecHandler | ExecResult | int
    container: str | None


class _Changes:
    """A change counter shared by the records of one kind: bumped whenever one is added,
    removed, or changes a field its view shows, so that an unchanged listing is reused."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


_V = TypeVar("_V")


def _changed(record: _Sandbox | _Container, _attribute: attrs.Attribute[Any], value: _V) -> _V:
    """``on_setattr`` hook of the fields a view shows: the cached view is stale."""
    record.stale = True
    record.changes.count += 1
    return value


@attrs.define(eq=False)
class _Sandbox:
    id: str
    config: SandboxConfig
    state: SandboxState = attrs.field(on_setattr=_changed)
    created_at: float
    ip: str
    managed: bool = True
    changes: _Changes = attrs.field(kw_only=True)
    # The frozen view, built when first asked for and again only once a shown field changed
    # (snapshot at 10,000 pods would otherwise build 30,000 values a call).
    view: RuntimeSandbox | None = None
    stale: bool = True


@attrs.define(eq=False)
class _Container:
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
    changes: _Changes = attrs.field(kw_only=True)
    view: RuntimeContainer | None = None
    stale: bool = True


@attrs.define(eq=False)
class _Image:
    id: str
    tags: list[str]
    size: int
    created_at: float
    user: str = ""


class _Subscription:
    def __init__(self, runtime: FakeRuntime, handler: Callable[[RuntimeEvent], None]) -> None:
        self._runtime = runtime
        self._handler = handler

    def close(self) -> None:
        self._runtime._unsubscribe(self._handler)


_Events = list[RuntimeEvent]


def normalize_image(ref: str) -> str:
    """The name an image is stored under, as Docker lists it: ``busybox`` and
    ``docker.io/library/busybox:latest`` -> ``busybox:latest``
    (``kubecore.runtime.parse_image_ref``)."""
    return parse_image_ref(ref).familiar()


def image_id_for(ref: str) -> str:
    return "sha256:" + hashlib.sha256(normalize_image(ref).encode()).hexdigest()


def rfc3339(timestamp: float) -> str:
    seconds = int(timestamp // 1)
    nanos = round((timestamp - seconds) * 1e9)
    if nanos >= 1_000_000_000:
        seconds, nanos = seconds + 1, nanos - 1_000_000_000
    moment = datetime.fromtimestamp(seconds, UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{nanos:09d}Z"


class FakeRuntime:
    """An in-memory ``ContainerRuntime`` and ``Puller``; thread-safe (one lock).

    ``images``: None lets every pull succeed; an iterable of references (or a mapping of
    reference to size in bytes) allows only those. ``pulled`` images are present from the start.
    The call log keeps the last ``max_calls`` calls.
    """

    def __init__(
        self,
        clock: Clock | None = None,
        images: Iterable[str] | Mapping[str, int] | None = None,
        *,
        pulled: Iterable[str] | Mapping[str, int] = (),
        image_fs_capacity: int = 100 * GiB,
        default_image_size: int = 10 * MiB,
        node_ip: str = "10.88.0.1",
        events: bool = True,
        max_calls: int = 100_000,
    ) -> None:
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._sandbox_ids = itertools.count(1)
        self._container_ids = itertools.count(1)
        self._unmanaged_ids = itertools.count(1)
        self._ips = itertools.count(2)
        self._sandboxes: dict[str, _Sandbox] = {}
        self._containers: dict[str, _Container] = {}
        # Name indexes, so the uniqueness checks stay O(1) with many thousands of pods.
        self._sandbox_names: dict[tuple[str, str, str, int], str] = {}
        self._container_names: dict[tuple[tuple[str, str, str], str, int], str] = {}
        # Change counters of the listed records, and the listings built at those counts.
        self._sandbox_changes = _Changes()
        self._container_changes = _Changes()
        self._sandboxes_listed: tuple[int, tuple[RuntimeSandbox, ...]] = (-1, ())
        self._containers_listed: tuple[int, tuple[RuntimeContainer, ...]] = (-1, ())
        self._images: dict[str, _Image] = {}
        self._sizes: dict[str, int] = {}
        self._users: dict[str, str] = {}
        self._pullable: set[str] | None = None
        self._aliases: dict[str, str] = {}
        self._auth: dict[str, RegistryAuth] = {}
        self._capacity = image_fs_capacity
        self._default_size = default_image_size
        self._node_ip = node_ip
        self._events_enabled = events
        self._handlers: list[Callable[[RuntimeEvent], None]] = []
        self._scripts: list[_Script] = []
        self._exec_rules: list[_ExecRule] = []
        self._failures: dict[str, list[BaseException]] = {}
        self._latency: dict[str, float] = {}
        # Bounded, so that a long-running agent on the fake does not grow without end.
        self._calls: collections.deque[tuple[str, tuple[object, ...]]] = collections.deque(
            maxlen=max_calls
        )
        self._unmanaged_calls: list[tuple[str, tuple[object, ...]]] = []
        self._timers: set[TimerHandle] = set()
        self._leases: dict[str, NodeLease] = {}
        self._closed = False
        if images is not None:
            self._pullable = set()
            for ref, size in _sized(images):
                self.add_image(ref, size)
        for ref, size in _sized(pulled):
            self.add_image(ref, size, pulled=True)

    # == test controls ==========================================================================

    @property
    def clock(self) -> Clock:
        return self._clock

    def add_image(
        self,
        ref: str,
        size: int | None = None,
        *,
        pulled: bool = False,
        image_id: str = "",
        user: str = "",
    ) -> str:
        """Make ``ref`` pullable (with ``size`` bytes); ``pulled=True`` also makes it present.
        Returns its image id (``image_id`` lets two references share one image). ``user`` is the
        user the image runs as (Docker's ``USER``: ``1000``, ``nobody``; '' for root)."""
        norm = normalize_image(ref)
        with self._lock:
            if user:
                self._users[norm] = user
            if self._pullable is not None:
                self._pullable.add(norm)
            if size is not None:
                self._sizes[norm] = size
            if image_id:
                self._aliases[norm] = image_id
            if pulled:
                return self._store_image_locked(norm)
            return self._aliases.get(norm) or image_id_for(norm)

    def require_auth(self, ref: str, auth: RegistryAuth) -> None:
        """Pulls of ``ref`` succeed only with these credentials (username and password)."""
        with self._lock:
            self._auth[normalize_image(ref)] = auth

    def set_image_fs_capacity(self, capacity_bytes: int) -> None:
        with self._lock:
            self._capacity = capacity_bytes

    def script(
        self,
        image: str | None = None,
        command: str | Sequence[str] | None = None,
        behaviour: Behaviour | None = None,
    ) -> None:
        """Containers created from now on whose image and command match get ``behaviour``.

        ``command`` as a sequence must equal command + args; as a string it must equal them
        joined by spaces, or the script of ``sh -c SCRIPT``. The newest matching script wins.
        """
        if image is None and command is None:
            raise ValueError("script() needs an image, a command, or both")
        cmd: str | tuple[str, ...] | None = (
            command if command is None or isinstance(command, str) else tuple(command)
        )
        with self._lock:
            self._scripts.append(
                _Script(
                    None if image is None else normalize_image(image),
                    cmd,
                    behaviour if behaviour is not None else Behaviour(),
                )
            )

    def on_exec(
        self,
        matcher: ExecMatcher,
        handler: ExecHandler | ExecResult | int,
        *,
        container: str | None = None,
    ) -> None:
        """Answer matching ``exec_sync`` calls with ``handler`` (a callable, an ``ExecResult``
        or an exit code). ``matcher``: a string (the whole command joined by spaces, or a
        ``sh -c`` script), a sequence (a prefix of the argv) or a predicate on the argv.
        ``container`` limits the rule to one container id or name. The newest rule wins."""
        with self._lock:
            self._exec_rules.append(_ExecRule(matcher, handler, container))

    def exit(
        self, container_id: str, code: int = 0, reason: str | None = None, message: str = ""
    ) -> None:
        """Make a running container exit now (reason derived from the code if not given)."""
        events: _Events = []
        with self._lock:
            rec = self._running_locked(container_id)
            self._exit_locked(rec, code, reason or "", message, events)
        self._emit(events)

    def crash(self, container_id: str, code: int = 1, message: str = "") -> None:
        self.exit(container_id, code, "Error", message)

    def oom_kill(self, container_id: str) -> None:
        events: _Events = []
        with self._lock:
            rec = self._running_locked(container_id)
            rec.signals.append("KILL")
            self._exit_locked(rec, 137, "OOMKilled", "", events, oom=True)
        self._emit(events)

    def write_log(self, container_id: str, text: str) -> None:
        """Append output to a container's log (one entry per line)."""
        with self._lock:
            rec = self._get_container_locked(container_id)
            self._log_locked(rec, text)

    def write_file(self, container_id: str, path: str, content: str | None) -> None:
        """Set (or with None delete) a file that exec ``cat``/``test -e`` will see."""
        with self._lock:
            rec = self._get_container_locked(container_id)
            if content is None:
                rec.files.pop(path, None)
            else:
                rec.files[path] = content

    def fail_next(self, op: str, n: int = 1, error: BaseException | None = None) -> None:
        """The next ``n`` calls of ``op`` (or of anything, with ``*``) raise ``error``."""
        _check_op(op)
        err = error if error is not None else ContainerRuntimeError(f"injected failure in {op}")
        with self._lock:
            self._failures.setdefault(op, []).extend([err] * n)

    def add_latency(self, op: str, seconds: float) -> None:
        """Each call of ``op`` (``*``: every call) first takes ``seconds`` on the clock
        (a ``ManualClock`` advances; a real one sleeps). 0 removes it."""
        _check_op(op)
        with self._lock:
            if seconds <= 0:
                self._latency.pop(op, None)
            else:
                self._latency[op] = seconds

    def add_unmanaged_container(
        self,
        name: str = "not-kubecore",
        image: str = "unmanaged:latest",
        labels: Mapping[str, str] | None = None,
        *,
        running: bool = True,
    ) -> str:
        """A container kubecore did not create: never listed; calls that target it are kept
        in ``unmanaged_calls``."""
        with self._lock:
            cid = f"unmanaged-{next(self._unmanaged_ids)}"
            now = self._clock.now()
            rec = _Container(
                cid,
                "",
                ContainerConfig(name=name, image=image, labels=dict(labels or {})),
                image_id_for(image),
                Behaviour(),
                now,
                managed=False,
                changes=self._container_changes,
            )
            if running:
                rec.state = RuntimeState.RUNNING
                rec.started_at = now
                rec.started_mono = self._clock.monotonic()
                rec.run = 1
            self._containers[cid] = rec
            self._container_changes.count += 1
            self._container_names.setdefault((rec.pod, name, 0), cid)
            return cid

    def add_unmanaged_sandbox(
        self, name: str = "not-kubecore", labels: Mapping[str, str] | None = None
    ) -> str:
        with self._lock:
            sid = f"unmanaged-{next(self._unmanaged_ids)}"
            config = SandboxConfig(name=name, namespace="", uid="", labels=dict(labels or {}))
            self._sandboxes[sid] = _Sandbox(
                sid,
                config,
                SandboxState.READY,
                self._clock.now(),
                "",
                managed=False,
                changes=self._sandbox_changes,
            )
            self._sandbox_changes.count += 1
            return sid

    @property
    def calls(self) -> list[tuple[str, tuple[object, ...]]]:
        """The runtime calls made so far (the last ``max_calls``): (operation, arguments)."""
        with self._lock:
            return list(self._calls)

    def call_count(self, op: str) -> int:
        with self._lock:
            return sum(1 for name, _ in self._calls if op in ("*", name))

    @property
    def unmanaged_calls(self) -> list[tuple[str, tuple[object, ...]]]:
        """Calls that targeted an unmanaged object (kubecore must never make any)."""
        with self._lock:
            return list(self._unmanaged_calls)

    def signals(self, container_id: str) -> tuple[str, ...]:
        """Signals sent to the container (``TERM``, ``KILL``), oldest first."""
        with self._lock:
            return tuple(self._get_container_locked(container_id).signals)

    def find_containers(
        self,
        name: str | None = None,
        *,
        pod_name: str | None = None,
        pod_uid: str | None = None,
        state: RuntimeState | None = None,
    ) -> list[RuntimeContainer]:
        """Managed containers by container name (the ``CONTAINER_NAME_LABEL`` or config name),
        pod name / UID label and state, oldest first."""
        with self._lock:
            found = []
            for rec in self._containers.values():
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
                found.append(self._view_locked(rec))
            return found

    def sandbox_config(self, sandbox_id: str) -> SandboxConfig:
        with self._lock:
            return self._get_sandbox_locked(sandbox_id).config

    def container_config(self, container_id: str) -> ContainerConfig:
        with self._lock:
            return self._get_container_locked(container_id).config

    def container_behaviour(self, container_id: str) -> Behaviour:
        with self._lock:
            return self._get_container_locked(container_id).behaviour

    def listening_ports(self, sandbox_id: str) -> frozenset[int]:
        """Ports that running containers of the sandbox listen on."""
        with self._lock:
            return self._listening_locked(sandbox_id, None)

    # == ContainerRuntime =======================================================================

    def version(self) -> RuntimeVersion:
        self._enter("version")
        return RuntimeVersion("fake", FAKE_VERSION, "v1")

    def run_sandbox(self, config: SandboxConfig) -> str:
        self._enter("run_sandbox", config)
        with self._lock:
            key = (config.name, config.namespace, config.uid, config.attempt)
            if key in self._sandbox_names:
                raise Conflict(
                    f"sandbox name {config.namespace}/{config.name} attempt {config.attempt}"
                    f" (uid {config.uid}) is already in use by {self._sandbox_names[key]}"
                )
            sid = f"sandbox-{next(self._sandbox_ids)}"
            ip = self._node_ip if config.host_network else self._next_ip_locked()
            self._sandboxes[sid] = _Sandbox(
                sid,
                config,
                SandboxState.READY,
                self._clock.now(),
                ip,
                changes=self._sandbox_changes,
            )
            self._sandbox_changes.count += 1
            self._sandbox_names[key] = sid
            logger.debug("sandbox %s created", sid, extra={"sandbox_id": sid, "pod": config.name})
            return sid

    def stop_sandbox(self, sandbox_id: str) -> None:
        self._enter("stop_sandbox", sandbox_id, target=sandbox_id)
        events: _Events = []
        with self._lock:
            sb = self._sandboxes.get(sandbox_id)
            if sb is None:
                return
            for rec in self._containers.values():
                if rec.sandbox_id == sandbox_id and rec.state is RuntimeState.RUNNING:
                    rec.signals.append("KILL")
                    self._exit_locked(rec, 137, "Error", "", events)
            sb.state = SandboxState.NOTREADY
        self._emit(events)

    def remove_sandbox(self, sandbox_id: str) -> None:
        self._enter("remove_sandbox", sandbox_id, target=sandbox_id)
        events: _Events = []
        with self._lock:
            if sandbox_id not in self._sandboxes:
                return
            for rec in [c for c in self._containers.values() if c.sandbox_id == sandbox_id]:
                self._remove_container_locked(rec, events)
            c = self._sandboxes.pop(sandbox_id).config
            self._sandbox_changes.count += 1
            key = (c.name, c.namespace, c.uid, c.attempt)
            if self._sandbox_names.get(key) == sandbox_id:
                del self._sandbox_names[key]
            self._cond.notify_all()
        self._emit(events)

    def list_sandboxes(self) -> list[RuntimeSandbox]:
        self._enter("list_sandboxes")
        with self._lock:
            return list(self._sandboxes_locked())

    def sandbox_status(self, sandbox_id: str) -> RuntimeSandbox:
        self._enter("sandbox_status", sandbox_id, target=sandbox_id)
        with self._lock:
            return self._sandbox_view_locked(self._get_sandbox_locked(sandbox_id))

    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str:
        self._enter("create_container", sandbox_id, config, sandbox_config, target=sandbox_id)
        if not config.image:
            raise InvalidConfig(f"container {config.name!r}: an image is required")
        events: _Events = []
        with self._lock:
            self._get_sandbox_locked(sandbox_id)
            image = self._find_image_locked(config.image)
            if image is None:
                raise ImageNotFound(f"No such image: {config.image}")
            # Names are unique per pod, container and attempt (as dockershim's names are).
            pod = (sandbox_config.name, sandbox_config.namespace, sandbox_config.uid)
            other_id = self._container_names.get((pod, config.name, config.attempt))
            if other_id is not None:
                raise Conflict(
                    f"container name {config.name!r} attempt {config.attempt} of pod"
                    f" {pod[1]}/{pod[0]} is already in use by {other_id}"
                )
            cid = f"container-{next(self._container_ids)}"
            rec = _Container(
                cid,
                sandbox_id,
                config,
                image.id,
                self._behaviour_locked(config, sandbox_config.hostname or sandbox_config.name),
                self._clock.now(),
                pod=pod,
                changes=self._container_changes,
            )
            rec.files[PROC_MOUNTS] = proc_mounts(config.mounts)
            self._containers[cid] = rec
            self._container_changes.count += 1
            self._container_names[(pod, config.name, config.attempt)] = cid
            self._note(events, RuntimeEventType.CREATED, rec)
        self._emit(events)
        return cid

    def start_container(self, container_id: str) -> None:
        self._enter("start_container", container_id, target=container_id)
        events: _Events = []
        with self._lock:
            rec = self._get_container_locked(container_id)
            if rec.state is RuntimeState.RUNNING:
                return
            if rec.state is not RuntimeState.CREATED:
                raise Conflict(f"container {container_id} has exited; create a new one")
            sb = self._sandboxes.get(rec.sandbox_id)
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
            self._start_locked(rec, events)
        self._emit(events)

    def stop_container(self, container_id: str, timeout: float) -> None:
        self._enter("stop_container", container_id, timeout, target=container_id)
        events: _Events = []
        with self._lock:
            rec = self._containers.get(container_id)
            if rec is None or rec.state is not RuntimeState.RUNNING:
                return
            # The container's stop signal stands in for TERM (its behaviour answers it alike).
            rec.signals.append(rec.config.stop_signal.removeprefix("SIG") or "TERM")
            if rec.exited is None:
                rec.exited = threading.Event()
            run, exited = rec.run, rec.exited
            if rec.behaviour.traps_term:
                self._exit_locked(rec, 0, "", "", events)
        self._emit(events)
        if exited.is_set():
            return
        self._clock.wait(exited, max(0.0, timeout))
        with self._lock:
            rec = self._containers.get(container_id)
            if rec is not None and rec.run == run and rec.state is RuntimeState.RUNNING:
                rec.signals.append("KILL")
                self._exit_locked(rec, 137, "Error", "", events)
        self._emit(events)

    def update_container_resources(self, container_id: str, resources: ContainerResources) -> None:
        """Resize in place: the container's recorded config takes the new resources."""
        self._enter("update_container_resources", container_id, resources, target=container_id)
        with self._lock:
            rec = self._get_container_locked(container_id)
            rec.config = attrs.evolve(
                rec.config,
                cpu_shares=resources.cpu_shares,
                cpu_quota=resources.cpu_quota,
                cpu_period=resources.cpu_period,
                memory_limit=resources.memory_limit,
            )

    def remove_container(self, container_id: str) -> None:
        self._enter("remove_container", container_id, target=container_id)
        events: _Events = []
        with self._lock:
            rec = self._containers.get(container_id)
            if rec is None:
                return
            self._remove_container_locked(rec, events)
        self._emit(events)

    def list_containers(self) -> list[RuntimeContainer]:
        self._enter("list_containers")
        with self._lock:
            return list(self._containers_locked())

    def container_status(self, container_id: str) -> RuntimeContainer:
        self._enter("container_status", container_id, target=container_id)
        with self._lock:
            return self._view_locked(self._get_container_locked(container_id))

    def snapshot(self) -> RuntimeSnapshot:
        self._enter("snapshot")
        with self._lock:
            return RuntimeSnapshot(
                sandboxes=self._sandboxes_locked(),
                containers=self._containers_locked(),
                taken_at=self._clock.now(),
            )

    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult:
        """Run ``command`` through the ``on_exec`` rules, else the built-in reading. A timeout
        of 0 or less means none (as in the CRI)."""
        argv = tuple(command)
        self._enter("exec_sync", container_id, argv, timeout, target=container_id)
        with self._lock:
            rec = self._get_container_locked(container_id)
            if rec.state is not RuntimeState.RUNNING:
                raise Conflict(f"container {container_id} is not running")
            view = self._view_locked(rec)
            rule = self._exec_rule_locked(view, argv)
            files = dict(rec.files)
            listening = self._listening_locked(rec.sandbox_id, rec)
            processes = self._processes_locked(rec)
            env = dict(rec.config.env)
        limit = timeout if timeout > 0 else float("inf")
        if rule is not None:
            started = self._clock.monotonic()
            result = _exec_result(rule.handler, ExecRequest(view, argv))
            if self._clock.monotonic() - started > limit:
                raise RuntimeTimeout(f"exec {list(argv)} in {container_id}: timed out")
            return result
        outcome = _shell.read_exec(argv, env, files, listening, processes)
        if outcome.duration > limit:
            self._clock.sleep(limit)
            raise RuntimeTimeout(
                f"exec {list(argv)} in {container_id}: timed out after {timeout} s"
            )
        self._clock.sleep(outcome.duration)
        return ExecResult(outcome.exit_code, outcome.stdout.encode(), outcome.stderr.encode())

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        """The container's log. ``follow`` blocks (in real time, on a condition) for new lines
        while the container runs: with a ``ManualClock`` make it exit from another thread."""
        self._enter("logs", container_id, target=container_id)
        with self._lock:
            rec = self._get_container_locked(container_id)
            lines = list(rec.logs)
        return self._follow(rec, lines, tail, follow, since, timestamps)

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> _Subscription | None:
        self._enter("watch_events")
        if not self._events_enabled:
            return None
        with self._lock:
            self._handlers.append(handler)
        return _Subscription(self, handler)

    def container_stats(self) -> list[ContainerStats]:
        self._enter("container_stats")
        with self._lock:
            mono, now = self._clock.monotonic(), self._clock.now()
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
                for rec in self._containers.values()
                if rec.managed and rec.state is RuntimeState.RUNNING
            ]

    # -- node leases (NodeClaims) -------------------------------------------------------------

    def claim_node(
        self, node_name: str, holder: NodeHolder, ttl: float, *, replace: str = ""
    ) -> NodeClaim:
        """The engine's lease on a node name, in memory (shared by every agent on this runtime,
        timed by its clock)."""
        self._enter("claim_node", node_name, holder, ttl)
        with self._lock:
            now = self._clock.now()
            current = self._leases.get(node_name)
            mine = NodeLease(node_name, holder, now, ttl)
            if current is None or current.holder.id == holder.id:
                self._leases[node_name] = mine
                return NodeClaim(True, mine)
            if current.expired(now) or (replace and current.holder.id == replace):
                self._leases[node_name] = mine
                return NodeClaim(True, mine, replaced=current)
            return NodeClaim(False, current)

    def release_node(self, node_name: str, holder: NodeHolder) -> None:
        self._enter("release_node", node_name, holder)
        with self._lock:
            current = self._leases.get(node_name)
            if current is not None and current.holder.id == holder.id:
                del self._leases[node_name]

    def node_lease(self, node_name: str) -> NodeLease | None:
        """The lease on ``node_name`` as it stands (a test control), lapsed or not."""
        with self._lock:
            return self._leases.get(node_name)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            timers = list(self._timers)
            self._timers.clear()
            self._handlers.clear()
            self._cond.notify_all()
        for timer in timers:
            timer.cancel()

    # == Puller =================================================================================

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        self._enter("pull", image)
        norm = normalize_image(image)
        with self._lock:
            if self._pullable is not None and norm not in self._pullable:
                raise ImagePullError(
                    f"pull access denied for {image}: repository does not exist"
                    " or may require authorization"
                )
            required = self._auth.get(norm)
            if required is not None and (
                auth is None
                or (auth.username, auth.password) != (required.username, required.password)
            ):
                raise ImagePullError(f"pull {image}: unauthorized: authentication required")
            image_id = self._store_image_locked(norm)
            size = self._images[image_id].size
        if progress is not None:
            for status, current in (
                ("Pulling fs layer", 0),
                ("Downloading", size),
                ("Pull complete", size),
            ):
                progress(PullProgress(image, status, current, size, layer=image_id[7:19]))
        return image_id

    def image_status(self, image: str) -> Image | None:
        self._enter("image_status", image)
        with self._lock:
            found = self._find_image_locked(image)
            return None if found is None else _image_view(found)

    def list_images(self) -> list[Image]:
        self._enter("list_images")
        with self._lock:
            return [_image_view(img) for img in self._images.values()]

    def remove_image(self, image: str) -> None:
        self._enter("remove_image", image)
        with self._lock:
            found = self._find_image_locked(image)
            if found is None:
                return
            users = [c.id for c in self._containers.values() if c.image_id == found.id]
            by_tag = normalize_image(image) in found.tags and image != found.id
            if users and (not by_tag or len(found.tags) == 1):
                raise Conflict(f"image {image} is used by container(s) {', '.join(users)}")
            if by_tag:
                found.tags.remove(normalize_image(image))
                if found.tags:
                    return
            del self._images[found.id]

    def image_fs_usage(self) -> ImageFsUsage:
        self._enter("image_fs_usage")
        with self._lock:
            used = sum(img.size for img in self._images.values())
            return ImageFsUsage(used, self._capacity)

    # == internals ==============================================================================

    def _enter(self, op: str, *args: object, target: str | None = None) -> None:
        """Record the call, apply injected latency and failures."""
        with self._lock:
            if self._closed:
                raise RuntimeUnavailable(f"{op}: the fake runtime is closed")
            self._calls.append((op, args))
            if target is not None and self._is_unmanaged_locked(target):
                self._unmanaged_calls.append((op, args))
            failure = self._pop_failure_locked(op) or self._pop_failure_locked("*")
            latency = self._latency.get(op, 0.0) + self._latency.get("*", 0.0)
        if latency > 0:
            self._clock.sleep(latency)
        if failure is not None:
            raise _fresh(failure)

    def _pop_failure_locked(self, op: str) -> BaseException | None:
        queue = self._failures.get(op)
        if not queue:
            return None
        failure = queue.pop(0)
        if not queue:
            del self._failures[op]
        return failure

    def _is_unmanaged_locked(self, object_id: str) -> bool:
        rec = self._containers.get(object_id)
        if rec is not None:
            return not rec.managed
        sb = self._sandboxes.get(object_id)
        return sb is not None and not sb.managed

    def _next_ip_locked(self) -> str:
        n = next(self._ips)
        return f"10.88.{(n // 254) % 256}.{n % 254 + 1}"

    def _get_sandbox_locked(self, sandbox_id: str) -> _Sandbox:
        sb = self._sandboxes.get(sandbox_id)
        if sb is None:
            raise SandboxNotFound(f"no such sandbox: {sandbox_id}")
        return sb

    def _get_container_locked(self, container_id: str) -> _Container:
        rec = self._containers.get(container_id)
        if rec is None:
            raise ContainerNotFound(f"no such container: {container_id}")
        return rec

    def _running_locked(self, container_id: str) -> _Container:
        rec = self._get_container_locked(container_id)
        if rec.state is not RuntimeState.RUNNING:
            raise Conflict(f"container {container_id} is not running")
        return rec

    def _store_image_locked(self, norm: str) -> str:
        image_id = self._aliases.get(norm) or image_id_for(norm)
        existing = self._images.get(image_id)
        if existing is None:
            size = self._sizes.get(norm, self._default_size)
            user = self._users.get(norm, "")
            self._images[image_id] = _Image(image_id, [norm], size, self._clock.now(), user)
        elif norm not in existing.tags:
            existing.tags.append(norm)
        return image_id

    def _find_image_locked(self, ref: str) -> _Image | None:
        if ref in self._images:
            return self._images[ref]
        norm = normalize_image(ref)
        for img in self._images.values():
            if norm in img.tags or img.id == f"sha256:{ref}":
                return img
        return None

    def _behaviour_locked(self, config: ContainerConfig, hostname: str) -> Behaviour:
        argv = _shell.effective_argv(config.command, config.args)
        image = normalize_image(config.image)
        for script in reversed(self._scripts):
            if script.image is not None and script.image != image:
                continue
            if script.command is not None and not _command_matches(script.command, argv):
                continue
            return script.behaviour
        program = _shell.read_program(
            argv,
            {"HOSTNAME": hostname, **dict(config.env)},  # as Docker and containerd set it
            # A sidecar is an init container that runs beside the app, as long as they do.
            is_init=config.annotations.get(INIT_CONTAINER_ANNOTATION) == "true"
            and config.annotations.get(SIDECAR_ANNOTATION) != "true",
            read_file=functools.partial(_read_mounted_file, config.mounts),
            list_dir=functools.partial(_list_mounted_dir, config.mounts),
        )
        return Behaviour(
            exit_code=program.exit_code,
            after=program.after,
            traps_term=program.traps_term,
            ports=program.ports,
            timeline=program.timeline,
            message=program.message,
        )

    def _start_locked(self, rec: _Container, events: _Events) -> None:
        behaviour = rec.behaviour
        rec.state = RuntimeState.RUNNING
        rec.started_at = self._clock.now()
        rec.started_mono = self._clock.monotonic()
        rec.exit_code, rec.reason, rec.message = None, "", ""
        rec.run += 1
        rec.exited = None
        self._note(events, RuntimeEventType.STARTED, rec)
        for line in behaviour.logs:
            self._log_locked(rec, line)
        limit = rec.config.memory_limit
        oom = behaviour.oom or (limit is not None and 0 < limit < behaviour.memory_bytes)
        ends = oom or behaviour.exit_code is not None
        for item in behaviour.timeline:
            if ends and item.at > behaviour.after:
                continue
            if item.at <= 0:
                self._apply_locked(rec, item)
            else:
                self._schedule(item.at, rec, _apply_item(item))
        if not ends:
            return
        finish = _finisher(oom, behaviour)
        if behaviour.after <= 0:
            finish(self, rec, events)
        else:
            self._schedule(behaviour.after, rec, finish)

    def _apply_locked(self, rec: _Container, item: TimedLog | TimedFile) -> None:
        if isinstance(item, TimedLog):
            self._log_locked(rec, item.line)
            return
        if item.content is None:
            rec.files.pop(item.path, None)
        else:
            rec.files[item.path] = item.content
        _write_through(rec.config.mounts, item.path, item.content)

    def _schedule(
        self,
        delay: float,
        rec: _Container,
        action: Callable[[FakeRuntime, _Container, _Events], None],
    ) -> None:
        cid, run = rec.id, rec.run

        def fire() -> None:
            events: _Events = []
            with self._lock:
                self._timers.discard(handle)
                current = self._containers.get(cid)
                if (
                    self._closed
                    or current is None
                    or current.run != run
                    or current.state is not RuntimeState.RUNNING
                ):
                    return
                action(self, current, events)
            self._emit(events)

        # Under the lock, so that a timer firing at once finds its handle already recorded.
        with self._lock:
            handle = self._clock.call_at(self._clock.monotonic() + delay, fire)
            self._timers.add(handle)

    def _log_locked(self, rec: _Container, text: str) -> None:
        now = self._clock.now()
        for line in text.splitlines() or [""]:
            rec.logs.append((now, line))
        self._cond.notify_all()

    def _exit_locked(
        self,
        rec: _Container,
        code: int,
        reason: str,
        message: str,
        events: _Events,
        *,
        oom: bool = False,
    ) -> None:
        rec.state = RuntimeState.EXITED
        rec.finished_at = self._clock.now()
        rec.exit_code = code
        rec.reason = reason or ("Completed" if code == 0 else "Error")
        rec.message = message
        if rec.exited is not None:
            rec.exited.set()
        if oom:
            self._note(events, RuntimeEventType.OOM, rec)
        self._note(events, RuntimeEventType.DIED, rec, exit_code=code)
        self._cond.notify_all()

    def _remove_container_locked(self, rec: _Container, events: _Events) -> None:
        if rec.state is RuntimeState.RUNNING:
            rec.signals.append("KILL")
            self._exit_locked(rec, 137, "Error", "", events)
        self._note(events, RuntimeEventType.DELETED, rec)
        del self._containers[rec.id]
        self._container_changes.count += 1
        key = (rec.pod, rec.config.name, rec.config.attempt)
        if self._container_names.get(key) == rec.id:
            del self._container_names[key]
        self._cond.notify_all()

    def _listening_locked(self, sandbox_id: str, rec: _Container | None) -> frozenset[int]:
        ports: set[int] = set()
        for other in self._containers.values():
            same = other is rec or (sandbox_id != "" and other.sandbox_id == sandbox_id)
            if same and other.state is RuntimeState.RUNNING:
                ports.update(other.behaviour.ports)
        return frozenset(ports)

    def _processes_locked(self, rec: _Container) -> tuple[str, ...]:
        """The command lines ``ps`` in ``rec`` sees, as its sandbox's PID namespace mode says:
        its own (CONTAINER), its pod's running containers' (POD) or every one's (NODE)."""
        sandbox = self._sandboxes.get(rec.sandbox_id)
        mode = sandbox.config.namespace_options.pid if sandbox else NamespaceMode.CONTAINER
        seen = []
        for other in self._containers.values():
            if other.state is not RuntimeState.RUNNING:
                continue
            if (
                other is rec
                or mode is NamespaceMode.NODE
                or (mode is NamespaceMode.POD and other.sandbox_id == rec.sandbox_id)
            ):
                seen.append(" ".join((*other.config.command, *other.config.args)))
        return tuple(seen)

    def _exec_rule_locked(self, view: RuntimeContainer, argv: tuple[str, ...]) -> _ExecRule | None:
        names = {view.id, view.name, view.labels.get(CONTAINER_NAME_LABEL, view.name)}
        for rule in reversed(self._exec_rules):
            if rule.container is not None and rule.container not in names:
                continue
            if _exec_matches(rule.matcher, argv):
                return rule
        return None

    def _note(
        self,
        events: _Events,
        kind: RuntimeEventType,
        rec: _Container,
        exit_code: int | None = None,
    ) -> None:
        """Queue an event (delivered by ``_emit`` once the lock is released)."""
        if not rec.managed:
            return
        labels = rec.config.labels
        events.append(
            RuntimeEvent(
                kind,
                rec.id,
                self._clock.now(),
                pod_uid=labels.get(POD_UID_LABEL, ""),
                container_name=labels.get(CONTAINER_NAME_LABEL, rec.config.name),
                exit_code=exit_code,
            )
        )

    def _emit(self, events: _Events) -> None:
        if not events:
            return
        with self._lock:
            handlers = list(self._handlers)
        for event in events:
            for handler in handlers:
                try:
                    handler(event)
                except Exception:
                    logger.exception("runtime event handler failed", extra={"event": event})
        events.clear()

    def _unsubscribe(self, handler: Callable[[RuntimeEvent], None]) -> None:
        with self._lock:
            if handler in self._handlers:
                self._handlers.remove(handler)

    def _follow(
        self,
        rec: _Container,
        lines: list[tuple[float, str]],
        tail: int | None,
        follow: bool,
        since: float | None,
        timestamps: bool,
    ) -> Iterator[bytes]:
        seen = len(lines)
        selected = [entry for entry in lines if since is None or entry[0] >= since]
        if tail is not None:
            selected = selected[-tail:] if tail > 0 else []
        for entry in selected:
            yield _log_line(entry, timestamps)
        while follow:
            with self._cond:
                while (
                    len(rec.logs) <= seen
                    and rec.state is RuntimeState.RUNNING
                    and not self._closed
                    and self._containers.get(rec.id) is rec
                ):
                    self._cond.wait(0.5)
                new = rec.logs[seen:]
                seen = len(rec.logs)
                follow = (
                    rec.state is RuntimeState.RUNNING
                    and not self._closed
                    and self._containers.get(rec.id) is rec
                )
            for entry in new:
                if since is None or entry[0] >= since:
                    yield _log_line(entry, timestamps)

    def _sandboxes_locked(self) -> tuple[RuntimeSandbox, ...]:
        """The managed sandboxes' views, rebuilt only after a sandbox changed."""
        count, listed = self._sandboxes_listed
        if count != self._sandbox_changes.count:
            listed = tuple(
                self._sandbox_view_locked(sb) for sb in self._sandboxes.values() if sb.managed
            )
            self._sandboxes_listed = (self._sandbox_changes.count, listed)
        return listed

    def _containers_locked(self) -> tuple[RuntimeContainer, ...]:
        """The managed containers' views, rebuilt only after a container changed."""
        count, listed = self._containers_listed
        if count != self._container_changes.count:
            listed = tuple(
                self._view_locked(rec) for rec in self._containers.values() if rec.managed
            )
            self._containers_listed = (self._container_changes.count, listed)
        return listed

    def _view_locked(self, rec: _Container) -> RuntimeContainer:
        """The container's frozen view, shared by every call until a shown field changes (its
        labels and annotations are the config's own: both are frozen)."""
        view = rec.view
        if view is None or rec.stale:
            view = rec.view = _container_view(rec)
            rec.stale = False
        return view

    def _sandbox_view_locked(self, sb: _Sandbox) -> RuntimeSandbox:
        view = sb.view
        if view is None or sb.stale:
            view = sb.view = _sandbox_view(sb)
            sb.stale = False
        return view


def _container_view(rec: _Container) -> RuntimeContainer:
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


def _sandbox_view(sb: _Sandbox) -> RuntimeSandbox:
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


def _finisher(
    oom: bool, behaviour: Behaviour
) -> Callable[[FakeRuntime, _Container, _Events], None]:
    def finish(runtime: FakeRuntime, rec: _Container, events: _Events) -> None:
        if oom:
            rec.signals.append("KILL")
            runtime._exit_locked(rec, 137, "OOMKilled", "", events, oom=True)
        else:
            code = behaviour.exit_code if behaviour.exit_code is not None else 0
            runtime._exit_locked(rec, code, behaviour.reason, behaviour.message, events)

    return finish


def _mounted_host_path(mounts: Iterable[Mount], path: str) -> str | None:
    """Where on the host ``path`` inside a container is, when one of its mounts (a host
    directory or file the agent prepared, such as a volume) holds it."""
    for mount in mounts:
        root = mount.container_path.rstrip("/")
        if path != root and not path.startswith(root + "/"):
            continue
        if path == root:
            return mount.host_path
        return os.path.join(mount.host_path, os.path.relpath(path, root))
    return None


def _read_mounted_file(mounts: Iterable[Mount], path: str) -> str | None:
    """The text of the mounted file ``path`` (None when no mount holds it or it is unreadable)."""
    host = _mounted_host_path(mounts, path)
    if host is None:
        return None
    try:
        with open(host, encoding="utf-8", errors="replace") as file:
            return file.read()
    except OSError:
        return None


def _write_through(mounts: Iterable[Mount], path: str, content: str | None) -> None:
    """A file a container writes into one of its pod's emptyDir volumes lands in the volume's
    directory, as on a real node: the pod's other containers see it, and the agent reads it
    (``fileKeyRef``). Nothing is written anywhere else (a hostPath stays untouched)."""
    for mount in mounts:
        if mount.read_only or f"/{EMPTY_DIR_PLUGIN}/" not in mount.host_path:
            continue
        host = _mounted_host_path((mount,), path)
        if host is None or host == mount.host_path:
            continue
        try:
            if content is None:
                os.unlink(host)
            else:
                os.makedirs(os.path.dirname(host), exist_ok=True)
                with open(host, "w", encoding="utf-8") as file:
                    file.write(content)
        except OSError:
            logger.debug("could not write %s through to %s", path, host, exc_info=True)
        return


def _list_mounted_dir(mounts: Iterable[Mount], path: str) -> tuple[str, ...] | None:
    """The names in the mounted directory ``path`` (see ``_shell.DirLister``)."""
    host = _mounted_host_path(mounts, path)
    if host is None:
        return None
    try:
        return tuple(os.listdir(host))
    except (FileNotFoundError, NotADirectoryError):
        raise
    except OSError:
        return None


def _apply_item(
    item: TimedLog | TimedFile,
) -> Callable[[FakeRuntime, _Container, _Events], None]:
    def apply(runtime: FakeRuntime, rec: _Container, events: _Events) -> None:
        runtime._apply_locked(rec, item)

    return apply


def _sized(images: Iterable[str] | Mapping[str, int]) -> list[tuple[str, int | None]]:
    if isinstance(images, str):
        return [(images, None)]
    if isinstance(images, Mapping):
        return [(ref, int(size)) for ref, size in images.items()]
    return [(ref, None) for ref in images]


def _fresh(error: BaseException) -> BaseException:
    """A copy of an injected error, so that raising it again does not pile up tracebacks."""
    try:
        fresh = copy.copy(error)
    except Exception:
        return error
    fresh.__traceback__ = None
    return fresh


def _check_op(op: str) -> None:
    if op != "*" and op not in OPERATIONS:
        raise ValueError(f"unknown operation {op!r}; known: {', '.join(sorted(OPERATIONS))}")


def _command_matches(expected: str | tuple[str, ...], argv: tuple[str, ...]) -> bool:
    if isinstance(expected, str):
        return expected in (" ".join(argv), _shell.shell_script(argv))
    return expected == argv


def _exec_matches(matcher: ExecMatcher, argv: tuple[str, ...]) -> bool:
    if isinstance(matcher, str):
        return matcher in (" ".join(argv), _shell.shell_script(argv))
    if callable(matcher):
        return bool(matcher(argv))
    prefix = tuple(matcher)
    return argv[: len(prefix)] == prefix


def _exec_result(handler: ExecHandler | ExecResult | int, request: ExecRequest) -> ExecResult:
    answer = handler(request) if callable(handler) else handler
    return ExecResult(answer) if isinstance(answer, int) else answer


def _image_view(img: _Image) -> Image:
    uid, username = parse_image_user(img.user)
    return Image(
        id=img.id,
        tags=tuple(img.tags),
        size=img.size,
        created_at=img.created_at,
        uid=uid,
        username=username,
    )


def _log_line(entry: tuple[float, str], timestamps: bool) -> bytes:
    timestamp, line = entry
    text = f"{rfc3339(timestamp)} {line}\n" if timestamps else f"{line}\n"
    return text.encode()
