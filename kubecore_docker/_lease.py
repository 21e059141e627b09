"""Node leases on a Docker engine (``NodeClaims``): one marker container per node name.

The marker is created, never started, from an empty image imported on the engine; its unique
name makes the claim exclusive (a second create is a 409), its labels name the holder and the
TTL, and its creation time is the first renewal; a small file in it (written with
``put_archive``) holds each later one, labels being fixed at creation. A lapsed lease is taken
over by removing that very container (by id) and creating the name again: of two agents taking
over at once, one create wins and the other sees the winner's lease. Renewal times are each
holder's clock, compared with the claimant's: the clocks of hosts whose agents share an engine
must agree to well within the TTL.
"""

from __future__ import annotations

import io
import json
import logging
import tarfile
from collections.abc import Callable
from typing import Any

from kubecore.runtime import (
    Clock,
    Conflict,
    ContainerNotFound,
    ImageNotFound,
    NodeClaim,
    NodeHolder,
    NodeLease,
)
from kubecore_docker._convert import parse_time
from kubecore_docker._errors import Subject, engine_errors
from kubecore_docker._names import LEASE_IMAGE, LEASE_LABEL, lease_name

log = logging.getLogger(__name__)

LEASE_FILE = "kubecore-node-lease.json"
_TRIES = 4
"""Claims that meet another claimant's change (a create lost, a marker gone) look again."""


def _tar_of(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _file_of(archive: bytes) -> bytes | None:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            found = tar.extractfile(member)
            if found is not None:
                return found.read()
    return None


def holder_labels(node_name: str, holder: NodeHolder, ttl: float) -> dict[str, str]:
    return {
        LEASE_LABEL: node_name,
        f"{LEASE_LABEL}.holder": holder.id,
        f"{LEASE_LABEL}.host": holder.host,
        f"{LEASE_LABEL}.pid": str(holder.pid),
        f"{LEASE_LABEL}.pid-namespace": holder.pid_namespace,
        f"{LEASE_LABEL}.ttl": repr(float(ttl)),
    }


def holder_from(labels: dict[str, str]) -> NodeHolder:
    pid = labels.get(f"{LEASE_LABEL}.pid", "")
    return NodeHolder(
        labels.get(f"{LEASE_LABEL}.holder", ""),
        labels.get(f"{LEASE_LABEL}.host", ""),
        int(pid) if pid.isdigit() else 0,
        labels.get(f"{LEASE_LABEL}.pid-namespace", ""),
    )


def _float(value: object, default: float) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default


class DockerNodeLeases:
    """``NodeClaims`` for ``DockerRuntime`` (see the module's docstring)."""

    def __init__(self, api: Callable[[], Any], clock: Clock) -> None:
        self._api = api
        self._clock = clock
        self._held: dict[tuple[str, str], str] = {}
        """(node name, holder id) -> the marker of a lease granted here: a renewal is then one
        write to it (a marker removed by a takeover fails it, and the claim looks again)."""

    def claim(self, node_name: str, holder: NodeHolder, ttl: float, replace: str) -> NodeClaim:
        key = (node_name, holder.id)
        held = self._held.pop(key, None)
        if held is not None:
            mine = NodeLease(node_name, holder, self._clock.now(), ttl)
            try:
                self._write(held, mine)
            except ContainerNotFound:
                pass  # taken over: read who holds it now
            else:
                self._held[key] = held
                return NodeClaim(True, mine)
        claim, marker = self._claim(node_name, holder, ttl, replace)
        if marker:
            self._held[key] = marker
        return claim

    def _claim(
        self, node_name: str, holder: NodeHolder, ttl: float, replace: str
    ) -> tuple[NodeClaim, str]:
        """The claim, and the marker when granted."""
        name = lease_name(node_name)
        for _ in range(_TRIES):
            found = self._read(name, node_name)
            now = self._clock.now()
            mine = NodeLease(node_name, holder, now, ttl)
            if found is None:
                created = self._create(name, mine)
                if created:
                    return NodeClaim(True, mine), created
                continue  # another claimant created it first: read theirs
            marker, lease = found
            if lease.holder.id == holder.id:
                try:
                    self._write(marker, mine)
                except ContainerNotFound:
                    continue  # taken over meanwhile: read who holds it
                return NodeClaim(True, mine), marker
            if not (lease.expired(now) or (replace and lease.holder.id == replace)):
                return NodeClaim(False, lease), ""
            self._remove(marker)
            created = self._create(name, mine)
            if created:
                return NodeClaim(True, mine, replaced=lease), created
        raise Conflict(f"the lease on node name {node_name!r} kept changing while it was claimed")

    def release(self, node_name: str, holder: NodeHolder) -> None:
        held = self._held.pop((node_name, holder.id), None)
        if held is not None:  # its own marker (or gone, if taken over)
            self._remove(held)
            return
        found = self._read(lease_name(node_name), node_name)
        if found is not None and found[1].holder.id == holder.id:
            self._remove(found[0])

    def _read(self, name: str, node_name: str) -> tuple[str, NodeLease] | None:
        try:
            with engine_errors(Subject.CONTAINER):
                data = self._api().inspect_container(name)
        except ContainerNotFound:
            return None
        marker = str(data["Id"])
        labels = dict((data.get("Config") or {}).get("Labels") or {})
        holder = holder_from(labels)
        renewed_at = parse_time(data.get("Created")) or 0.0
        ttl = _float(labels.get(f"{LEASE_LABEL}.ttl"), 0.0)
        renewal = self._read_renewal(marker)
        if renewal.get("holder") == holder.id:  # else not written yet: the creation counts
            renewed_at = _float(renewal.get("renewed_at"), renewed_at)
            ttl = _float(renewal.get("ttl"), ttl)
        return marker, NodeLease(node_name, holder, renewed_at, ttl)

    def _read_renewal(self, marker: str) -> dict[str, Any]:
        try:
            with engine_errors(Subject.CONTAINER):
                stream, _ = self._api().get_archive(marker, "/" + LEASE_FILE)
                archive = b"".join(stream)
        except ContainerNotFound:  # the file (or the marker) is not there
            return {}
        try:
            content = _file_of(archive)
            value = json.loads(content) if content else {}
        except (tarfile.TarError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    def _write(self, marker: str, lease: NodeLease) -> None:
        record = {"holder": lease.holder.id, "renewed_at": lease.renewed_at, "ttl": lease.ttl}
        archive = _tar_of(LEASE_FILE, json.dumps(record).encode())
        with engine_errors(Subject.CONTAINER):
            self._api().put_archive(marker, "/", archive)

    def _create(self, name: str, lease: NodeLease) -> str:
        """Create the marker: its id, '' when the name is taken. Until the first renewal its
        creation time is its renewal (no write: an agent's start stays one request)."""
        image = self._lease_image()
        try:
            with engine_errors(Subject.CONTAINER):
                created = self._api().create_container(
                    image,
                    command=["node-lease"],
                    name=name,
                    labels=holder_labels(lease.node_name, lease.holder, lease.ttl),
                    network_disabled=True,
                )
        except Conflict:
            return ""
        return str(created["Id"])

    def _remove(self, marker: str) -> None:
        try:
            with engine_errors(Subject.CONTAINER):
                self._api().remove_container(marker, force=True)
        except ContainerNotFound:
            pass

    def _lease_image(self) -> str:
        """The markers' image, imported (empty) on first use; never pulled, never retagged."""
        try:
            with engine_errors(Subject.IMAGE):
                self._api().inspect_image(LEASE_IMAGE)
            return LEASE_IMAGE
        except ImageNotFound:
            pass
        repository, _, tag = LEASE_IMAGE.rpartition(":")
        with engine_errors(Subject.IMAGE):
            self._api().import_image_from_data(_tar_of_nothing(), repository=repository, tag=tag)
        log.info("imported the empty image %s for node leases", LEASE_IMAGE)
        return LEASE_IMAGE


def _tar_of_nothing() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w"):
        pass
    return buffer.getvalue()
