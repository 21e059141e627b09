"""What a manifest source remembers across restarts: one private JSON record a file, directory or
URL, under the agent's root directory."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from kubecore._config.base import sha256_hex
from kubecore._util.files import replace_file

logger = logging.getLogger(__name__)


LAST_GOOD_DIR = "manifests-last-good"
"""The directory under the agent's root directory where the manifest sources keep their last good
state (``SourceMemory``)."""


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
        digest = sha256_hex(f"{self._source}\0{where}".encode())
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
            replace_file(path, json.dumps(record).encode())
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
