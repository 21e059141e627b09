"""The objects written over the node's Kubernetes API, kept on disk so that a restart of the agent
finds them again (``kubecore._api.server.attach_api`` reads them back before the first pass).

Layout, under ``<root-dir>/api`` (directories mode 0700, files mode 0600 — a Secret's values are
in its file, base64 as the API serves them)::

    pods/<namespace>_<name>.json         the v1 Pod as the API holds it (uid, creationTimestamp,
                                         labels, annotations, spec; no status), and while it
                                         is being deleted its deletionTimestamp and
                                         deletionGracePeriodSeconds (``Deletion``)
    configmaps/<namespace>_<name>.json   the v1 ConfigMap
    secrets/<namespace>_<name>.json      the v1 Secret

    store-version                        ``1``: made with every kind's directory, so a missing
                                         one is lost state, not an empty one

Names and namespaces are DNS names (no ``_``), so a file names exactly one object; a name too
long for a file name (over 255 bytes with its namespace) is stored as the SHA-256 of
``namespace/name`` (no ``_`` either), the file holding the full name. Each write goes
to a temporary file in the same directory, is flushed to disk (``fsync``) and renamed over the old
file, and the directory is flushed too: a crash at any point leaves the old file or the new one,
never half of one (a leftover temporary file is the write that did not happen: never read, and
removed once it is old). A delete unlinks the file and flushes the directory.

Reading the store never guesses: a file that cannot be read or decoded is a ``StoreProblem``
(its path and why, never its contents), and the caller must not take it to mean that the object
is gone.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from kubecore._api.deletion import Deletion, split_deletion
from kubecore._config.updates import Operation, PodUpdate, SourceName
from kubecore._contract.errors import ValidationError
from kubecore._manifest import pod_from_dict, pod_to_dict
from kubecore._manifest.decoding import object_to_dict
from kubecore._manifest.validation import decode_object
from kubecore._model.v1 import KubeObject, Pod
from kubecore._util.files import (
    TEMP_PREFIX,
    read_own_file,
    remove_file,
    replace_file,
    sync_directory,
)

logger = logging.getLogger(__name__)

STORE_DIR = "api"
"""The store's directory under the agent's root directory."""
DIRECTORIES = {"Pod": "pods", "ConfigMap": "configmaps", "Secret": "secrets"}
"""Each kind's directory in the store."""
_SUFFIX = ".json"
_TEMP_PREFIX = TEMP_PREFIX
MARKER = "store-version"
"""The file the store is made with (``1``): a store that has it holds every kind's directory,
so one found missing is lost state, not an empty one (a store made before it may lack some)."""
_MAX_FILE_NAME = 255
"""The longest file name of the file systems the root directory is on (ext4, xfs, btrfs)."""
STALE_TEMP_SECONDS = 600.0
"""A temporary file older than this is from a write that died (and is removed)."""
_NAME_RE = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?")
"""What a stored namespace or name may be (DNS names): never a path, never ``_``."""


@attrs.frozen
class StoreProblem:
    """A stored file that cannot be read back: ``path`` and why (never what it holds)."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@attrs.frozen
class StoredState:
    """What the store holds: the API's pods and objects, the pods being deleted, and the files
    it could not read."""

    pods: tuple[Pod, ...] = ()
    objects: tuple[KubeObject, ...] = ()
    problems: tuple[StoreProblem, ...] = ()
    deleting: tuple[Deletion, ...] = ()
    """Pods deleted gracefully whose containers may not have stopped yet (not desired)."""
    managed: dict[tuple[str, str, str], Any] = attrs.field(factory=dict)
    """Each object's ``metadata.managedFields`` as stored, by (kind, namespace, name)."""


def _make_private_dir(path: str) -> None:
    """``path`` as a directory of mode 0700, flushed into its parent when new. Its parents are
    made as ``makedirs`` makes them, and left as they are."""
    if os.path.isdir(path):
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, 0o700)
        return
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    os.chmod(path, 0o700)  # whatever the umask
    sync_directory(parent)


def file_name(namespace: str, name: str) -> str:
    """The file of the object ``namespace/name`` in its kind's directory: ``<namespace>_<name>``,
    or for one too long to be a file name (a name is up to 253 characters) the SHA-256 of
    ``namespace/name`` (no ``_``: never a short one's), the file holding the full name."""
    for part in (namespace, name):
        if not _NAME_RE.fullmatch(part):
            raise ValueError(f"cannot hold {part!r}: not a DNS name")
    plain = f"{namespace}_{name}{_SUFFIX}"
    if len(plain) <= _MAX_FILE_NAME:
        return plain
    return hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest() + _SUFFIX


def document_of(item: Pod | KubeObject) -> dict[str, Any]:
    """The v1 document the store keeps for a pod (without status) or an object."""
    if isinstance(item, Pod):
        body = pod_to_dict(attrs.evolve(item, status=None))
        body.pop("status", None)
        return body
    return object_to_dict(item)


def _decode(kind: str, document: object) -> Pod | KubeObject | Deletion:
    """The stored document as the API held it; ``ValueError`` saying why it is not one."""
    if not isinstance(document, dict):
        raise ValueError("does not hold a JSON object")
    found = document.get("kind")
    if found != kind:
        raise ValueError(f"holds kind {found!r}, not {kind!r}")
    try:
        if kind == "Pod":
            deleting = split_deletion(document)
            if deleting is not None:
                body, timestamp, grace = deleting
                return Deletion(pod_from_dict(body), timestamp, grace)
            return pod_from_dict(document)
        obj, problems = decode_object(document, "")  # never quotes a Secret's values
    except ValidationError as error:
        raise ValueError(f"is not a valid {kind}: {error.problems[0]}") from None
    if problems:
        raise ValueError(f"is not a valid {kind}: {problems[0]}")
    return obj


class ApiStore:
    """The API's pods, ConfigMaps and Secrets under ``directory`` (``<root-dir>/api``).

    ``put`` and ``delete`` return once the change is on disk (or raise ``OSError``, whose
    ``strerror`` names the file and why, and then nothing changed); ``load`` reads everything
    back. Not thread-safe: the API writes under its write lock.
    """

    def __init__(self, directory: str) -> None:
        self.directory = os.path.abspath(directory)

    def path_of(self, kind: str, namespace: str, name: str) -> str:
        return os.path.join(self.directory, DIRECTORIES[kind], file_name(namespace, name))

    def put(self, item: Pod | KubeObject | Deletion, managed: list[Any] | None = None) -> None:
        """Write ``item`` (a new one, or the new version of one; a ``Deletion``: the pod with
        its deletion fields), with its ``managedFields`` entries when given."""
        if isinstance(item, Deletion):
            document = document_of(item.pod)
            document["metadata"].update(item.fields())
            item = item.pod
        else:
            document = document_of(item)
        if managed:
            document["metadata"]["managedFields"] = managed
        meta = item.metadata
        path = self.path_of(item.kind, meta.namespace, meta.name)
        data = json.dumps(document, indent=1, sort_keys=True).encode() + b"\n"
        try:
            self._make()
            _make_private_dir(os.path.dirname(path))
            replace_file(path, data)
        except OSError as error:
            raise _failed(error, f"cannot write {path}") from None

    def _make(self) -> None:
        """The store's directory with every kind's directory and the marker that says so."""
        marker = os.path.join(self.directory, MARKER)
        if os.path.lexists(marker):
            return
        _make_private_dir(self.directory)
        for directory in DIRECTORIES.values():
            _make_private_dir(os.path.join(self.directory, directory))
        replace_file(marker, b"1\n")

    def delete(self, kind: str, namespace: str, name: str) -> None:
        path = self.path_of(kind, namespace, name)
        try:
            remove_file(path)
        except OSError as error:
            raise _failed(error, f"cannot remove {path}") from None

    def load(self) -> StoredState:
        """Everything stored (nothing when the store was never written). A file that cannot be
        read, is not a regular file, is not JSON, is not a valid object of its directory's kind
        or does not match its name is a problem; so is a kind's directory that is missing from a
        store made with all of them (``MARKER``), or is not a directory: the store is the
        agent's own state, and what cannot be read of it is unknown, never empty. A temporary
        file (a write not renamed in) is never read."""
        pods: list[Pod] = []
        objects: list[KubeObject] = []
        problems: list[StoreProblem] = []
        deleting: list[Deletion] = []
        managed: dict[tuple[str, str, str], Any] = {}
        complete = os.path.lexists(os.path.join(self.directory, MARKER))
        for kind, directory in DIRECTORIES.items():
            path = os.path.join(self.directory, directory)
            for item, fields in _read_kind(kind, path, complete):
                if fields and not isinstance(item, StoreProblem):
                    meta = item.pod.metadata if isinstance(item, Deletion) else item.metadata
                    managed[kind, meta.namespace, meta.name] = fields
                if isinstance(item, StoreProblem):
                    problems.append(item)
                elif isinstance(item, Pod):
                    pods.append(item)
                elif isinstance(item, Deletion):
                    deleting.append(item)
                else:
                    objects.append(item)
        return StoredState(tuple(pods), tuple(objects), tuple(problems), tuple(deleting), managed)


_Read = tuple[Pod | KubeObject | Deletion | StoreProblem, Any]
"""A file read back, and the ``managedFields`` it holds (None when it holds none)."""


def _read_kind(kind: str, directory: str, complete: bool) -> Iterator[_Read]:
    """The files of one kind's directory; its absence is a problem in a ``complete`` store."""
    try:
        mode = os.lstat(directory).st_mode
        if not stat.S_ISDIR(mode):
            what = "a symbolic link" if stat.S_ISLNK(mode) else "not a directory"
            yield StoreProblem(directory, f"{what}, not the store's directory"), None
            return
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        if complete:
            yield StoreProblem(directory, _MISSING), None
        return
    except OSError as error:
        yield StoreProblem(directory, _why(error)), None
        return
    for entry in names:
        path = os.path.join(directory, entry)
        if entry.startswith(_TEMP_PREFIX):
            _remove_if_stale(path)
            continue
        if not entry.endswith(_SUFFIX):
            yield StoreProblem(path, f"not a file of the store (no {_SUFFIX} suffix)"), None
            continue
        yield _read_file(kind, path, entry)


_MISSING = "missing from the store (made with it): what it held is unknown, and is kept as it runs"


def _remove_if_stale(path: str) -> None:
    """A temporary file is a write not renamed in yet (never part of the state): removed once
    it is old enough to be from a writer that died, not one at work (a store is read before the
    root directory's lock is taken, by an embedder)."""
    with contextlib.suppress(OSError):
        if time.time() - os.lstat(path).st_mtime > STALE_TEMP_SECONDS:
            logger.info("removing %s: a write to the API store that did not complete", path)
            os.unlink(path)


def _read_file(kind: str, path: str, entry: str) -> _Read:
    try:
        raw, _ = read_own_file(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return StoreProblem(path, "a symbolic link, not a file of the store"), None
        return StoreProblem(path, _why(error)), None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return StoreProblem(path, f"not UTF-8 text (at byte {error.start})"), None
    if not text.strip():
        return StoreProblem(path, "empty file"), None
    try:
        document = json.loads(text)
    except ValueError as error:
        # The message names a position, never the text (a Secret's file holds its values).
        where = getattr(error, "msg", "invalid"), getattr(error, "pos", "?")
        return StoreProblem(path, f"not valid JSON: {where[0]} (char {where[1]})"), None
    try:
        item = _decode(kind, document)
    except ValueError as error:
        return StoreProblem(path, str(error)), None
    meta = item.pod.metadata if isinstance(item, Deletion) else item.metadata
    try:
        expected = file_name(meta.namespace, meta.name)
    except ValueError as error:
        return StoreProblem(path, str(error)), None
    if expected != entry:
        return StoreProblem(
            path, f"holds {meta.namespace}/{meta.name}, whose file would be {expected}"
        ), None
    fields = (document.get("metadata") or {}).get("managedFields")
    return item, fields if isinstance(fields, list) else None


def _failed(error: OSError, what: str) -> OSError:
    """``error`` again, its ``strerror`` saying what failed (``cannot write <path>: why``)."""
    return OSError(error.errno, f"{what}: {_why(error)}")


def _why(error: OSError) -> str:
    return error.strerror or str(error) or type(error).__name__


def unreadable(problems: tuple[StoreProblem, ...]) -> str:
    """Why the stored state is only partly known ("" when every file was read)."""
    return "; ".join(f"cannot read {problem}" for problem in problems)


def keep_stored_pods(
    root_dir: str,
    deliver: Callable[[PodUpdate], None],
    source: str = SourceName.KUBE_APISERVER.value,
) -> StoredState:
    """For an agent that does not serve the API (``--port 0``, ``--once``): report what the
    store holds as the API source's state, read-only, so that pods created over the API before
    keep running instead of being taken for pods nobody wants. A file that cannot be read keeps
    the source not ready (nothing is deleted)."""
    state = ApiStore(os.path.join(root_dir, STORE_DIR)).load()
    if not (state.pods or state.objects or state.problems):
        return state
    unknown = unreadable(state.problems)
    deliver(PodUpdate(Operation.SET, state.pods, source, state.objects, reason=unknown))
    logger.info(
        "%d pod(s) and %d object(s) written over the Kubernetes API are kept as they are"
        " (the API is not served: they cannot be changed until it is)",
        len(state.pods),
        len(state.objects),
    )
    return state
