"""The manifest file and directory source: pods from manifest files, kept through outages,
half-written files and restarts."""

from __future__ import annotations

import collections
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from kubecore._config.base import (
    FILE_SOURCE,
    PodKey,
    SourceProblem,
    last_known_state,
    parse_documents,
    path_problem,
    pod_key,
    prepare_pods,
    problem_from_exception,
    sha256_hex,
)
from kubecore._config.file_memory import FileMemory
from kubecore._config.file_state import FileState, Fingerprint, unreadable
from kubecore._config.last_good import (
    DEFAULT_SETTLE,
    IN_PLACE_SETTLE_FACTOR,
    LOSS_SETTLE_FACTOR,
    Pending,
    Settling,
    cut_mid_line,
    in_place_change,
)
from kubecore._config.listing import (
    DirectoryIdentity,
    RootSeen,
    directory_identity,
    list_root,
    os_reason,
)
from kubecore._config.objects import object_key
from kubecore._config.updates import Operation, PodUpdate
from kubecore._config.watch import ManifestWatch
from kubecore._contract.errors import FieldError, SourceUnavailable, ValidationError
from kubecore._manifest import decode_manifest_bytes, read_manifest_bytes
from kubecore._model.v1 import KubeObject, Pod

logger = logging.getLogger(__name__)

_MIN_REREAD = 0.05
"""Seconds before a file that changed while it was read is read again (with ``settle=0``)."""

_EMPTY_DIRECTORY = (
    "the directory holds no manifest file (a mount point not mounted yet?); its pods are kept"
    " (pass --manifest-allow-empty if no pods is meant)"
)
"""Why an empty directory makes its source not ready: a reason (``/healthz``, the log), not a
problem of a manifest (``--once`` with an empty directory runs nothing and succeeds)."""
_UNMOUNTED_DIRECTORY = (
    "the directory holds no manifest file and is not the one its pods were read from: its device"
    " is its parent's (a mount point not mounted?); its pods are kept"
)
_REPLACED_DIRECTORY = (
    "the directory holds no manifest file and is not the one its pods were read from (another"
    " inode: it was replaced); its pods are kept (pass --manifest-allow-empty if no pods is meant)"
)

_NOT_READ_YET = "is being written or cannot be read yet"


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
    not a state yet (it waits again). A file removed must stay gone for ``loss_settle`` seconds
    (default ``LOSS_SETTLE_FACTOR`` times ``settle``). A new text is acted on after ``settle``
    when it is evidently whole (another inode: a rename over the file, as editors and config
    management write) or only adds; written in place (the same inode), a text that takes pods or
    objects away, is the last good text cut short, or changes a pod must stay unchanged for
    ``in_place_settle`` seconds (default ``IN_PLACE_SETTLE_FACTOR`` times ``settle``, 30 s): a
    writer that pauses mid-file keeps the pods of the documents it has not written yet, and
    replaces no container for a half-written spec. A bad file is reported (logged and
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
        in_place_settle: float | None = None,
        allow_empty: bool = False,
        state_dir: str | os.PathLike[str] | None = None,
        new_node: bool = False,
        watch: bool = True,
    ) -> None:
        if isinstance(paths, str | os.PathLike):
            paths = [paths]
        self._roots = tuple(Path(p) for p in paths)
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
        self._in_place_settle = (
            settle * IN_PLACE_SETTLE_FACTOR if in_place_settle is None else in_place_settle
        )
        self._allow_empty = allow_empty
        self._new_node = new_node
        self._memory = FileMemory(self._roots, name, state_dir)
        self._name = name
        self._files: dict[Path, FileState] = {}
        self._settling = Settling()
        self._seen_roots: set[Path] = set()
        self._empty_logged: set[Path] = set()
        self._unreadable: tuple[SourceProblem, ...] = ()
        self._absent: tuple[SourceProblem, ...] = ()
        self._not_ready = False
        self._scanned = False
        """A complete state has gone out (a ``SET`` without a reason)."""
        self._offered = False
        self._waiting_loss: set[Path] = set()
        self._last_now = 0.0
        self._duplicates: tuple[SourceProblem, ...] = ()
        self._sent: tuple[Pod, ...] | None = None
        self._sent_objects: tuple[KubeObject, ...] = ()
        self._lock = threading.Lock()
        self._watch = watch
        self._wake: Callable[[], None] | None = None
        self._watcher = ManifestWatch(self._roots, interval, self._changed)

    @property
    def name(self) -> str:
        """The source's name (``file`` unless given): what its pods' source annotation says."""
        return self._name

    @property
    def objects(self) -> tuple[KubeObject, ...]:
        """The ConfigMaps and Secrets last sent."""
        with self._lock:
            return self._sent_objects

    @property
    def paths(self) -> tuple[Path, ...]:
        """The manifest files and directories it reads, as given."""
        return self._roots

    @property
    def changing(self) -> tuple[Path, ...]:
        """Files seen changed (or gone) that are waiting for the settle time."""
        with self._lock:
            return tuple(self._settling.pending)

    def notify_changes(self, wake: Callable[[], None]) -> None:
        """``wake`` is called (from the watch thread) when a poll would find something."""
        self._wake = wake

    def start(self) -> None:
        """Watch the manifest paths in a daemon thread (no-op with ``watch=False``)."""
        if self._watch:
            self._watcher.start()

    def wait_watching(self, timeout: float) -> bool:
        """Wait (real time) until the watch is in place: a change from now on is reported."""
        return self._watcher.wait(timeout)

    def close(self) -> None:
        self._watcher.close()

    def _changed(self) -> None:
        """A watched file changed: poll now, and again once it may have settled."""
        with self._lock:
            self._settling.next_due = None
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
        """What is wrong with the manifests now (a file that does not parse, a pod that does not
        validate), each with where; empty when every manifest reads."""
        with self._lock:
            return self._current_problems()

    @property
    def pods(self) -> tuple[Pod, ...]:
        """The pods last sent (empty before the first poll)."""
        with self._lock:
            return self._sent or ()

    def poll(self, now: float) -> PodUpdate | None:
        with self._lock:
            if self._settling.next_due is not None and now < self._settling.next_due:
                return None
            self._settling.next_due = now + self._interval
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
        # An empty directory nothing is known of is no manifest's problem; one that replaced
        # the directory its pods were read from is (its pods are kept: say so).
        unreadable = tuple(p for p in self._unreadable if p.errors[0].message != _EMPTY_DIRECTORY)
        return unreadable + bad_files + self._duplicates

    def _had_files(self, root: Path) -> bool:
        """The source knows ``root`` held manifest files (now or before a restart)."""
        if self._memory.was_empty(root) is False:
            return True
        return any(path == root or path.parent == root for path in self._files)

    # --- scanning -------------------------------------------------------------------------

    def _list(self) -> tuple[list[Path], list[SourceProblem], dict[Path, RootSeen]]:
        listed: list[Path] = []
        unready: list[SourceProblem] = []
        absent: list[SourceProblem] = []
        counts: dict[Path, RootSeen] = {}
        for root in self._roots:
            try:
                files = list_root(root)
            except FileNotFoundError:
                if root in self._seen_roots or not self._may_be_missing or self._had_files(root):
                    unready.append(path_problem(root, "no such file or directory"))
                else:  # may be missing and never seen: no pods from it yet
                    absent.append(path_problem(root, "does not exist yet"))
                continue
            except OSError as error:
                unready.append(path_problem(root, os_reason(error)))
                continue
            identity = directory_identity(root)
            if not files and identity is not None and not self._empty_allowed(root):
                blink = empty_directory_blink(self._memory.identity(root), identity)
                if blink is not None:
                    unready.append(path_problem(root, blink))
                    continue
                if root not in self._empty_logged:
                    self._empty_logged.add(root)
                    logger.info(
                        "manifest directory %s: its last manifest file was removed (the directory"
                        " its pods were read from, same device and inode): its pods are removed",
                        root,
                    )
            if files:
                self._empty_logged.discard(root)
            self._seen_roots.add(root)
            counts[root] = RootSeen(len(files), identity)
            listed.extend(f for f in files if f not in listed)
        if tuple(absent) != self._absent:
            for problem in absent:
                logger.info("manifest path %s does not exist yet: no pods from it", problem.where)
        self._absent = tuple(absent)
        return listed, unready, counts

    def _empty_allowed(self, root: Path) -> bool:
        was_empty = self._memory.was_empty(root)
        if self._allow_empty or was_empty is True:
            return True
        return self._new_node and was_empty is None and not self._had_files(root)

    def _scan(self, now: float, *, trusted: bool) -> PodUpdate | None:
        self._memory.load(self._files)
        immediate = trusted or not self._scanned
        listed, unready, counts = self._list()
        if unready:
            return self._not_ready_update(unready)
        for gone in [p for p in self._files if p not in listed]:
            if self._gone_long_enough(gone, now, trusted):
                logger.info("manifest %s removed: its pods are removed", gone)
                del self._files[gone]
                self._memory.forget(gone)
        for path in listed:
            self._check_file(path, now, immediate=immediate, trusted=trusted)
        for path in [p for p in self._settling.pending if p not in listed and p not in self._files]:
            del self._settling.pending[path]
        if not self._scanned:
            unknown = [p for p in listed if p not in self._files or not self._files[p].known]
            if unknown:
                return self._not_ready_update(
                    [
                        path_problem(p, _NOT_READ_YET + ": nothing is removed until it is read")
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
        objects = merge_objects(self._files, order)
        self._memory.remember_roots(counts)
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
            self._sent_objects = merge_objects(self._files, order)
            return last_known_state(self._name, self._sent, self._sent_objects, reason)
        return PodUpdate(Operation.NOT_READY, (), self._name, reason=reason)

    def _gone_long_enough(self, path: Path, now: float, trusted: bool) -> bool:
        state = self._files[path]
        if trusted:
            self._settling.forget(path)
            return True
        needed = self._loss_settle if state.pods or state.objects else self._settle
        if self._settling.wait(now, self._settling.stable_for(path, None, now), needed):
            return False
        self._settling.forget(path)
        return True

    def _check_file(self, path: Path, now: float, *, immediate: bool, trusted: bool) -> None:
        state = self._files.get(path)
        previous = state if state is not None and state.known else None
        try:
            stat = path.stat()
        except OSError as error:
            if os.path.lexists(path):  # a dangling symlink: unreadable, not removed
                problem = path_problem(path, f"cannot be read: {os_reason(error)}")
                self._record_bad(path, previous, Fingerprint(0, -1), problem, known=False)
            return  # else it vanished after the listing: seen as gone at the next scan
        quick = Fingerprint(
            stat.st_mtime_ns, stat.st_size, stat.st_ctime_ns, inode=(stat.st_dev, stat.st_ino)
        )
        if state is not None and state.fingerprint.same_stat(quick) and not unreadable(state):
            self._settling.forget(path)
            return
        stable = 0.0 if trusted else self._settling.stable_for(path, quick, now)
        if not immediate and self._settling.wait(now, stable, self._settle):
            return
        read = self._read_settled(path, previous, quick, now)
        if read is None:
            return
        data, fingerprint = read
        if previous is not None and previous.fingerprint.sha256 == fingerprint.sha256:
            if unreadable(previous):
                logger.info("manifest %s can be read again", path)
                previous.problem = None
            previous.fingerprint = fingerprint  # touched, not changed
            self._settling.forget(path)
            self._waiting_loss.discard(path)
            return
        try:
            text = decode_manifest_bytes(data, str(path))
        except ValidationError as error:
            self._record_bad(path, previous, fingerprint, problem_from_exception(str(path), error))
            return
        pods, objects, errors = parse_documents(text, str(path))
        prepared = prepare_pods(pods, self._name)
        emptied = previous is not None and (previous.pods or previous.objects)
        if not prepared and not objects and not errors and emptied:
            errors = (
                FieldError("", "the file holds no pods now (remove the file to remove its pods)"),
            )
        if not errors and not trusted and previous is not None:
            errors = cut_mid_line(previous.text, text)
        if errors:
            problem = SourceProblem(str(path), errors)
            self._record_bad(path, previous, fingerprint, problem, prepared, objects, text)
            return
        if not trusted and previous is not None and not fingerprint.replaced(previous.fingerprint):
            # Written in place: maybe not whole yet (a writer that paused, a copy under way).
            change = in_place_change(previous.before(), prepared, objects, text)
            if change and self._settling.wait(now, stable, self._in_place_settle):
                if path not in self._waiting_loss:
                    self._waiting_loss.add(path)
                    logger.info(
                        "manifest %s now %s, written in place: acted on once it has stayed so"
                        " for %gs (a rename over it is acted on at once)",
                        path,
                        change,
                        self._in_place_settle,
                    )
                return
        self._waiting_loss.discard(path)
        self._settling.forget(path)
        if previous is not None and previous.problem is not None:
            logger.info("manifest %s is good again", path)
        state = FileState(fingerprint, prepared, objects=objects, text=text)
        self._files[path] = state
        self._memory.remember(path, state)

    def _read_settled(
        self, path: Path, previous: FileState | None, quick: Fingerprint, now: float
    ) -> tuple[bytes, Fingerprint] | None:
        """The bytes of ``path`` and their fingerprint, or None when they are no state yet (the
        file could not be read, or it changed while it was read)."""
        try:
            data = read_manifest_bytes(path)  # a regular file within the size cap
        except OSError as error:
            problem = path_problem(path, f"cannot be read: {os_reason(error)}")
            self._record_bad(path, previous, quick, problem, known=False)
            return None
        except ValidationError as error:
            self._record_bad(path, previous, quick, problem_from_exception(str(path), error))
            return None
        try:
            after = path.stat()
        except OSError:
            return None
        changed = Fingerprint(
            after.st_mtime_ns, after.st_size, after.st_ctime_ns, inode=(after.st_dev, after.st_ino)
        )
        if not quick.same_stat(changed):  # written to while it was read: not a state yet
            self._settling.pending[path] = Pending(changed, now)
            self._settling.wait(now, 0.0, max(self._settle, _MIN_REREAD))
            return None
        return data, attrs.evolve(quick, sha256=sha256_hex(data))

    def _record_bad(
        self,
        path: Path,
        previous: FileState | None,
        fingerprint: Fingerprint,
        problem: SourceProblem,
        valid: tuple[Pod, ...] = (),
        valid_objects: tuple[KubeObject, ...] = (),
        text: str = "",
        *,
        known: bool = True,
    ) -> None:
        if known:  # a read error keeps its observation: the file is read again once settled
            self._settling.forget(path)
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
        state = FileState(fingerprint, valid, problem, valid_objects, text, known)
        self._files[path] = state
        if known:
            self._memory.remember(path, state)  # a restart reads the same valid pods back

    def _merge(self, order: list[Path]) -> tuple[Pod, ...]:
        pods, found = merge_pods(self._files, order)
        if found != self._duplicates:
            for problem in found:
                logger.warning(
                    "manifest %s: %s; the first definition is kept",
                    problem.where,
                    "; ".join(str(e) for e in problem.errors),
                    extra={"path": problem.where},
                )
        self._duplicates = found
        return pods


def empty_directory_blink(
    remembered: DirectoryIdentity | None, identity: DirectoryIdentity
) -> str | None:
    """Why an empty manifest directory (``identity``) is a blink, or None when its last files
    were removed from it: it is the very directory (device and inode) its pods were read from
    (``remembered``)."""
    if remembered is None:
        return _EMPTY_DIRECTORY
    if remembered == identity:
        return None
    if identity.mount_point_unmounted(remembered):
        return _UNMOUNTED_DIRECTORY
    return _REPLACED_DIRECTORY


def merge_pods(
    files: dict[Path, FileState], order: list[Path]
) -> tuple[tuple[Pod, ...], tuple[SourceProblem, ...]]:
    """Each pod once, from the first file (by path order) that defines it, and the duplicates
    as problems of the later files."""
    owner: dict[PodKey, Path] = {}
    pods: list[Pod] = []
    duplicates: dict[Path, list[FieldError]] = collections.defaultdict(list)
    for path in order:
        state = files.get(path)
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
    found = tuple(SourceProblem(str(path), tuple(errors)) for path, errors in duplicates.items())
    return tuple(pods), found


def merge_objects(files: dict[Path, FileState], order: list[Path]) -> tuple[KubeObject, ...]:
    """Each object once, from the first file (by path order) that defines it."""
    merged: dict[tuple[str, str, str], KubeObject] = {}
    for path in order:
        state = files.get(path)
        for obj in state.objects if state is not None else ():
            merged.setdefault(object_key(obj), obj)
    return tuple(merged.values())
