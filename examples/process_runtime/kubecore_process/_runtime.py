"""Containers as local processes. THERE IS NO ISOLATION: read the package docstring first.

Everything lives in files under the state directory, so that a new runtime instance (in an
agent restarted after SIGTERM or ``kill -9``) sees what an earlier one started, with the same ids
and labels, and no pod is started twice:

* ``sandboxes/<id>.json``: a sandbox's config and whether it is ready; ``pods/<id>/`` is its
  directory (the containers' default working dir and ``HOME``). Its IP is 127.0.0.1.
* ``containers/<id>/``: ``container.json`` (config, command, env, working dir), and what the
  container's supervisor (``_shim.py``, a process of its own) writes: ``started`` (pid), ``log``
  (stdout/stderr, a line at a time, each line stamped), ``exit``; it holds ``lock`` while it runs.
* ``images.json``: the "pulled" names. Images are names on an allow-list: a "pull" of an allowed
  name succeeds and marks it present; it downloads nothing and the image selects nothing.

A container runs ``command + args`` on the host in its own session and process group, with the
config's env on top of a minimal base. Stop: SIGTERM to the group, SIGKILL after the grace period;
when the main process ends, whatever it left in its group is killed. ``close()`` leaves
containers running. There is no event stream: the agent relists.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from kubecore import ContainerRuntimeError
from kubecore.runtime import (
    MANAGED_LABEL,
    Conflict,
    ContainerConfig,
    ContainerNotFound,
    ContainerStats,
    ExecResult,
    Image,
    ImageFsUsage,
    ImageNotFound,
    ImagePullError,
    InvalidConfig,
    LinuxContainerSecurityContext,
    NamespaceMode,
    PullProgress,
    RegistryAuth,
    RuntimeBase,
    RuntimeContainer,
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
    TerminalSize,
    parse_image_ref,
)
from kubecore_process import _shim
from kubecore_process._shim import EXIT, LOCK, LOG, SPEC, STARTED, kill_group, rfc3339, write_json
from kubecore_process._streams import LogAttach, ProcessSession

POD_IP = "127.0.0.1"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_KILL_WAIT = 10.0
"""Seconds to wait for a SIGKILLed process group to end before giving up."""
_START_WAIT = 10.0
"""Seconds a start waits at most for the supervisor to report the process started."""
_SETTLE = 0.5
"""Seconds a start waits at most for the new process to settle (see ``_await_settled``)."""
_POLL = 0.02
"""Seconds between two looks at a container's files while waiting for it."""


def normalise_image(image: str) -> str:
    """``host`` and ``docker.io/library/host`` -> ``host:latest`` (Docker's reading)."""
    return parse_image_ref(image).familiar()


def image_id(image: str) -> str:
    return "sha256:" + hashlib.sha256(normalise_image(image).encode()).hexdigest()


def parse_log_line(raw: bytes) -> tuple[float, bytes]:
    """A log file line ``<rfc3339> <stream> <text>\\n`` as (timestamp, ``<text>\\n``)."""
    stamp, _, rest = raw.partition(b" ")
    _, _, text = rest.partition(b" ")
    return datetime.fromisoformat(stamp.decode()).timestamp(), text


def _read_json(path: Path) -> Any:
    """The file's JSON, or None if it does not exist (yet, or any more)."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


class ProcessPuller:
    """The image service: names on an allow-list, the "pulled" ones kept in ``images.json``. A
    pull of one marks it present and downloads nothing; the image selects nothing (size 0)."""

    def __init__(self, allowed: Iterable[str], state_dir: Path, runtime: ProcessRuntime) -> None:
        self.allowed = frozenset(normalise_image(name) for name in allowed)
        self._path = state_dir / "images.json"
        self._runtime = runtime
        self._lock = threading.Lock()

    def _present(self) -> dict[str, float]:
        return dict(_read_json(self._path) or {})

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
            present = self._present()
            if ref not in present:
                write_json(self._path, {**present, ref: time.time()})
        if progress is not None:
            progress(PullProgress(image, "Pull complete", current=0, total=0))
        return image_id(ref)

    def image_status(self, image: str) -> Image | None:
        ref = normalise_image(image)
        pulled = self._present().get(ref)
        return None if pulled is None else Image(image_id(ref), tags=(ref,), created_at=pulled)

    def list_images(self) -> list[Image]:
        return [Image(image_id(r), tags=(r,), created_at=t) for r, t in self._present().items()]

    def remove_image(self, image: str) -> None:
        wanted = normalise_image(image)
        with self._lock:
            present = self._present()
            ref = next((r for r in present if wanted == r or image == image_id(r)), None)
            if ref is None:
                return
            if ref in self._runtime.images_in_use():
                raise Conflict(f"image {image} is used by a container")
            present.pop(ref)
            write_json(self._path, present)

    def image_fs_usage(self) -> ImageFsUsage | None:
        return ImageFsUsage(used_bytes=0, capacity_bytes=shutil.disk_usage(self._path.parent).total)


class ProcessRuntime(RuntimeBase):
    """A ``kubecore.ContainerRuntime`` whose containers are host processes (no isolation), its
    records in files under ``state_dir``. Listing and status calls come from ``RuntimeBase``."""

    def __init__(self, state_dir: Path, images: Iterable[str]) -> None:
        self._state = state_dir
        self._sandboxes = state_dir / "sandboxes"
        self._pods = state_dir / "pods"
        self._containers = state_dir / "containers"
        for directory in (self._sandboxes, self._pods, self._containers):
            directory.mkdir(parents=True, exist_ok=True)
        self.images = ProcessPuller(images, state_dir, self)
        """The runtime's image service (the bundle's puller)."""
        self._lock = threading.RLock()
        self._closed = threading.Event()

    def version(self) -> RuntimeVersion:
        self._check_open()
        return RuntimeVersion("process", "0.1.0", api_version="kubecore-process/1")

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise RuntimeUnavailable(f"the process runtime on {self._state} is closed")

    # -- sandboxes ------------------------------------------------------------------------------

    def run_sandbox(self, config: SandboxConfig) -> str:
        self._check_open()
        if config.sysctls:
            raise InvalidConfig(
                f"{config.name}: sysctls: processes share the host's kernel settings"
            )
        key = [config.name, config.namespace, config.uid, config.attempt]
        with self._lock:
            for sandbox_id, record in self._sandbox_records():
                if record["key"] == key:
                    raise Conflict(f"sandbox {key} already exists as {sandbox_id}")
            sandbox_id = secrets.token_hex(32)
            (self._pods / sandbox_id).mkdir()
            write_json(
                self._sandboxes / f"{sandbox_id}.json",
                {
                    "key": key, "hostname": config.hostname, "labels": dict(config.labels),
                    "annotations": dict(config.annotations), "created_at": time.time(),
                    "ready": True,
                },
            )  # fmt: skip
        return sandbox_id

    def stop_sandbox(self, sandbox_id: str) -> None:
        self._check_open()
        for container_id in self._members(sandbox_id):
            self.stop_container(container_id, 0)
        with self._lock:
            record = _read_json(self._sandboxes / f"{sandbox_id}.json")
            if record is not None:
                write_json(self._sandboxes / f"{sandbox_id}.json", {**record, "ready": False})

    def remove_sandbox(self, sandbox_id: str) -> None:
        self._check_open()
        for container_id in self._members(sandbox_id):
            self.remove_container(container_id)
        with self._lock:
            (self._sandboxes / f"{sandbox_id}.json").unlink(missing_ok=True)
            shutil.rmtree(self._pods / sandbox_id, ignore_errors=True)

    def _sandbox_records(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for path in self._sandboxes.glob("*.json"):
            record = _read_json(path)
            if record is not None:
                yield path.stem, record

    def _members(self, sandbox_id: str) -> list[str]:
        return [
            path.parent.name
            for path in self._containers.glob(f"*/{SPEC}")
            if (_read_json(path) or {}).get("sandbox_id") == sandbox_id
        ]

    # -- containers -----------------------------------------------------------------------------

    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str:
        self._check_open()
        argv = [*config.command, *config.args]
        if not argv:
            raise InvalidConfig(f"{config.name}: the process runtime needs a command (no images)")
        if config.security_context is not None:
            asked = _asked_security_fields(config.security_context)
            raise InvalidConfig(
                f"{config.name}: {', '.join(asked)}: a process runs as the agent's user, with no"
                " isolation"
            )
        if config.stop_signal:
            raise InvalidConfig(
                f"{config.name}: the process runtime stops containers with TERM only"
                f" (stop_signal {config.stop_signal} asked)"
            )
        if config.stdin or config.tty:
            raise InvalidConfig(
                f"{config.name}: the process runtime gives no container stdin or a tty"
            )
        namespaces = config.namespace_options
        if namespaces is not None and namespaces.pid is NamespaceMode.TARGET:
            raise InvalidConfig(
                f"{config.name}: namespace_options.pid TARGET: the process runtime has no process"
                " namespace to join (every process runs in the host's)"
            )
        ref = normalise_image(config.image)
        if self.images.image_status(ref) is None:
            raise ImageNotFound(f"{config.image} is not present (pull it first)")
        with self._lock:
            if _read_json(self._sandboxes / f"{sandbox_id}.json") is None:
                raise SandboxNotFound(sandbox_id)
            home = self._pods / sandbox_id
            for other in self._members(sandbox_id):
                spec = _read_json(self._containers / other / SPEC) or {}
                if [spec.get("name"), spec.get("attempt")] == [config.name, config.attempt]:
                    raise Conflict(f"container {config.name} attempt {config.attempt} exists")
            container_id = secrets.token_hex(32)
            directory = self._containers / container_id
            directory.mkdir()
            (directory / LOG).touch()
            env = {
                "PATH": os.environ.get("PATH", DEFAULT_PATH),
                "HOSTNAME": sandbox_config.hostname or sandbox_config.name,
                "HOME": str(home),
                **dict(config.env),
            }
            write_json(
                directory / SPEC,
                {
                    "sandbox_id": sandbox_id, "name": config.name, "attempt": config.attempt,
                    "image": ref, "labels": dict(config.labels),
                    "annotations": dict(config.annotations), "argv": argv, "env": env,
                    "workdir": config.working_dir or str(home), "created_at": time.time(),
                },
            )  # fmt: skip
        return container_id

    def start_container(self, container_id: str) -> None:
        self._check_open()
        with self._lock:
            container = self._container(container_id)
            if container.state is not RuntimeState.CREATED:
                if container.state is RuntimeState.RUNNING:
                    return
                raise Conflict(f"container {container_id} has exited; create a new one")
            sandbox = self._sandbox(container.sandbox_id)
            if sandbox is None or sandbox.state is not SandboxState.READY:
                raise SandboxUnusable(f"the sandbox of container {container_id} is not ready")
            directory = self._containers / container_id
            shim = [sys.executable, "-I", _shim.__file__, str(directory)]
            try:  # the shim forks into the background and its parent returns at once
                subprocess.run(
                    shim, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True, check=True,
                )  # fmt: skip
            except (OSError, subprocess.CalledProcessError) as error:
                raise ContainerRuntimeError(f"{container_id}: no supervisor: {error}") from None
            deadline = time.monotonic() + _START_WAIT
            while not (directory / STARTED).exists() and not (directory / EXIT).exists():
                if time.monotonic() > deadline:
                    raise RuntimeTimeout(f"{container_id} did not start within {_START_WAIT}s")
                time.sleep(_POLL)
        started = self._container(container_id)
        if started.reason == "ContainerCannotRun":
            raise ContainerRuntimeError(f"{container_id}: {started.message}")
        pid = _pid(directory)
        if pid is not None:
            _await_settled(pid)

    def stop_container(self, container_id: str, timeout: float) -> None:
        self._check_open()
        directory = self._containers / container_id
        if not self._signal(directory, signal.SIGTERM):
            return
        if timeout > 0 and _wait_ended(directory, timeout):
            return
        self._signal(directory, signal.SIGKILL)
        if not _wait_ended(directory, _KILL_WAIT):
            raise RuntimeTimeout(f"{container_id} did not die within {_KILL_WAIT}s of SIGKILL")

    def remove_container(self, container_id: str) -> None:
        self._check_open()
        directory = self._containers / container_id
        if self._signal(directory, signal.SIGKILL) and not _wait_ended(directory, _KILL_WAIT):
            raise RuntimeTimeout(f"{container_id} did not die within {_KILL_WAIT}s of SIGKILL")
        with self._lock:
            shutil.rmtree(directory, ignore_errors=True)

    def _signal(self, directory: Path, signum: int) -> bool:
        """Signal the container's process group; False if it is not running. Its supervisor
        reaps the main process only after writing ``exit``, so the group id is still its own."""
        with self._lock:
            pid = _pid(directory)
            if pid is None or _ended(directory):
                return False
            kill_group(pid, signum)
            return True

    def snapshot(self) -> RuntimeSnapshot:
        self._check_open()
        with self._lock:
            sandboxes = [_sandbox_view(i, r) for i, r in self._sandbox_records()]
            containers = [
                view
                for spec in self._containers.glob(f"*/{SPEC}")
                if (view := self._container_view(spec.parent)) is not None
            ]
        return RuntimeSnapshot(
            tuple(s for s in sandboxes if MANAGED_LABEL in s.labels),
            tuple(c for c in containers if MANAGED_LABEL in c.labels),
            taken_at=time.time(),
        )

    def images_in_use(self) -> set[str]:
        """The image of every container, managed or not."""
        specs = (_read_json(path) for path in self._containers.glob(f"*/{SPEC}"))
        return {spec["image"] for spec in specs if spec is not None}

    def _sandbox(self, sandbox_id: str) -> RuntimeSandbox | None:
        record = _read_json(self._sandboxes / f"{sandbox_id}.json")
        return None if record is None else _sandbox_view(sandbox_id, record)

    def _container(self, container_id: str) -> RuntimeContainer:
        view = self._container_view(self._containers / container_id)
        if view is None:
            raise ContainerNotFound(container_id)
        return view

    def _container_view(self, directory: Path) -> RuntimeContainer | None:
        spec = _read_json(directory / SPEC)
        if spec is None:
            return None
        started = _read_json(directory / STARTED)
        ended = _read_json(directory / EXIT)
        if ended is None and started is not None and not _supervised(directory):
            ended = _read_json(directory / EXIT) or {  # written just before the shim ended?
                "exit_code": 137, "reason": "Error", "finished_at": time.time(),
                "message": "its supervisor was killed: how the process ended is unknown",
            }  # fmt: skip
        state = (
            RuntimeState.EXITED
            if ended is not None
            else RuntimeState.RUNNING
            if started is not None
            else RuntimeState.CREATED
        )
        ended = ended or {}
        return RuntimeContainer(
            directory.name, spec["sandbox_id"], spec["name"], spec["image"], state,
            spec["created_at"], attempt=spec["attempt"], image_id=image_id(spec["image"]),
            started_at=(started or {}).get("started_at"), finished_at=ended.get("finished_at"),
            exit_code=ended.get("exit_code"), reason=ended.get("reason", ""),
            message=ended.get("message", ""), labels=spec["labels"],
            annotations=spec["annotations"],
        )  # fmt: skip

    # -- exec, logs, stats ----------------------------------------------------------------------

    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult:
        self._check_open()
        if self._container(container_id).state is not RuntimeState.RUNNING:
            raise Conflict(f"container {container_id} is not running")
        spec = _read_json(self._containers / container_id / SPEC)
        if spec is None:  # removed meanwhile
            raise ContainerNotFound(container_id)
        try:
            process = subprocess.Popen(
                command, cwd=spec["workdir"], env=spec["env"], stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
        except OSError as error:
            code = 127 if isinstance(error, FileNotFoundError) else 126
            return ExecResult(code, stderr=f"{error}\n".encode())
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=_KILL_WAIT)
            raise RuntimeTimeout(f"exec {command!r} took longer than {timeout}s") from None
        code = process.returncode
        return ExecResult(128 - code if code < 0 else code, stdout, stderr)

    def exec_stream(
        self,
        container_id: str,
        command: list[str],
        *,
        stdin: bool,
        tty: bool,
        size: TerminalSize | None = None,
    ) -> ProcessSession:
        """A host process in the container's working dir with its env, on pipes or a pty
        (``kubecore_process._streams``)."""
        spec = self._running_spec(container_id)
        return ProcessSession(
            command, cwd=spec["workdir"], env=spec["env"], stdin=stdin, tty=tty, size=size
        )

    def attach(self, container_id: str, *, stdin: bool, tty: bool) -> LogAttach:
        """The main process's output from now on (its log), until it ends."""
        self._running_spec(container_id)
        directory = self._containers / container_id
        try:
            log = (directory / LOG).open("rb")
        except FileNotFoundError:
            raise ContainerNotFound(container_id) from None
        return LogAttach(log, directory, _ended, _exit_code)

    def _running_spec(self, container_id: str) -> dict[str, Any]:
        self._check_open()
        if self._container(container_id).state is not RuntimeState.RUNNING:
            raise Conflict(f"container {container_id} is not running")
        spec = _read_json(self._containers / container_id / SPEC)
        if spec is None:  # removed meanwhile
            raise ContainerNotFound(container_id)
        return dict(spec)

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        self._check_open()
        directory = self._containers / container_id
        try:
            log = (directory / LOG).open("rb")
        except FileNotFoundError:
            raise ContainerNotFound(container_id) from None
        return self._read_log(directory, log, tail, follow, since, timestamps)

    def _read_log(
        self, directory: Path, log: Any, tail: int | None, follow: bool, since: float | None,
        stamps: bool,
    ) -> Iterator[bytes]:  # fmt: skip
        def shown(raw: bytes) -> bytes | None:
            at, text = parse_log_line(raw)
            if since is not None and at < since:
                return None
            return f"{rfc3339(at)} ".encode() + text if stamps else text

        with log:
            existing = [line for raw in log.readlines() if (line := shown(raw)) is not None]
            yield from existing[0 if tail is None else max(0, len(existing) - tail) :]
            partial = b""
            while follow:
                # Once it has ended (or is gone), all of its output is in the file.
                finished = _ended(directory) or not directory.exists()
                partial += log.readline()
                if partial.endswith(b"\n"):
                    if (line := shown(partial)) is not None:
                        yield line
                    partial = b""
                elif finished or self._closed.wait(0.1):
                    return

    def container_stats(self) -> list[ContainerStats]:
        """CPU time and resident memory of each running container's main process (Linux /proc;
        children are not counted)."""
        running = [c for c in self.snapshot().containers if c.state is RuntimeState.RUNNING]
        return [
            _proc_stats(c.id, pid)
            for c in running
            if (pid := _pid(self._containers / c.id)) is not None
        ]

    def close(self) -> None:
        """Forget this instance: its containers keep running, a new instance adopts them."""
        self._closed.set()


def _sandbox_view(sandbox_id: str, record: dict[str, Any]) -> RuntimeSandbox:
    name, namespace, uid, attempt = record["key"]
    state = SandboxState.READY if record["ready"] else SandboxState.NOTREADY
    return RuntimeSandbox(
        sandbox_id, name, namespace, uid, attempt, state, record["created_at"], ip=POD_IP,
        labels=record["labels"], annotations=record["annotations"],
    )  # fmt: skip


def _pid(directory: Path) -> int | None:
    started = _read_json(directory / STARTED)
    return None if started is None else int(started["pid"])


def _supervised(directory: Path) -> bool:
    """Whether the container's supervisor still runs (it holds the lock while it lives)."""
    try:
        fd = os.open(directory / LOCK, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _ended(directory: Path) -> bool:
    return (directory / EXIT).exists() or not _supervised(directory)


def _exit_code(directory: Path) -> int | None:
    ended = _read_json(directory / EXIT)
    return None if ended is None else int(ended["exit_code"])


def _wait_ended(directory: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not _ended(directory):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL)
    return True


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


def _asked_security_fields(context: LinuxContainerSecurityContext) -> list[str]:
    """The security-context fields set away from their defaults (all refused here)."""
    default = LinuxContainerSecurityContext()
    return [
        field.name
        for field in attrs.fields(LinuxContainerSecurityContext)
        if getattr(context, field.name) != getattr(default, field.name)
    ]
