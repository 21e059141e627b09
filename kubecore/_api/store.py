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

Names and namespaces are DNS names (no ``_``), so a file names exactly one object. Each write goes
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
import json
import logging
import os
import re
import tempfile
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

logger = logging.getLogger(__name__)

STORE_DIR = "api"
"""The store's directory under the agent's root directory."""
DIRECTORIES = {"Pod": "pods", "ConfigMap": "configmaps", "Secret": "secrets"}
"""Each kind's directory in the store."""
_SUFFIX = ".json"
_TEMP_PREFIX = ".tmp-"
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


def replace_file(path: str, data: bytes, mode: int = 0o600) -> None:
    """Make ``path`` hold ``data`` (with ``mode``) atomically and durably: a reader, or the file
    after a crash, shows the old contents or the new ones, never a mix."""
    directory = os.path.dirname(path)
    fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), mode)
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _sync_directory(directory)


def remove_file(path: str) -> bool:
    """Unlink ``path`` durably; False when it was not there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    _sync_directory(os.path.dirname(path))
    return True


def _sync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
    _sync_directory(parent)


def file_name(namespace: str, name: str) -> str:
    """The file of the object ``namespace/name`` in its kind's directory."""
    for part in (namespace, name):
        if not _NAME_RE.fullmatch(part):
            raise ValueError(f"cannot hold {part!r}: not a DNS name")
    return f"{namespace}_{name}{_SUFFIX}"


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
            _make_private_dir(self.directory)
            _make_private_dir(os.path.dirname(path))
            replace_file(path, data)
        except OSError as error:
            raise _failed(error, f"cannot write {path}") from None

    def delete(self, kind: str, namespace: str, name: str) -> None:
        path = self.path_of(kind, namespace, name)
        try:
            remove_file(path)
        except OSError as error:
            raise _failed(error, f"cannot remove {path}") from None

    def load(self) -> StoredState:
        """Everything stored (nothing when the store was never written). A file that cannot be
        read, is not JSON, is not a valid object of its directory's kind or does not match its
        name is a problem; a temporary file (a write not renamed in) is never read."""
        pods: list[Pod] = []
        objects: list[KubeObject] = []
        problems: list[StoreProblem] = []
        deleting: list[Deletion] = []
        managed: dict[tuple[str, str, str], Any] = {}
        for kind, directory in DIRECTORIES.items():
            for item, fields in _read_kind(kind, os.path.join(self.directory, directory)):
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


def _read_kind(kind: str, directory: str) -> Iterator[_Read]:
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
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
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as error:
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
