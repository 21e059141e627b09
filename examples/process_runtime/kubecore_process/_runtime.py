"""Containers as local processes. THERE IS NO ISOLATION: read the package docstring first.

* A sandbox is a directory under the root dir plus an in-memory record; its IP is 127.0.0.1.
* A container is a child process (its own session and process group) running ``command + args``
  on the host, with the config's env on top of a minimal base and the config's working dir (by
  default the sandbox directory). Mounts, ports, DNS, resources and ``privileged`` are ignored.
* Images are names on an allow-list: a "pull" of an allowed name succeeds and marks it present;
  it downloads nothing and the image selects nothing (size 0).
* stdout/stderr go to one log file per container, a line at a time, each line stamped.
* Stop: SIGTERM to the container's process group, SIGKILL after the grace period. When the main
  process ends, whatever it left behind in its group is killed (as a container's PID 1 would).
* Records live in this object only; ``close()`` kills every container it started.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import attrs

from kubecore import (
    MANAGED_LABEL,
    POD_UID_LABEL,
    Conflict,
    ContainerConfig,
    ContainerNotFound,
    ContainerRuntimeError,
    ContainerStats,
    ExecResult,
    Image,
    ImageFsUsage,
    ImageNotFound,
    ImagePullError,
    InvalidConfig,
    PullProgress,
    RegistryAuth,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    RuntimeTimeout,
    RuntimeVersion,
    SandboxConfig,
    SandboxNotFound,
    SandboxState,
)
from kubecore.images import parse_image_ref

logger = logging.getLogger(__name__)

POD_IP = "127.0.0.1"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_KILL_WAIT = 10.0
"""Seconds to wait for a SIGKILLed process group to be reaped before giving up."""
_SETTLE = 0.5
"""Seconds a start waits at most for the new process to settle (see ``_await_settled``)."""
_DRAIN_AFTER_EXIT = 1.0
"""Seconds to keep reading output after the main process ended (a child may have escaped)."""


def normalise_image(image: str) -> str:
    """``host`` and ``docker.io/library/host`` -> ``host:latest`` (Docker's reading)."""
    return parse_image_ref(image).familiar()


def image_id(image: str) -> str:
    return "sha256:" + hashlib.sha256(normalise_image(image).encode()).hexdigest()


def exit_code_of(returncode: int) -> int:
    """Popen's ``-N`` for "killed by signal N" as a shell (and Docker) reports it: 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def rfc3339(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_log_line(raw: bytes) -> tuple[float, bytes]:
    """A log file line ``<rfc3339> <stream> <text>\\n`` as (timestamp, ``<text>\\n``)."""
    stamp, _, rest = raw.partition(b" ")
    _, _, text = rest.partition(b" ")
    return datetime.fromisoformat(stamp.decode()).timestamp(), text


class ProcessPuller:
    """The image service: names on an allow-list. A pull of one marks it present and downloads
    nothing; the image selects nothing (size 0)."""

    def __init__(self, allowed: Iterable[str], root: Path, in_use: Callable[[str], bool]) -> None:
        self.allowed = frozenset(normalise_image(name) for name in allowed)
        self._root = root
        self._in_use = in_use
        self._present: dict[str, float] = {}
        self._lock = threading.Lock()

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        ref = normalise_image(image)
        if ref not in self.allowed:
            raise ImagePullError(
                f"{image}: not a local image of the process runtime "
                f"(allowed: {', '.join(sorted(self.allowed)) or 'none'}); it pulls nothing"
            )
        with self._lock:
            self._present.setdefault(ref, time.time())
        if progress is not None:
            progress(PullProgress(image, "Pull complete", current=0, total=0))
        return image_id(ref)

    def image_status(self, image: str) -> Image | None:
        ref = normalise_image(image)
        with self._lock:
            pulled = self._present.get(ref)
        return None if pulled is None else Image(image_id(ref), tags=(ref,), created_at=pulled)

    def list_images(self) -> list[Image]:
        with self._lock:
            refs = sorted(self._present)
        return [image for ref in refs if (image := self.image_status(ref)) is not None]

    def remove_image(self, image: str) -> None:
        wanted = normalise_image(image)
        with self._lock:
            ref = next((r for r in self._present if wanted == r or image == image_id(r)), None)
        if ref is None:
            return
        if self._in_use(ref):
            raise Conflict(f"image {image} is used by a container")
        with self._lock:
            self._present.pop(ref, None)

    def image_fs_usage(self) -> ImageFsUsage | None:
        return ImageFsUsage(used_bytes=0, capacity_bytes=shutil.disk_usage(self._root).total)


@attrs.define(eq=False)
class _Sandbox:
    id: str
    config: SandboxConfig
    directory: Path
    created_at: float
    state: SandboxState = SandboxState.READY

    def view(self) -> RuntimeSandbox:
        c = self.config
        return RuntimeSandbox(
            self.id, c.name, c.namespace, c.uid, c.attempt, self.state, self.created_at,
            ip=POD_IP, labels=dict(c.labels), annotations=dict(c.annotations),
        )  # fmt: skip


@attrs.define(eq=False)
class _Container:
    id: str
    sandbox_id: str
    config: ContainerConfig
    image_ref: str
    argv: tuple[str, ...]
    workdir: str
    env: dict[str, str]
    log_path: Path
    created_at: float
    state: RuntimeState = RuntimeState.CREATED
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    process: subprocess.Popen[bytes] | None = None
    exited: threading.Event = attrs.Factory(threading.Event)

    def view(self) -> RuntimeContainer:
        c = self.config
        return RuntimeContainer(
            self.id, self.sandbox_id, c.name, self.image_ref, self.state, self.created_at,
            attempt=c.attempt, image_id=image_id(self.image_ref), started_at=self.started_at,
            finished_at=self.finished_at, exit_code=self.exit_code, reason=self.reason,
            message=self.message, labels=dict(c.labels), annotations=dict(c.annotations),
        )  # fmt: skip


class _Subscription:
    def __init__(
        self,
        handlers: list[Callable[[RuntimeEvent], None]],
        handler: Callable[[RuntimeEvent], None],
    ) -> None:
        self._handlers = handlers
        self._handler = handler

    def close(self) -> None:
        if self._handler in self._handlers:
            self._handlers.remove(self._handler)


class ProcessRuntime:
    """A ``kubecore.ContainerRuntime`` whose containers are host processes (no isolation)."""

    def __init__(self, root_dir: Path, images: Iterable[str], *, own_root: bool = False) -> None:
        self._root = root_dir
        self._own_root = own_root
        self.images = ProcessPuller(images, root_dir, self._image_in_use)
        """The runtime's image service (the bundle's puller)."""
        self._lock = threading.RLock()
        self._sandboxes: dict[str, _Sandbox] = {}
        self._containers: dict[str, _Container] = {}
        self._handlers: list[Callable[[RuntimeEvent], None]] = []
        (root_dir / "sandboxes").mkdir(parents=True, exist_ok=True)
        (root_dir / "logs").mkdir(parents=True, exist_ok=True)

    def version(self) -> RuntimeVersion:
        return RuntimeVersion("process", "0.1.0", api_version="kubecore-process/1")

    def _image_in_use(self, ref: str) -> bool:
        with self._lock:
            return any(c.image_ref == ref for c in self._containers.values())

    # -- sandboxes ------------------------------------------------------------------------------

    def run_sandbox(self, config: SandboxConfig) -> str:
        key = (config.name, config.namespace, config.uid, config.attempt)
        with self._lock:
            for s in self._sandboxes.values():
                if (s.config.name, s.config.namespace, s.config.uid, s.config.attempt) == key:
                    raise Conflict(f"sandbox {key} already exists as {s.id}")
            sandbox_id = secrets.token_hex(32)
            directory = self._root / "sandboxes" / sandbox_id
            directory.mkdir()
            self._sandboxes[sandbox_id] = _Sandbox(sandbox_id, config, directory, time.time())
        return sandbox_id

    def stop_sandbox(self, sandbox_id: str) -> None:
        with self._lock:
            sandbox = self._sandboxes.get(sandbox_id)
            members = [c.id for c in self._containers.values() if c.sandbox_id == sandbox_id]
        if sandbox is None:
            return
        for container_id in members:
            self.stop_container(container_id, 0)
        with self._lock:
            sandbox.state = SandboxState.NOTREADY

    def remove_sandbox(self, sandbox_id: str) -> None:
        with self._lock:
            sandbox = self._sandboxes.get(sandbox_id)
            members = [c.id for c in self._containers.values() if c.sandbox_id == sandbox_id]
        for container_id in members:
            self.remove_container(container_id)
        if sandbox is not None:
            shutil.rmtree(sandbox.directory, ignore_errors=True)
            with self._lock:
                self._sandboxes.pop(sandbox_id, None)

    def list_sandboxes(self) -> list[RuntimeSandbox]:
        with self._lock:
            return [s.view() for s in self._sandboxes.values() if MANAGED_LABEL in s.config.labels]

    def sandbox_status(self, sandbox_id: str) -> RuntimeSandbox:
        with self._lock:
            sandbox = self._sandboxes.get(sandbox_id)
        if sandbox is None:
            raise SandboxNotFound(sandbox_id)
        return sandbox.view()

    # -- containers -----------------------------------------------------------------------------

    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str:
        argv = (*config.command, *config.args)
        if not argv:
            raise InvalidConfig(f"{config.name}: the process runtime needs a command (no images)")
        ref = normalise_image(config.image)
        if self.images.image_status(ref) is None:
            raise ImageNotFound(f"{config.image} is not present (pull it first)")
        with self._lock:
            sandbox = self._sandboxes.get(sandbox_id)
            if sandbox is None:
                raise SandboxNotFound(sandbox_id)
            for c in self._containers.values():
                same = (c.config.name, c.config.attempt) == (config.name, config.attempt)
                if c.sandbox_id == sandbox_id and same:
                    raise Conflict(f"container {config.name} attempt {config.attempt} exists")
            container_id = secrets.token_hex(32)
            env = {
                "PATH": os.environ.get("PATH", DEFAULT_PATH),
                "HOSTNAME": sandbox_config.hostname or sandbox_config.name,
                "HOME": str(sandbox.directory),
                **dict(config.env),
            }
            log_path = self._root / "logs" / f"{container_id}.log"
            log_path.touch()
            container = _Container(
                container_id, sandbox_id, config, ref, argv,
                config.working_dir or str(sandbox.directory), env, log_path, time.time(),
            )  # fmt: skip
            self._containers[container_id] = container
        self._emit(container, RuntimeEventType.CREATED)
        return container_id

    def start_container(self, container_id: str) -> None:
        with self._lock:
            container = self._get(container_id)
            if container.state is not RuntimeState.CREATED:
                if container.state is RuntimeState.RUNNING:
                    return
                raise Conflict(f"container {container_id} has exited; create a new one")
            sandbox = self._sandboxes.get(container.sandbox_id)
            if sandbox is None or sandbox.state is not SandboxState.READY:
                raise Conflict(f"the sandbox of container {container_id} is not ready")
            try:
                process = subprocess.Popen(
                    container.argv, cwd=container.workdir, env=container.env,
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    start_new_session=True, close_fds=True,
                )  # fmt: skip
            except OSError as error:
                container.state = RuntimeState.EXITED
                container.exit_code = 127 if isinstance(error, FileNotFoundError) else 126
                container.finished_at = time.time()
                container.reason = "ContainerCannotRun"
                container.message = f"{type(error).__name__}: {error}"
                container.exited.set()
                raise ContainerRuntimeError(f"{container_id}: {container.message}") from error
            container.process = process
            container.state = RuntimeState.RUNNING
            container.started_at = time.time()
        threading.Thread(
            target=self._supervise, args=(container, process), daemon=True,
            name=f"kubecore-process-{container_id[:12]}",
        ).start()  # fmt: skip
        _await_settled(process.pid)
        self._emit(container, RuntimeEventType.STARTED)

    def stop_container(self, container_id: str, timeout: float) -> None:
        with self._lock:
            container = self._containers.get(container_id)
        if container is None or not self._signal(container, signal.SIGTERM):
            return
        if timeout > 0 and container.exited.wait(timeout):
            return
        self._signal(container, signal.SIGKILL)
        if not container.exited.wait(_KILL_WAIT):
            raise RuntimeTimeout(f"{container_id} did not die within {_KILL_WAIT}s of SIGKILL")

    def remove_container(self, container_id: str) -> None:
        with self._lock:
            container = self._containers.get(container_id)
        if container is None:
            return
        if self._signal(container, signal.SIGKILL) and not container.exited.wait(_KILL_WAIT):
            raise RuntimeTimeout(f"{container_id} did not die within {_KILL_WAIT}s of SIGKILL")
        with self._lock:
            if self._containers.pop(container_id, None) is None:
                return
        container.exited.set()  # ends any follower of a never-started container's log
        container.log_path.unlink(missing_ok=True)
        self._emit(container, RuntimeEventType.DELETED)

    def list_containers(self) -> list[RuntimeContainer]:
        return list(self.snapshot().containers)

    def container_status(self, container_id: str) -> RuntimeContainer:
        with self._lock:
            return self._get(container_id).view()

    def snapshot(self) -> RuntimeSnapshot:
        with self._lock:
            containers = [c.view() for c in self._containers.values()]
            sandboxes = self.list_sandboxes()
        managed = tuple(c for c in containers if MANAGED_LABEL in c.labels)
        return RuntimeSnapshot(tuple(sandboxes), managed, taken_at=time.time())

    def _get(self, container_id: str) -> _Container:
        container = self._containers.get(container_id)
        if container is None:
            raise ContainerNotFound(container_id)
        return container

    def _signal(self, container: _Container, signum: int) -> bool:
        """Signal the container's process group; False if it is not running. The main process
        is reaped only under the lock, so its group id cannot have been reused here."""
        with self._lock:
            if container.state is not RuntimeState.RUNNING or container.process is None:
                return False
            _kill_group(container.process.pid, signum)
            return True

    def _supervise(self, container: _Container, process: subprocess.Popen[bytes]) -> None:
        """Copy output to the log until both pipes close, then record the exit (reaper)."""
        try:
            with container.log_path.open("ab") as log:
                _pump(process, log)
        except OSError:
            logger.exception("the output of %s could not be logged", container.id)
        with self._lock:
            code = exit_code_of(process.wait())
            container.state = RuntimeState.EXITED
            container.exit_code = code
            container.finished_at = time.time()
            container.reason = "Completed" if code == 0 else "Error"
        container.exited.set()
        self._emit(container, RuntimeEventType.DIED, exit_code=code)

    # -- exec, logs, events, stats --------------------------------------------------------------

    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult:
        with self._lock:
            container = self._get(container_id)
            if container.state is not RuntimeState.RUNNING:
                raise Conflict(f"container {container_id} is not running")
        try:
            process = subprocess.Popen(
                command, cwd=container.workdir, env=container.env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
        except OSError as error:
            code = 127 if isinstance(error, FileNotFoundError) else 126
            return ExecResult(code, stderr=f"{error}\n".encode())
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=_KILL_WAIT)
            raise RuntimeTimeout(f"exec {command!r} took longer than {timeout}s") from None
        return ExecResult(exit_code_of(process.returncode), stdout, stderr)

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        with self._lock:
            container = self._get(container_id)
        return _read_log(container, tail, follow, since, timestamps)

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> _Subscription:
        with self._lock:
            self._handlers.append(handler)
        return _Subscription(self._handlers, handler)

    def _emit(self, c: _Container, kind: RuntimeEventType, exit_code: int | None = None) -> None:
        if MANAGED_LABEL not in c.config.labels:
            return
        event = RuntimeEvent(
            kind, c.id, time.time(), c.config.labels.get(POD_UID_LABEL, ""), c.config.name,
            exit_code,
        )  # fmt: skip
        with self._lock:
            handlers = list(self._handlers)
        for handler in handlers:
            try:
                handler(event)
            except Exception:
                logger.exception("an event handler failed on %s", event)

    def container_stats(self) -> list[ContainerStats]:
        """CPU time and resident memory of each running container's main process (Linux /proc;
        children are not counted)."""
        with self._lock:
            running = [
                (c.id, c.process.pid)
                for c in self._containers.values()
                if c.state is RuntimeState.RUNNING and c.process is not None
            ]
        return [_proc_stats(cid, pid) for cid, pid in running]

    def close(self) -> None:
        """Kill every container (their output ends with this object), forget all records."""
        with self._lock:
            running = [c for c in self._containers.values() if c.state is RuntimeState.RUNNING]
            self._handlers.clear()
        for container in running:
            self._signal(container, signal.SIGTERM)
        deadline = time.monotonic() + 2.0
        for container in running:
            if not container.exited.wait(max(0.0, deadline - time.monotonic())):
                self._signal(container, signal.SIGKILL)
                container.exited.wait(_KILL_WAIT)
        with self._lock:
            self._containers.clear()
            self._sandboxes.clear()
        if self._own_root:
            shutil.rmtree(self._root, ignore_errors=True)


def _kill_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _await_settled(pid: int) -> None:
    """Return once a new process first blocks (sleeps, waits, reads), at most ``_SETTLE`` s.

    A stop right after a start then finds the program's own TERM handling in place (a shell's
    ``trap`` runs before its first wait): a program's startup is not the agent's to interrupt.
    Without Linux ``/proc`` it returns at once."""
    deadline = time.monotonic() + _SETTLE
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state not in ("R", "D"):
            return
        time.sleep(0.001)


def _pump(process: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    assert process.stdout is not None and process.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ, b"stdout")
    selector.register(process.stderr, selectors.EVENT_READ, b"stderr")
    pending = {b"stdout": b"", b"stderr": b""}
    drain_until: float | None = None
    while selector.get_map() and (drain_until is None or time.monotonic() < drain_until):
        for key, _ in selector.select(timeout=0.1):
            stream: bytes = key.data
            chunk = os.read(key.fd, 65536)
            if not chunk:
                selector.unregister(key.fileobj)
                chunk = b"\n" if pending[stream] else b""
            *lines, pending[stream] = (pending[stream] + chunk).split(b"\n")
            stamp = rfc3339(time.time()).encode()
            log.write(b"".join(b"%s %s %s\n" % (stamp, stream, line) for line in lines))
            log.flush()
        # WNOWAIT: see the main process end without reaping it, so its group id stays ours.
        if drain_until is None and os.waitid(
            os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT
        ):
            _kill_group(process.pid, signal.SIGKILL)
            drain_until = time.monotonic() + _DRAIN_AFTER_EXIT
    selector.close()
    process.stdout.close()
    process.stderr.close()


def _read_log(
    container: _Container, tail: int | None, follow: bool, since: float | None, stamps: bool
) -> Iterator[bytes]:
    def shown(raw: bytes) -> bytes | None:
        at, text = parse_log_line(raw)
        if since is not None and at < since:
            return None
        return f"{rfc3339(at)} ".encode() + text if stamps else text

    try:
        log = container.log_path.open("rb")
    except FileNotFoundError:  # removed meanwhile
        return
    with log:
        existing = [line for raw in log.readlines() if (line := shown(raw)) is not None]
        yield from existing[0 if tail is None else max(0, len(existing) - tail) :]
        partial = b""
        while follow:
            finished = container.exited.is_set()  # once set, all output is in the file
            partial += log.readline()
            if partial.endswith(b"\n"):
                if (line := shown(partial)) is not None:
                    yield line
                partial = b""
            elif finished:
                return
            else:
                container.exited.wait(0.1)


def _proc_stats(container_id: str, pid: int) -> ContainerStats:
    now = time.time()
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return ContainerStats(container_id, now)
    ticks = int(stat[11]) + int(stat[12])  # utime + stime, in clock ticks
    memory = rss_pages * os.sysconf("SC_PAGE_SIZE")
    return ContainerStats(
        container_id, now, cpu_usage_nanos=ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK"),
        memory_working_set_bytes=memory, memory_usage_bytes=memory,
    )  # fmt: skip
