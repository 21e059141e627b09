"""Pod sources: where the desired pods come from.

A source turns some outside state (a manifest directory, a URL, calls from an embedding program)
into ``PodUpdate`` values for the agent. Every source has a ``name`` (stamped on each of its pods
under ``SOURCE_ANNOTATION``) and a ``poll(now)`` method that returns the next pending update, or
None when nothing changed. ``SourcePoller`` calls ``poll`` on a clock and hands every update to a
sink (normally ``Kubelet.update``).

Sources own their timing: ``poll`` may be called as often as the caller likes and a source that is
not due (its interval has not passed, or it is backing off after an error) returns None at once.
Calling ``poll`` again right after it returned an update gives the next pending update, if any.

Adding a networked store (an etcd or API-server watch) later: write a class with a ``name`` and a
``poll(now)`` that never blocks. Its watch runs in its own thread (started by ``start()``, ended by
``close()``, which ``SourcePoller`` calls when present); the thread turns watch events into
``PodUpdate(ADD / UPDATE / REMOVE)`` values on a queue, and after a (re)list it queues one
``PodUpdate(SET)`` with the whole list so a missed event cannot leave a stale pod. ``poll`` pops
the queue. Nothing else in the agent needs to change: the merge of sources, the per-source state
and the "every source has reported" gate already work from those updates.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import attrs

from kubecore._config.objects import object_key
from kubecore._config.updates import Operation, PodUpdate, SourceName
from kubecore._contract.errors import FieldError, SourceUnavailable, ValidationError
from kubecore._manifest import (
    MAX_MANIFEST_BYTES,
    assign_uid,
    decode_manifest_bytes,
    load_manifest_lenient,
    read_manifest_bytes,
    stamp_source,
)
from kubecore._model.v1 import KubeObject, Pod
from kubecore._util.clock import Clock, SystemClock

logger = logging.getLogger(__name__)

FILE_SOURCE: str = SourceName.FILE.value
HTTP_SOURCE: str = SourceName.HTTP.value
API_SOURCE: str = SourceName.API.value

PodKey = tuple[str, str]
"""(namespace, name): a pod's identity inside one source."""


@runtime_checkable
class PodSource(Protocol):
    """Something that produces desired pods. See the module docstring for the contract."""

    @property
    def name(self) -> str: ...

    def poll(self, now: float) -> PodUpdate | None:
        """Return the next pending update, or None. Must not raise; should not block for long
        (an HTTP fetch with a timeout is fine). ``now`` is the clock's monotonic time."""
        ...


@attrs.frozen
class SourceProblem:
    """Something a source could not use: a bad file, a failed fetch, a duplicate pod."""

    where: str
    """A file path or a URL."""
    errors: tuple[FieldError, ...]

    def lines(self) -> list[str]:
        return [f"{self.where}: {error}" for error in self.errors]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def pod_key(pod: Pod) -> PodKey:
    return (pod.metadata.namespace, pod.metadata.name)


def prepare_pods(pods: Iterable[Pod], source: str) -> tuple[Pod, ...]:
    """Give each pod its deterministic uid and stamp the source name on it."""
    return tuple(stamp_source(assign_uid(pod, source), source) for pod in pods)


def _problem_from_exception(where: str, error: Exception) -> SourceProblem:
    if isinstance(error, ValidationError):
        return SourceProblem(where, error.problems)
    return SourceProblem(where, (FieldError("", str(error) or type(error).__name__),))


def parse_manifest(text: str, where: str) -> tuple[tuple[Pod, ...], tuple[FieldError, ...]]:
    """Every valid pod of a manifest text and every problem in it (never raises)."""
    pods, _objects, problems = parse_documents(text, where)
    return pods, problems


def parse_documents(
    text: str, where: str
) -> tuple[tuple[Pod, ...], tuple[KubeObject, ...], tuple[FieldError, ...]]:
    """Every valid pod, ConfigMap and Secret of a manifest text and every problem in it (never
    raises)."""
    try:
        pods, objects, errors = load_manifest_lenient(text, source_name=where)
    except Exception as error:  # a YAML syntax error, or anything the loader did not expect
        return (), (), _problem_from_exception(where, error).errors
    problems = tuple(problem for error in errors for problem in error.problems)
    return tuple(pods), tuple(objects), problems


# --- what a source remembers across restarts ----------------------------------------------


LAST_GOOD_DIR = "manifests-last-good"
"""The directory under the agent's root directory where the manifest sources keep their last good
state (``SourceMemory``)."""


def _write_private_file(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically, mode 0600 whatever the umask: a temporary file in
    the same directory, written and synced, renamed over it. A crash leaves the old file or the
    new one, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class SourceMemory:
    """The last good state of one source, kept in ``directory`` so that a restart finds what the
    source said before it stopped: each manifest file's last good text, whether each manifest
    directory held files, a URL's last good body.

    One JSON record per file, directory or URL, named by a hash of the source's name and the
    path (``<kind>-<sha256>.json``), written atomically with mode 0600 (manifests may hold
    Secrets; the directory is 0700). Nothing in a record is ever logged. The first record that
    cannot be written or read is logged (by path; later ones at debug level) and the source goes
    on without it: the memory only ever keeps pods, it never removes one.
    """

    def __init__(self, directory: str | os.PathLike[str], source: str) -> None:
        self._directory = Path(directory)
        self._source = source
        self._made = False
        self._failed = False

    @property
    def directory(self) -> Path:
        return self._directory

    def _record(self, kind: str, where: str) -> Path:
        digest = _sha256(f"{self._source}\0{where}".encode())
        return self._directory / f"{kind}-{digest[:40]}.json"

    def records(self, kind: str) -> list[dict[str, Any]]:
        """Every record of this source of ``kind`` (``file``, ``root`` or ``url``)."""
        try:
            names = sorted(os.listdir(self._directory))
        except FileNotFoundError:
            return []
        except OSError as error:
            self._warn(str(self._directory), "read", error)
            return []
        found: list[dict[str, Any]] = []
        for name in names:
            if name.startswith(f"{kind}-") and name.endswith(".json"):
                record = self._load(self._directory / name)
                if record is not None and record.get("source") == self._source:
                    found.append(record)
        return found

    def get(self, kind: str, where: str) -> dict[str, Any] | None:
        path = self._record(kind, where)
        if not path.exists():
            return None
        record = self._load(path)
        return record if record is not None and record.get("path") == where else None

    def put(self, kind: str, where: str, **fields: Any) -> None:
        record = {"kind": kind, "source": self._source, "path": where, **fields}
        path = self._record(kind, where)
        try:
            if not self._made:
                self._directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.chmod(self._directory, 0o700)
                self._made = True
            _write_private_file(path, json.dumps(record).encode())
        except OSError as error:
            self._warn(str(path), "written", error)

    def drop(self, kind: str, where: str) -> None:
        path = self._record(kind, where)
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            self._warn(str(path), "removed", error)

    def _load(self, path: Path) -> dict[str, Any] | None:
        try:
            record = json.loads(path.read_bytes())
        except (OSError, ValueError) as error:
            self._warn(str(path), "read", error)
            return None
        return record if isinstance(record, dict) else None

    def _warn(self, where: str, what: str, error: Exception) -> None:
        reason = error.strerror if isinstance(error, OSError) else type(error).__name__
        if self._failed:  # said once: the rest at debug level
            logger.debug("source memory %s cannot be %s: %s", where, what, reason)
            return
        self._failed = True
        logger.warning(
            "the last good state of source %s cannot be %s at %s (%s): a restart will not find it",
            self._source,
            what,
            where,
            reason or type(error).__name__,
        )


# --- the manifest file / directory source -------------------------------------------------


@attrs.frozen
class _Fingerprint:
    mtime_ns: int
    size: int
    ctime_ns: int = 0
    """A ``chmod`` changes only this."""
    sha256: str = ""

    def same_stat(self, other: _Fingerprint) -> bool:
        return (self.mtime_ns, self.size, self.ctime_ns) == (
            other.mtime_ns,
            other.size,
            other.ctime_ns,
        )


@attrs.define
class _FileState:
    fingerprint: _Fingerprint
    pods: tuple[Pod, ...]
    """The pods this file contributes now: its last good pods when it has turned bad."""
    problem: SourceProblem | None = None
    objects: tuple[KubeObject, ...] = ()
    """Its ConfigMaps and Secrets, kept like its pods."""
    text: str = ""
    """The text ``pods`` and ``objects`` come from (what a restart reads back from memory)."""
    known: bool = True
    """False: the file has never been read (it could not be), so what it holds is unknown."""

    def before(self) -> tuple[tuple[Pod, ...], tuple[KubeObject, ...], str]:
        return self.pods, self.objects, self.text


def _unreadable(state: _FileState) -> bool:
    """The file could not be read the last time: it is read again at every scan."""
    return state.problem is not None and state.problem.errors[0].message.startswith(
        "cannot be read"
    )


@attrs.define
class _Pending:
    """A change seen but not acted on yet: the file must stay as it is for the settle time."""

    seen: _Fingerprint | None
    """None: the file is gone."""
    since: float


DEFAULT_SETTLE = 0.5
"""Seconds a changed manifest file must stay unchanged before it is read (editors and ``cp``
write in place: a half-written file must not restart pods). Short, so that with the file watch a
complete edit is applied within a second."""

LOSS_SETTLE_FACTOR = 10
"""A change that takes pods away (a file removed, fewer pods in it, its text cut short) must stay
unchanged ten times the settle time (5 s by default) before it is acted on: a writer that pauses
mid-file must not kill the pods of the documents it has not written yet."""

_MIN_REREAD = 0.05
"""Seconds before a file that changed while it was read is read again (with ``settle=0``)."""

_EMPTY_DIRECTORY = (
    "the directory holds no manifest file (a mount point not mounted yet?); its pods are kept"
    " (pass --manifest-allow-empty if no pods is meant)"
)
"""Why an empty directory makes its source not ready: a reason (``/healthz``, the log), not a
problem of a manifest (``--once`` with an empty directory runs nothing and succeeds)."""

_NOT_READ_YET = "is being written or cannot be read yet"

_WATCH_DEBOUNCE_MS = 50
"""watchfiles gathers the events of this many milliseconds into one batch."""
_WATCH_READY_MS = 500
"""watchfiles says it has nothing to report after this long: the first time, the watch is known
to be in place (``FileSource.wait_watching``)."""
_WATCH_POLL_MS = 250
"""The period of watchfiles' own polling, used where inotify cannot be (a full watch table, a
file system without notifications)."""


def list_manifest_files(path: Path) -> list[Path]:
    """The manifest files under ``path``: the file itself if it is a regular file, or the regular
    files of a directory (not recursive), sorted by name, skipping names that start with a dot;
    [] if ``path`` does not exist."""
    try:
        return _list_root(path)
    except FileNotFoundError:
        return []


def _list_root(path: Path) -> list[Path]:
    """``list_manifest_files``, raising ``OSError`` when ``path`` does not exist or cannot be
    listed."""
    if path.is_dir():
        return sorted(
            child for child in path.iterdir() if not child.name.startswith(".") and child.is_file()
        )
    path.stat()  # FileNotFoundError / PermissionError
    return [path] if path.is_file() else []  # a FIFO or device would block or never end


def _os_reason(error: OSError) -> str:
    return error.strerror or type(error).__name__


class FileSource:
    """Pods from manifest files (YAML or JSON, several documents per file) and directories.

    Polled every ``interval`` seconds and, once started (``start``; ``SourcePoller`` does it),
    watched: a change reported by inotify (through ``watchfiles``; its polling where inotify
    cannot be used) asks for a poll at once through the ``notify_changes`` callback, and again
    when the settle time has passed, so an edit is applied within ``settle`` plus a few
    milliseconds. A path that does not exist when the source is made is an
    error (``SourceUnavailable``) unless ``may_be_missing``: then it counts as empty until it
    appears (unless the source's memory says it held files: then it is an outage, as below).

    **An outage is not an instruction.** A state the source cannot know is never read as "these
    pods are gone"; while it lasts the source says ``NOT_READY`` (its pods stay, the agent deletes
    nothing) with a reason naming the path:

    * a path that disappears or cannot be read (a mount not there yet, a dangling symlink,
      permissions);
    * a directory that lists no manifest file (an unmounted mount point), at start or later,
      unless ``allow_empty``, or the directory was (accepted) empty the last time, or nothing is
      remembered of it and ``new_node`` says nothing ran before (then empty is that state);
    * before the first ``SET``: a file that could not be read yet, or is still being written
      (its size or mtime changed while it was read), and for which nothing is remembered.

    The first good scan, even after a start spent not ready, reads every file at once and sends
    one ``SET`` with everything.

    **Changes.** A file whose mtime, size, ctime and content hash changed is re-read once it has
    stayed unchanged for ``settle`` seconds; a file whose size or mtime changes while it is read is
    not a state yet (it waits again). A change that takes pods or objects away (the file removed,
    a pod gone from it, or its text cut short: a strict prefix of the last good text) must stay
    unchanged for ``loss_settle`` seconds (default ``LOSS_SETTLE_FACTOR`` times ``settle``): a
    writer that pauses mid-file keeps the pods of the documents it has not written yet, and a
    user removing a pod sees it go after ``loss_settle``. A bad file is reported (logged and
    listed in ``problems``) with its path and every field error; the other files' pods are
    unaffected, a file that was good and turned bad (unreadable, malformed, or holding no pods)
    keeps its last good pods, and a new bad file contributes the valid pods it has. A pod name
    used by two files is kept from the first file (by path order) and reported as a problem of
    the second.

    **Memory.** With ``state_dir`` (the command line uses ``<root-dir>/manifests-last-good``), each
    file's last good text and each directory's emptiness are remembered there (``SourceMemory``),
    so the rules above hold across restarts: a file that is bad, unreadable, empty or half-written
    when the agent starts keeps the pods it had, and while the paths cannot be read at start the
    remembered pods are offered as the source's last known state (a ``SET`` with a reason: the
    source is still not ready).

    Emits ``SET`` for source ``name`` (default ``"file"``) on its first good scan and whenever
    the pods change.
    """

    def __init__(
        self,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        interval: float = 20.0,
        name: str = FILE_SOURCE,
        may_be_missing: bool = False,
        settle: float = DEFAULT_SETTLE,
        loss_settle: float | None = None,
        allow_empty: bool = False,
        state_dir: str | os.PathLike[str] | None = None,
        new_node: bool = False,
        watch: bool = True,
    ) -> None:
        if isinstance(paths, str | os.PathLike):
            paths = [paths]
        self._roots = tuple(Path(p) for p in paths)
        self._absolute_roots = tuple(Path(os.path.abspath(root)) for root in self._roots)
        if not may_be_missing:
            missing = [str(root) for root in self._roots if not os.path.lexists(root)]
            if missing:
                raise SourceUnavailable(
                    f"manifest path {', '.join(missing)} does not exist"
                    " (say that it may appear later with --manifest-may-be-missing)"
                )
        self._may_be_missing = may_be_missing
        self._interval = interval
        self._settle = settle
        self._loss_settle = settle * LOSS_SETTLE_FACTOR if loss_settle is None else loss_settle
        self._allow_empty = allow_empty
        self._new_node = new_node
        self._memory = SourceMemory(state_dir, name) if state_dir is not None else None
        self._remembered_empty: dict[Path, bool] = {}
        """Whether each root was empty the last time it was accepted (absent: not known)."""
        self._name = name
        self._files: dict[Path, _FileState] = {}
        self._pending: dict[Path, _Pending] = {}
        self._seen_roots: set[Path] = set()
        self._unreadable: tuple[SourceProblem, ...] = ()
        self._absent: tuple[SourceProblem, ...] = ()
        self._not_ready = False
        self._scanned = False
        """A complete state has gone out (a ``SET`` without a reason)."""
        self._offered = False
        self._loaded = False
        self._waiting_loss: set[Path] = set()
        self._last_now = 0.0
        self._duplicates: tuple[SourceProblem, ...] = ()
        self._sent: tuple[Pod, ...] | None = None
        self._sent_objects: tuple[KubeObject, ...] = ()
        self._next_due: float | None = None
        self._lock = threading.Lock()
        self._watch = watch
        self._wake: Callable[[], None] | None = None
        self._stop_watch = threading.Event()
        self._watching = threading.Event()
        self._watcher: threading.Thread | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def objects(self) -> tuple[KubeObject, ...]:
        """The ConfigMaps and Secrets last sent."""
        with self._lock:
            return self._sent_objects

    @property
    def paths(self) -> tuple[Path, ...]:
        return self._roots

    @property
    def changing(self) -> tuple[Path, ...]:
        """Files seen changed (or gone) that are waiting for the settle time."""
        with self._lock:
            return tuple(self._pending)

    def notify_changes(self, wake: Callable[[], None]) -> None:
        """``wake`` is called (from the watch thread) when a poll would find something."""
        self._wake = wake

    def start(self) -> None:
        """Watch the manifest paths in a daemon thread (no-op with ``watch=False``)."""
        if not self._watch or self._watcher is not None:
            return
        self._stop_watch.clear()
        self._watching.clear()
        self._watcher = threading.Thread(
            target=self._watch_paths, name="kubecore-manifest-watch", daemon=True
        )
        self._watcher.start()

    def wait_watching(self, timeout: float) -> bool:
        """Wait (real time) until the watch is in place: a change from now on is reported."""
        return self._watching.wait(timeout)

    def close(self) -> None:
        self._stop_watch.set()
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.join(5.0)

    def _watch_paths(self) -> None:
        try:
            import watchfiles
        except ImportError:
            logger.info(
                "watchfiles is not installed: manifests are polled every %gs", self._interval
            )
            return
        if logging.getLogger("watchfiles").level == logging.NOTSET:
            # it logs every batch of changes at INFO: the source logs what the changes do
            logging.getLogger("watchfiles").setLevel(logging.WARNING)
        directories = watched_directories(self._roots)
        for force_polling in (None, True):  # inotify (watchfiles' choice), then its polling
            try:
                for changes in watchfiles.watch(
                    *directories,
                    watch_filter=None,
                    debounce=_WATCH_DEBOUNCE_MS,
                    step=10,
                    stop_event=self._stop_watch,
                    raise_interrupt=False,
                    force_polling=force_polling,
                    poll_delay_ms=_WATCH_POLL_MS,
                    recursive=False,
                    ignore_permission_denied=True,
                    rust_timeout=_WATCH_READY_MS,
                    yield_on_timeout=True,  # the first (empty) batch: the watch is in place
                ):
                    self._watching.set()
                    if any(self._concerns(Path(path)) for _, path in changes):
                        self._changed()
                return
            except Exception as error:  # no inotify here, a watch limit, a root gone
                logger.warning(
                    "watching manifests %s failed (%s): %s",
                    ", ".join(str(d) for d in directories),
                    error,
                    "polling them"
                    if force_polling is None
                    else f"checking every {self._interval:g}s",
                )

    def _concerns(self, path: Path) -> bool:
        changed = Path(os.path.abspath(path))
        return any(root in (changed, changed.parent) for root in self._absolute_roots)

    def _changed(self) -> None:
        """A watched file changed: poll now, and again once it may have settled."""
        with self._lock:
            self._next_due = None
        wake = self._wake
        if wake is None:
            return
        wake()
        if self._settle > 0:
            timer = threading.Timer(self._settle + 0.01, wake)
            timer.daemon = True
            timer.start()

    @property
    def problems(self) -> tuple[SourceProblem, ...]:
        with self._lock:
            return self._current_problems()

    @property
    def pods(self) -> tuple[Pod, ...]:
        """The pods last sent (empty before the first poll)."""
        with self._lock:
            return self._sent or ()

    def poll(self, now: float) -> PodUpdate | None:
        with self._lock:
            if self._next_due is not None and now < self._next_due:
                return None
            self._next_due = now + self._interval
            self._last_now = now
            return self._scan(now, trusted=False)

    def refresh(self) -> PodUpdate | None:
        """Scan now, whatever the interval says, and act on changed files at once (the caller
        knows they are complete)."""
        with self._lock:
            return self._scan(self._last_now, trusted=True)

    def _current_problems(self) -> tuple[SourceProblem, ...]:
        bad_files = tuple(
            state.problem for state in self._files.values() if state.problem is not None
        )
        unreadable = tuple(p for p in self._unreadable if p.errors[0].message != _EMPTY_DIRECTORY)
        return unreadable + bad_files + self._duplicates

    # --- memory ---------------------------------------------------------------------------

    def _load_memory(self) -> None:
        """Before the first scan: the remembered files (as the files' previous states) and
        directories."""
        if self._loaded or self._memory is None:
            self._loaded = True
            return
        self._loaded = True
        for record in self._memory.records("file"):
            path, text, digest = record.get("path"), record.get("text"), record.get("sha256")
            if not (isinstance(path, str) and isinstance(text, str) and isinstance(digest, str)):
                continue
            file = self._own_file(Path(path))
            if file is None:
                continue
            pods, objects, _errors = parse_documents(text, path)
            self._files[file] = _FileState(
                _Fingerprint(0, -1, 0, digest),
                prepare_pods(pods, self._name),
                objects=objects,
                text=text,
            )
        for root in self._roots:
            seen = self._memory.get("root", os.path.abspath(root))
            if seen is not None and isinstance(seen.get("empty"), bool):
                self._remembered_empty[root] = seen["empty"]

    def _own_file(self, absolute: Path) -> Path | None:
        """The path (as this source names it) of a remembered file, if it is one of its roots
        or directly in one."""
        for root, full in zip(self._roots, self._absolute_roots, strict=True):
            if absolute == full:
                return root
            if absolute.parent == full:
                return root / absolute.name
        return None

    def _remember(self, path: Path, state: _FileState) -> None:
        if self._memory is not None:
            self._memory.put(
                "file", os.path.abspath(path), sha256=state.fingerprint.sha256, text=state.text
            )

    def _forget(self, path: Path) -> None:
        if self._memory is not None:
            self._memory.drop("file", os.path.abspath(path))

    def _remember_roots(self, counts: dict[Path, int]) -> None:
        for root, count in counts.items():
            empty = count == 0
            if self._remembered_empty.get(root) is empty:
                continue
            self._remembered_empty[root] = empty
            if self._memory is not None:
                self._memory.put("root", os.path.abspath(root), empty=empty)

    def _had_files(self, root: Path) -> bool:
        """The source knows ``root`` held manifest files (now or before a restart)."""
        if self._remembered_empty.get(root) is False:
            return True
        return any(path == root or path.parent == root for path in self._files)

    # --- scanning -------------------------------------------------------------------------

    def _list(self) -> tuple[list[Path], list[SourceProblem], dict[Path, int]]:
        listed: list[Path] = []
        unready: list[SourceProblem] = []
        absent: list[SourceProblem] = []
        counts: dict[Path, int] = {}
        for root in self._roots:
            try:
                files = _list_root(root)
            except FileNotFoundError:
                if root in self._seen_roots or not self._may_be_missing or self._had_files(root):
                    unready.append(_path_problem(root, "no such file or directory"))
                else:  # may be missing and never seen: no pods from it yet
                    absent.append(_path_problem(root, "does not exist yet"))
                continue
            except OSError as error:
                unready.append(_path_problem(root, _os_reason(error)))
                continue
            if not files and root.is_dir() and not self._empty_allowed(root):
                unready.append(_path_problem(root, _EMPTY_DIRECTORY))
                continue
            self._seen_roots.add(root)
            counts[root] = len(files)
            listed.extend(f for f in files if f not in listed)
        if tuple(absent) != self._absent:
            for problem in absent:
                logger.info("manifest path %s does not exist yet: no pods from it", problem.where)
        self._absent = tuple(absent)
        return listed, unready, counts

    def _empty_allowed(self, root: Path) -> bool:
        if self._allow_empty or self._remembered_empty.get(root) is True:
            return True
        return self._new_node and root not in self._remembered_empty and not self._had_files(root)

    def _scan(self, now: float, *, trusted: bool) -> PodUpdate | None:
        self._load_memory()
        immediate = trusted or not self._scanned
        listed, unready, counts = self._list()
        if unready:
            return self._not_ready_update(unready)
        for gone in [p for p in self._files if p not in listed]:
            if self._gone_long_enough(gone, now, trusted):
                logger.info("manifest %s removed: its pods are removed", gone)
                del self._files[gone]
                self._forget(gone)
        for path in listed:
            self._check_file(path, now, immediate=immediate, trusted=trusted)
        for path in [p for p in self._pending if p not in listed and p not in self._files]:
            del self._pending[path]
        if not self._scanned:
            unknown = [p for p in listed if p not in self._files or not self._files[p].known]
            if unknown:
                return self._not_ready_update(
                    [
                        _path_problem(p, _NOT_READ_YET + ": nothing is removed until it is read")
                        for p in unknown
                    ]
                )
        recovered = self._not_ready
        if recovered:
            logger.warning("manifest paths of source %s can be read again", self._name)
        self._not_ready = False
        self._unreadable = ()
        order = listed + [p for p in self._files if p not in listed]
        pods = self._merge(order)
        objects = self._merge_objects(order)
        self._remember_roots(counts)
        unchanged = pods == self._sent and objects == self._sent_objects
        if unchanged and self._scanned and not recovered:
            return None
        self._scanned = True
        self._sent = pods
        self._sent_objects = objects
        return PodUpdate(Operation.SET, pods, self._name, objects)

    def _not_ready_update(self, problems: list[SourceProblem]) -> PodUpdate | None:
        """The source cannot say what it holds now: ``NOT_READY`` once (before the first scan,
        with the remembered pods when there are some: a ``SET`` with a reason)."""
        if tuple(problems) != self._unreadable:
            for problem in problems:
                logger.warning(
                    "manifest path %s: %s: source %s is not ready; its pods are kept and nothing"
                    " is deleted until it can be read",
                    problem.where,
                    problem.errors[0].message,
                    self._name,
                    extra={"path": problem.where},
                )
        self._unreadable = tuple(problems)
        if self._not_ready:
            return None
        self._not_ready = True
        reason = "; ".join(line for problem in problems for line in problem.lines())
        if not self._scanned and not self._offered and self._files:
            self._offered = True
            order = list(self._files)
            self._sent = self._merge(order)
            self._sent_objects = self._merge_objects(order)
            return _last_known_state(self._name, self._sent, self._sent_objects, reason)
        return PodUpdate(Operation.NOT_READY, (), self._name, reason=reason)

    def _stable_for(self, path: Path, seen: _Fingerprint | None, now: float) -> float:
        """Seconds ``path`` has been seen as ``seen`` (0 the first time)."""
        pending = self._pending.get(path)
        same = pending is not None and (
            pending.seen is seen
            or (pending.seen is not None and seen is not None and pending.seen.same_stat(seen))
        )
        if pending is None or not same:
            pending = self._pending[path] = _Pending(seen, now)
        return now - pending.since

    def _wait(self, path: Path, now: float, stable: float, needed: float) -> bool:
        """True (and a poll asked for when it is over) while ``path`` must wait ``needed``."""
        if stable >= needed:
            return False
        due = now + needed - stable
        if self._next_due is None or due < self._next_due:
            self._next_due = due
        return True

    def _gone_long_enough(self, path: Path, now: float, trusted: bool) -> bool:
        state = self._files[path]
        if trusted:
            self._pending.pop(path, None)
            return True
        needed = self._loss_settle if state.pods or state.objects else self._settle
        if self._wait(path, now, self._stable_for(path, None, now), needed):
            return False
        self._pending.pop(path, None)
        return True

    def _check_file(self, path: Path, now: float, *, immediate: bool, trusted: bool) -> None:
        state = self._files.get(path)
        previous = state if state is not None and state.known else None
        try:
            stat = path.stat()
        except OSError:
            return  # vanished between the listing and the stat: seen as gone at the next scan
        quick = _Fingerprint(stat.st_mtime_ns, stat.st_size, stat.st_ctime_ns)
        if state is not None and state.fingerprint.same_stat(quick) and not _unreadable(state):
            self._pending.pop(path, None)
            return
        stable = 0.0 if trusted else self._stable_for(path, quick, now)
        if not immediate and self._wait(path, now, stable, self._settle):
            return
        try:
            data = read_manifest_bytes(path)  # a regular file within the size cap
        except OSError as error:
            problem = _path_problem(path, f"cannot be read: {_os_reason(error)}")
            self._record_bad(path, previous, quick, problem, known=False)
            return
        except ValidationError as error:
            self._record_bad(path, previous, quick, _problem_from_exception(str(path), error))
            return
        try:
            after = path.stat()
        except OSError:
            return
        changed = _Fingerprint(after.st_mtime_ns, after.st_size, after.st_ctime_ns)
        if not quick.same_stat(changed):  # written to while it was read: not a state yet
            self._pending[path] = _Pending(changed, now)
            self._wait(path, now, 0.0, max(self._settle, _MIN_REREAD))
            return
        fingerprint = attrs.evolve(quick, sha256=_sha256(data))
        if previous is not None and previous.fingerprint.sha256 == fingerprint.sha256:
            if _unreadable(previous):
                logger.info("manifest %s can be read again", path)
                previous.problem = None
            previous.fingerprint = fingerprint  # touched, not changed
            self._pending.pop(path, None)
            self._waiting_loss.discard(path)
            return
        try:
            text = decode_manifest_bytes(data, str(path))
        except ValidationError as error:
            self._record_bad(path, previous, fingerprint, _problem_from_exception(str(path), error))
            return
        pods, objects, errors = parse_documents(text, str(path))
        prepared = prepare_pods(pods, self._name)
        emptied = previous is not None and (previous.pods or previous.objects)
        if not prepared and not objects and not errors and emptied:
            errors = (
                FieldError("", "the file holds no pods now (remove the file to remove its pods)"),
            )
        if not errors and not trusted and previous is not None:
            errors = _cut_mid_line(previous.text, text)
        if errors:
            problem = SourceProblem(str(path), errors)
            self._record_bad(path, previous, fingerprint, problem, prepared, objects, text)
            return
        if (
            not trusted
            and previous is not None
            and _takes_away(previous.before(), prepared, objects, text)
            and self._wait(path, now, stable, self._loss_settle)
        ):
            if path not in self._waiting_loss:
                self._waiting_loss.add(path)
                logger.info(
                    "manifest %s now holds less than before: acted on once it has stayed so"
                    " for %gs",
                    path,
                    self._loss_settle,
                )
            return
        self._waiting_loss.discard(path)
        self._pending.pop(path, None)
        if previous is not None and previous.problem is not None:
            logger.info("manifest %s is good again", path)
        state = _FileState(fingerprint, prepared, objects=objects, text=text)
        self._files[path] = state
        self._remember(path, state)

    def _record_bad(
        self,
        path: Path,
        previous: _FileState | None,
        fingerprint: _Fingerprint,
        problem: SourceProblem,
        valid: tuple[Pod, ...] = (),
        valid_objects: tuple[KubeObject, ...] = (),
        text: str = "",
        *,
        known: bool = True,
    ) -> None:
        if known:  # a read error keeps its observation: the file is read again once settled
            self._pending.pop(path, None)
        self._waiting_loss.discard(path)
        current = self._files.get(path)
        if current is None or current.problem != problem:  # an unreadable file is tried often
            logger.warning(
                "manifest %s has %d problem(s); %s\n  %s",
                path,
                len(problem.errors),
                "keeping its last good pods" if previous is not None else "loading its valid pods",
                "\n  ".join(str(e) for e in problem.errors),
                extra={"path": str(path), "problems": [str(e) for e in problem.errors]},
            )
        if previous is not None:
            # unread (no hash): the last good hash stays, so the same text read later is no change
            sha = fingerprint.sha256 or previous.fingerprint.sha256
            previous.fingerprint = attrs.evolve(fingerprint, sha256=sha)
            previous.problem = problem
            return
        state = _FileState(fingerprint, valid, problem, valid_objects, text, known)
        self._files[path] = state
        if known:
            self._remember(path, state)  # a restart reads the same valid pods back

    def _merge(self, order: list[Path]) -> tuple[Pod, ...]:
        owner: dict[PodKey, Path] = {}
        pods: list[Pod] = []
        duplicates: dict[Path, list[FieldError]] = collections.defaultdict(list)
        for path in order:
            state = self._files.get(path)
            if state is None:
                continue
            for pod in state.pods:
                key = pod_key(pod)
                if key in owner:
                    duplicates[path].append(
                        FieldError(
                            "metadata.name",
                            f"pod {key[0]}/{key[1]} is already defined in {owner[key]}",
                        )
                    )
                    continue
                owner[key] = path
                pods.append(pod)
        found = tuple(
            SourceProblem(str(path), tuple(errors)) for path, errors in duplicates.items()
        )
        if found != self._duplicates:
            for problem in found:
                logger.warning(
                    "manifest %s: %s; the first definition is kept",
                    problem.where,
                    "; ".join(str(e) for e in problem.errors),
                    extra={"path": problem.where},
                )
        self._duplicates = found
        return tuple(pods)

    def _merge_objects(self, order: list[Path]) -> tuple[KubeObject, ...]:
        """Each object once, from the first file (by path order) that defines it."""
        merged: dict[tuple[str, str, str], KubeObject] = {}
        for path in order:
            state = self._files.get(path)
            for obj in state.objects if state is not None else ():
                merged.setdefault(object_key(obj), obj)
        return tuple(merged.values())


def _takes_away(
    before: tuple[tuple[Pod, ...], tuple[KubeObject, ...], str],
    pods: tuple[Pod, ...],
    objects: tuple[KubeObject, ...],
    text: str,
) -> bool:
    """Whether a new text (with ``pods`` and ``objects``) loses something ``before`` had: a pod
    or an object, or its end (the new text is a strict prefix of the old one: a write cut short
    rather than an edit)."""
    old_pods, old_objects, old_text = before
    if {pod_key(p) for p in old_pods} - {pod_key(p) for p in pods}:
        return True
    if {object_key(o) for o in old_objects} - {object_key(o) for o in objects}:
        return True
    return len(text) < len(old_text) and old_text.startswith(text)


def _cut_mid_line(old_text: str, text: str) -> tuple[FieldError, ...]:
    """A text that is the last good one cut inside a line is a write that has not finished
    (a writer paused or died mid-file, a restart found it so): never a state, however long it
    stays, unlike a text cut at a line's end (the last lines or documents removed, which waits
    out the loss settle). Its last good pods are kept until it is written whole."""
    cut = len(text)
    if cut >= len(old_text) or not old_text.startswith(text) or text.endswith("\n"):
        return ()
    if old_text[cut] == "\n":
        return ()
    return (
        FieldError(
            "",
            "the text ends mid-line where its last good version went on: it is being written"
            " (or its writer stopped); its last good pods are kept until it is written whole",
        ),
    )


def watched_directories(roots: Sequence[Path]) -> list[Path]:
    """What to watch for ``roots``: a directory itself, a file's directory (an editor replaces
    the file by a rename), the nearest existing ancestor of a path not there yet."""
    found: list[Path] = []
    for root in roots:
        path = root if root.is_dir() else root.parent
        while not path.is_dir() and path != path.parent:
            path = path.parent
        if path not in found:
            found.append(path)
    return found


def _last_known_state(
    source: str, pods: tuple[Pod, ...], objects: tuple[KubeObject, ...], reason: str
) -> PodUpdate:
    """A source that cannot be read at start offers what it remembers: run and kept, but not a
    report (``reason`` keeps the source not ready, so nothing else is deleted)."""
    logger.warning(
        "source %s: %d remembered pod(s) are kept as its last known state", source, len(pods)
    )
    return PodUpdate(Operation.SET, pods, source, objects, reason=reason)


def _path_problem(path: Path, message: str) -> SourceProblem:
    return SourceProblem(str(path), (FieldError("", message),))


# --- the HTTP manifest URL source ---------------------------------------------------------


Fetcher = Callable[[str, dict[str, str], float], "FetchResult"]


@attrs.frozen
class FetchResult:
    status: int
    body: bytes = b""
    etag: str = ""
    last_modified: str = ""


def urllib_fetch(url: str, headers: dict[str, str], timeout: float) -> FetchResult:
    """GET ``url`` with urllib; a 304 is a result, any other non-2xx status raises."""
    import urllib.error  # imported here: ``kubecore validate`` needs no HTTP client
    import urllib.request

    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read(MAX_MANIFEST_BYTES + 1)
            if len(body) > MAX_MANIFEST_BYTES:
                raise ValueError(f"manifest is larger than {MAX_MANIFEST_BYTES} bytes")
            return FetchResult(
                response.status,
                body,
                response.headers.get("ETag", ""),
                response.headers.get("Last-Modified", ""),
            )
    except urllib.error.HTTPError as error:
        if error.code == 304:
            return FetchResult(304)
        raise


class HTTPSource:
    """Pods from a manifest URL (YAML or JSON, one or several documents), polled.

    Every ``interval`` seconds the URL is fetched (with ``If-None-Match`` / ``If-Modified-Since``
    when the server gave an ETag / Last-Modified); a 304 or a body with the same hash as the last
    one is skipped. A failed fetch (refused, timed out, a non-2xx status) or a body with problems
    is reported (logged and in ``problems``) and retried after a backoff (``backoff`` seconds
    doubling up to ``max_backoff``); the last good pods are kept meanwhile and the source says
    ``NOT_READY``, so the agent deletes nothing until the URL answers well again.

    As for files (``FileSource``), an unknown state is never read as "these pods are gone": a body
    with no pod and no object is refused (an outage) unless ``allow_empty``, or the last good
    body was empty too, or none is known and ``new_node`` says nothing ran before; a body that
    takes pods or objects away, or is cut short (a strict prefix of the last good body), is
    applied only once the URL has served it unchanged for ``loss_settle`` seconds (it is fetched
    again then). With ``state_dir`` the last good body is remembered there (``SourceMemory``): a
    URL that is down or bad when the agent starts offers the remembered pods as the source's last
    known state (a ``SET`` with a reason: still not ready), and the rules above compare with it.

    Emits ``SET`` for source ``name`` (default ``"http"``) after the first good fetch and whenever
    the pods change.
    """

    def __init__(
        self,
        url: str,
        *,
        interval: float = 20.0,
        timeout: float = 10.0,
        backoff: float = 1.0,
        max_backoff: float = 300.0,
        name: str = HTTP_SOURCE,
        fetch: Fetcher = urllib_fetch,
        allow_empty: bool = False,
        loss_settle: float = DEFAULT_SETTLE * LOSS_SETTLE_FACTOR,
        state_dir: str | os.PathLike[str] | None = None,
        new_node: bool = False,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"manifest URL must be http:// or https://, got {url!r}")
        self._url = url
        self._interval = interval
        self._timeout = timeout
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._name = name
        self._fetch = fetch
        self._allow_empty = allow_empty
        self._new_node = new_node
        self._loss_settle = loss_settle
        self._memory = SourceMemory(state_dir, name) if state_dir is not None else None
        self._loaded = False
        self._etag = ""
        self._last_modified = ""
        self._body_hash = ""
        self._text: str | None = None
        """The last good body (None: none known, not even from memory)."""
        self._known: tuple[tuple[Pod, ...], tuple[KubeObject, ...]] | None = None
        """The last good body's pods and objects."""
        self._losing: tuple[str, float] | None = None
        """A body that takes pods away: its hash and when it was first served."""
        self._sent: tuple[Pod, ...] | None = None
        self._sent_objects: tuple[KubeObject, ...] = ()
        self._reported = False
        """A good body has been sent (a ``SET`` without a reason)."""
        self._problem: SourceProblem | None = None
        self._failures = 0
        self._not_ready = False
        self._next_due: float | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def url(self) -> str:
        return self._url

    @property
    def problems(self) -> tuple[SourceProblem, ...]:
        with self._lock:
            return () if self._problem is None else (self._problem,)

    @property
    def pods(self) -> tuple[Pod, ...]:
        with self._lock:
            return self._sent or ()

    @property
    def failures(self) -> int:
        """Consecutive failed polls (0 after a good one)."""
        with self._lock:
            return self._failures

    def poll(self, now: float) -> PodUpdate | None:
        with self._lock:
            if self._next_due is not None and now < self._next_due:
                return None
            self._load_memory()
            try:
                update = self._fetch_and_parse(now)
            except Exception as error:
                update = _problem_from_exception(self._url, error)
            if isinstance(update, SourceProblem):
                self._fail(now, update)
                return self._not_ready_update(update)
            if self._failures:
                logger.info("manifest URL %s is good again", self._url)
            self._failures = 0
            self._problem = None
            if self._losing is None:
                self._next_due = now + self._interval
            if update is None and not self._reported and self._losing is not None:
                waiting = FieldError(
                    "", "it serves less than its remembered state: waiting for it to stay so"
                )
                return self._not_ready_update(SourceProblem(self._url, (waiting,)))
            if update is None and self._not_ready and self._sent is not None and self._reported:
                update = PodUpdate(Operation.SET, self._sent, self._name, self._sent_objects)
            if update is not None:
                self._not_ready = False
                self._reported = True
            return update

    def _load_memory(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        record = self._memory.get("url", self._url) if self._memory is not None else None
        text = record.get("body") if record is not None else None
        if isinstance(text, str):
            pods, objects, _errors = parse_documents(text, self._url)
            self._text = text
            self._known = (prepare_pods(pods, self._name), objects)

    def _not_ready_update(self, problem: SourceProblem) -> PodUpdate | None:
        if self._not_ready:
            return None
        self._not_ready = True
        reason = "; ".join(problem.lines())
        if self._sent is None and self._known is not None:
            # The URL is down or bad at start: its remembered pods are its last known state.
            self._sent, self._sent_objects = self._known
            return _last_known_state(self._name, self._sent, self._sent_objects, reason)
        # Its pods stay; the agent deletes nothing until the URL answers again.
        return PodUpdate(Operation.NOT_READY, (), self._name, reason=reason)

    def _fail(self, now: float, problem: SourceProblem) -> None:
        self._failures += 1
        self._problem = problem
        self._losing = None
        delay = min(self._backoff * 2 ** (self._failures - 1), self._max_backoff)
        self._next_due = now + delay
        # A bad body must be parsed again after the backoff so the problem stays visible.
        self._body_hash = ""
        self._etag = self._last_modified = ""
        logger.warning(
            "manifest URL %s failed (%d in a row), retrying in %.0fs: %s",
            self._url,
            self._failures,
            delay,
            "; ".join(str(e) for e in problem.errors),
            extra={"url": self._url, "failures": self._failures},
        )

    def _fetch_and_parse(self, now: float) -> PodUpdate | SourceProblem | None:
        headers = {"Accept": "application/yaml, application/json;q=0.9, */*;q=0.5"}
        if self._etag:
            headers["If-None-Match"] = self._etag
        if self._last_modified:
            headers["If-Modified-Since"] = self._last_modified
        result = self._fetch(self._url, headers, self._timeout)
        if result.status == 304:
            return None
        if not 200 <= result.status < 300:
            return SourceProblem(self._url, (FieldError("", f"HTTP status {result.status}"),))
        digest = _sha256(result.body)
        if digest == self._body_hash:
            return None
        try:
            text = result.body.decode("utf-8")
        except UnicodeDecodeError as error:
            return SourceProblem(self._url, (FieldError("", f"not UTF-8 text: {error}"),))
        pods, objects, errors = parse_documents(text, self._url)
        if errors:
            return SourceProblem(self._url, errors)
        prepared = prepare_pods(pods, self._name)
        if not prepared and not objects and not self._empty_allowed():
            return SourceProblem(
                self._url,
                (
                    FieldError(
                        "",
                        "the URL serves no pods; its pods are kept (pass --manifest-allow-empty"
                        " if no pods is meant)",
                    ),
                ),
            )
        if self._text is not None and (cut := _cut_mid_line(self._text, text)):
            return SourceProblem(self._url, cut)
        if self._known is not None and self._text is not None:
            before = (*self._known, self._text)
            if _takes_away(before, prepared, objects, text) and self._confirming(digest, now):
                return None
        self._losing = None
        self._body_hash = digest
        self._etag = result.etag
        self._last_modified = result.last_modified
        if text != self._text and self._memory is not None:
            self._memory.put("url", self._url, body=text)
        self._text = text
        self._known = (prepared, objects)
        if prepared == self._sent and objects == self._sent_objects and self._reported:
            return None
        self._sent = prepared
        self._sent_objects = objects
        return PodUpdate(Operation.SET, prepared, self._name, objects)

    def _empty_allowed(self) -> bool:
        known = self._known
        if known is None:
            return self._allow_empty or self._new_node
        return self._allow_empty or (not known[0] and not known[1])

    def _confirming(self, digest: str, now: float) -> bool:
        """True while a body that takes pods away has not been served for ``loss_settle``."""
        if self._losing is None or self._losing[0] != digest:
            self._losing = (digest, now)
            logger.info(
                "manifest URL %s now serves less than before: acted on once it has served it"
                " for %gs",
                self._url,
                self._loss_settle,
            )
        since = self._losing[1]
        if now - since >= self._loss_settle:
            return False
        self._next_due = min(since + self._loss_settle, now + self._interval)
        return True


# --- the in-process source for embedders --------------------------------------------------


class StaticSource:
    """Pods set by the embedding program: ``set``, ``add``, ``update`` and ``remove``; ConfigMaps
    and Secrets with ``set(pods, objects)``, ``put_objects`` and ``remove_objects``.

    Each call is queued as one ``PodUpdate`` (SET / ADD / UPDATE / REMOVE) and handed out by
    ``poll``; pass ``sink`` (for example ``kubelet.update``) to deliver each one at once instead.
    Pods get their deterministic uid and the source stamp. The source has reported once something
    was set (``StaticSource(pods)`` counts, even with an empty list).
    """

    def __init__(
        self,
        pods: Iterable[Pod] | None = None,
        *,
        name: str = API_SOURCE,
        sink: Callable[[PodUpdate], None] | None = None,
    ) -> None:
        self._name = name
        self._sink = sink
        self._pods: dict[PodKey, Pod] = {}
        self._queue: collections.deque[PodUpdate] = collections.deque()
        self._lock = threading.Lock()
        if pods is not None:
            self.set(pods)

    @property
    def name(self) -> str:
        return self._name

    @property
    def pods(self) -> tuple[Pod, ...]:
        with self._lock:
            return tuple(self._pods.values())

    def poll(self, now: float) -> PodUpdate | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def set(
        self,
        pods: Iterable[Pod],
        objects: Iterable[KubeObject] | None = None,
        *,
        unknown: str = "",
    ) -> None:
        """Replace the whole list: pods not in it are removed. ``objects`` (when given) replace
        the source's ConfigMaps and Secrets the same way. ``unknown``: why this is only the
        last known state (part of it could not be read): its pods run and are kept, and the
        source stays not ready, so nothing it no longer lists is deleted."""
        prepared = prepare_pods(pods, self._name)
        with self._lock:
            self._pods = {pod_key(pod): pod for pod in prepared}
            listed = tuple(objects) if objects is not None else None
            pods_now = tuple(self._pods.values())
            self._emit(PodUpdate(Operation.SET, pods_now, self._name, listed, reason=unknown))

    def put_objects(self, *objects: KubeObject) -> None:
        """Add or replace ConfigMaps and Secrets (pods are untouched)."""
        with self._lock:
            self._emit(PodUpdate(Operation.UPDATE, (), self._name, objects))

    def remove_objects(self, *objects: KubeObject) -> None:
        with self._lock:
            self._emit(PodUpdate(Operation.REMOVE, (), self._name, objects))

    def add(self, *pods: Pod) -> None:
        prepared = prepare_pods(pods, self._name)
        with self._lock:
            for pod in prepared:
                self._pods[pod_key(pod)] = pod
            self._emit(PodUpdate(Operation.ADD, prepared, self._name))

    def update(self, *pods: Pod) -> None:
        prepared = prepare_pods(pods, self._name)
        with self._lock:
            for pod in prepared:
                self._pods[pod_key(pod)] = pod
            self._emit(PodUpdate(Operation.UPDATE, prepared, self._name))

    def remove(self, *pods: Pod | PodKey | str) -> None:
        """Remove pods given as pods, ``(namespace, name)`` keys or ``"namespace/name"``."""
        removed: list[Pod] = []
        with self._lock:
            for item in pods:
                key = _as_key(item)
                pod = self._pods.pop(key, None)
                if pod is not None:
                    removed.append(pod)
            if removed:
                self._emit(PodUpdate(Operation.REMOVE, tuple(removed), self._name))

    def _emit(self, update: PodUpdate) -> None:
        if self._sink is not None:
            self._sink(update)
        else:
            self._queue.append(update)


def _as_key(item: Pod | PodKey | str) -> PodKey:
    if isinstance(item, Pod):
        return pod_key(item)
    if isinstance(item, str):
        namespace, sep, name = item.partition("/")
        return (namespace, name) if sep else ("default", namespace)
    return item


# --- driving sources ----------------------------------------------------------------------


MAX_UPDATES_PER_POLL = 1000


class SourcePoller:
    """Polls sources on a clock and passes every update to ``sink``.

    ``poll_once()`` runs one round (what tests and ``--once`` use); ``start()`` runs rounds every
    ``tick`` seconds in a daemon thread until ``stop()``. A sink or source that raises is logged and
    the round goes on with the next source.
    """

    def __init__(
        self,
        sources: Sequence[PodSource],
        sink: Callable[[PodUpdate], None],
        *,
        clock: Clock | None = None,
        tick: float = 1.0,
    ) -> None:
        names = [source.name for source in sources]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"two sources share the name(s) {', '.join(duplicated)}")
        self._sources = tuple(sources)
        self._sink = sink
        self._clock: Clock = clock or SystemClock()
        self._tick = tick
        self._stopping = threading.Event()
        self._wakeup = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def sources(self) -> tuple[PodSource, ...]:
        return self._sources

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(source.name for source in self._sources)

    def poll_once(self) -> int:
        """Poll every source once; return how many updates were delivered."""
        delivered = 0
        for source in self._sources:
            for _ in range(MAX_UPDATES_PER_POLL):
                try:
                    update = source.poll(self._clock.monotonic())
                except Exception:
                    logger.exception("pod source %s failed", source.name)
                    break
                if update is None:
                    break
                try:
                    self._sink(update)
                except Exception:
                    logger.exception("delivering an update from %s failed", source.name)
                delivered += 1
        return delivered

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the source poller is already running")
        self._stopping.clear()
        for source in self._sources:
            notify_changes = getattr(source, "notify_changes", None)
            if callable(notify_changes):
                notify_changes(self.wake)
            start = getattr(source, "start", None)
            if callable(start):
                start()
        self._thread = threading.Thread(target=self._run, name="kubecore-sources", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Poll now (a source saw a change), not at the next tick."""
        self._wakeup.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        self._wakeup.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        for source in self._sources:
            close = getattr(source, "close", None)
            if callable(close):
                close()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wakeup.clear()
            self.poll_once()
            self._clock.wait(self._wakeup, self._tick)


def _sha256(data: bytes) -> str:
    import hashlib  # imported on first use: loading OpenSSL slows ``kubecore validate``

    return hashlib.sha256(data).hexdigest()
