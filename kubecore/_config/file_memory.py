"""The file source's memory: each manifest file's last good text and whether each manifest
directory held files, read back before the first scan after a restart."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from kubecore._config.base import SourceProblem, parse_documents, prepare_pods
from kubecore._config.file_state import FileState, Fingerprint
from kubecore._config.listing import DirectoryIdentity, RootSeen
from kubecore._config.memory import SourceMemory


class FileMemory:
    """What the file source ``source`` of ``roots`` remembers, in ``state_dir`` (None: only while
    the process lives)."""

    def __init__(
        self, roots: tuple[Path, ...], source: str, state_dir: str | os.PathLike[str] | None
    ) -> None:
        self._roots = roots
        self._absolute_roots = tuple(Path(os.path.abspath(root)) for root in roots)
        self._source = source
        self._store = SourceMemory(state_dir, source) if state_dir is not None else None
        self._loaded = False
        self._empty: dict[Path, bool] = {}
        """Whether each root was empty the last time it was accepted (absent: not known)."""
        self._identity: dict[Path, DirectoryIdentity] = {}
        """Which directory each directory root was the last time it was accepted."""

    def was_empty(self, root: Path) -> bool | None:
        """Whether ``root`` was empty the last time it was accepted (None: not known)."""
        return self._empty.get(root)

    def identity(self, root: Path) -> DirectoryIdentity | None:
        """Which directory ``root`` was the last time its files were accepted (None: not
        known)."""
        return self._identity.get(root)

    def load(self, files: dict[Path, FileState]) -> None:
        """Once, before the first scan: the remembered files (as the files' previous states, put
        in ``files``) and directories."""
        if self._loaded or self._store is None:
            self._loaded = True
            return
        self._loaded = True
        for record in self._store.records("file"):
            loaded = self._file_state(record)
            if loaded is not None:
                files[loaded[0]] = loaded[1]
        for root in self._roots:
            seen = self._store.get("root", os.path.abspath(root))
            if seen is not None and isinstance(seen.get("empty"), bool):
                self._empty[root] = seen["empty"]
            identity = seen.get("identity") if seen is not None else None
            if isinstance(identity, list) and [type(n) for n in identity] == [int, int, int]:
                self._identity[root] = DirectoryIdentity(*identity)

    def _file_state(self, record: dict[str, Any]) -> tuple[Path, FileState] | None:
        path, text, digest = record.get("path"), record.get("text"), record.get("sha256")
        inode = record.get("inode")
        if not (isinstance(inode, list) and [type(n) for n in inode] == [int, int]):
            inode = [0, 0]  # a record from before inodes were kept: not known
        if not (isinstance(path, str) and isinstance(text, str) and isinstance(digest, str)):
            return None
        file = self._own_file(Path(path))
        if file is None:
            return None
        pods, objects, errors = parse_documents(text, str(file))
        # A file remembered with problems (its valid pods were loaded) still has them: the same
        # text read again after a restart must report them, not pass as "no change".
        problem = SourceProblem(str(file), errors) if errors else None
        state = FileState(
            Fingerprint(0, -1, 0, digest, (inode[0], inode[1])),
            prepare_pods(pods, self._source),
            problem,
            objects=objects,
            text=text,
        )
        return file, state

    def _own_file(self, absolute: Path) -> Path | None:
        """The path (as this source names it) of a remembered file, if it is one of its roots
        or directly in one."""
        for root, full in zip(self._roots, self._absolute_roots, strict=True):
            if absolute == full:
                return root
            if absolute.parent == full:
                return root / absolute.name
        return None

    def remember(self, path: Path, state: FileState) -> None:
        if self._store is not None:
            self._store.put(
                "file",
                os.path.abspath(path),
                sha256=state.fingerprint.sha256,
                text=state.text,
                inode=list(state.fingerprint.inode),
            )

    def forget(self, path: Path) -> None:
        if self._store is not None:
            self._store.drop("file", os.path.abspath(path))

    def remember_roots(self, seen: dict[Path, RootSeen]) -> None:
        for root, found in seen.items():
            empty = found.files == 0
            if self._empty.get(root) is empty and self._identity.get(root) == found.identity:
                continue
            self._empty[root] = empty
            identity: list[int] | None = None
            if found.identity is None:
                self._identity.pop(root, None)
            else:
                self._identity[root] = found.identity
                identity = list(attrs.astuple(found.identity))
            if self._store is not None:
                self._store.put("root", os.path.abspath(root), empty=empty, identity=identity)
