"""``NodeClaims`` for the ``cri`` runtime: a node name's lease in a file on the runtime's host.

CRI has no object a lease could live in and be renewed: a sandbox's or container's labels and
annotations are fixed at creation. The agents that share a CRI runtime reach it through its unix
socket, so they share its host, and the lease is a small JSON file there
(``<lease_dir>/<endpoint key>/<node name>.json``, one directory an endpoint, so two containerds
on one host keep leases apart). Each claim and release reads, decides and writes under an
exclusive ``flock`` on the node's lock file, which makes it atomic against every other process;
the write is a rename, so a reader never sees half a lease. A lease left by an agent killed with
``kill -9`` lapses with its ttl, or is taken over at once by a restarted agent on the same host
(``replace``), as on Docker. Agents reaching a runtime over TCP from other hosts do not share the
file: give each its own node name there.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubecore.runtime import (
    Clock,
    InvalidConfig,
    NodeClaim,
    NodeHolder,
    NodeLease,
    replace_file,
)

DEFAULT_LEASE_DIR = "/run/kubecore/cri-leases"


def endpoint_key(endpoint: str) -> str:
    """The directory name of an endpoint's leases: its socket path or address, hashed (so any
    endpoint spelling is a safe file name), after a readable prefix."""
    target = endpoint.removeprefix("unix://")
    readable = "".join(c if c.isalnum() else "-" for c in os.path.basename(target))[:40]
    digest = hashlib.sha256(target.encode()).hexdigest()[:16]
    return f"{readable}-{digest}"


def _lease_from(data: dict[str, Any]) -> NodeLease:
    holder = data["holder"]
    return NodeLease(
        node_name=str(data["node_name"]),
        holder=NodeHolder(
            id=str(holder["id"]),
            host=str(holder.get("host", "")),
            pid=int(holder.get("pid", 0)),
            pid_namespace=str(holder.get("pid_namespace", "")),
        ),
        renewed_at=float(data["renewed_at"]),
        ttl=float(data["ttl"]),
    )


def _lease_data(lease: NodeLease) -> dict[str, Any]:
    holder = lease.holder
    return {
        "node_name": lease.node_name,
        "holder": {
            "id": holder.id,
            "host": holder.host,
            "pid": holder.pid,
            "pid_namespace": holder.pid_namespace,
        },
        "renewed_at": lease.renewed_at,
        "ttl": lease.ttl,
    }


class CriNodeLeases:
    """The lease files of one CRI endpoint (see the module's docstring)."""

    def __init__(self, lease_dir: str, endpoint: str, clock: Clock) -> None:
        self.directory = Path(lease_dir) / endpoint_key(endpoint)
        self._clock = clock

    def claim(self, node_name: str, holder: NodeHolder, ttl: float, replace: str) -> NodeClaim:
        with self._locked(node_name) as path:
            current = self._read(path)
            now = self._clock.now()
            mine = NodeLease(node_name, holder, now, ttl)
            if current is None or current.holder.id == holder.id:
                self._write(path, mine)
                return NodeClaim(True, mine)
            if current.expired(now) or (replace and current.holder.id == replace):
                self._write(path, mine)
                return NodeClaim(True, mine, replaced=current)
            return NodeClaim(False, current)

    def release(self, node_name: str, holder: NodeHolder) -> None:
        with self._locked(node_name) as path:
            current = self._read(path)
            if current is not None and current.holder.id == holder.id:
                path.unlink(missing_ok=True)

    @contextlib.contextmanager
    def _locked(self, node_name: str) -> Iterator[Path]:
        """The lease file's path, held under the node's exclusive lock."""
        name = urllib.parse.quote(node_name, safe="")
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.directory / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:
            raise InvalidConfig(
                f"cri node leases: cannot use {self.directory}: {error.strerror} (set "
                "--runtime-option lease_dir=DIR to a directory this agent may write)"
            ) from error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield self.directory / f"{name}.json"
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    @staticmethod
    def _read(path: Path) -> NodeLease | None:
        """The lease in ``path``; None when there is none, or what is there is not a lease (a
        file nobody wrote whole is nobody's lease)."""
        try:
            return _lease_from(json.loads(path.read_text()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @staticmethod
    def _write(path: Path, lease: NodeLease) -> None:
        replace_file(path, json.dumps(_lease_data(lease)).encode())
