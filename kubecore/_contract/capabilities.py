"""The optional parts of the runtime contract: small ``runtime_checkable`` protocols a runtime may
implement beyond ``ContainerRuntime``, found by type (``isinstance(runtime, ResourceUpdater)``, or
``capabilities(runtime)`` for all of them), never by reaching under a wrapper: a wrapper of a
runtime is built with exactly the capabilities of the runtime it wraps."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

from kubecore._contract.streaming import PortForwarder, StreamingRuntime
from kubecore._contract.values import ContainerResources


@runtime_checkable
class ResourceUpdater(Protocol):
    """A runtime that can change a running container's resources in place (CRI
    ``UpdateContainerResources``); one without it has containers restarted to resize them."""

    def update_container_resources(self, container_id: str, resources: ContainerResources) -> None:
        """Raises ``ContainerNotFound``; an engine refusal is a ``ContainerRuntimeError``."""
        ...


@attrs.frozen
class NodeHolder:
    """One running agent, as a node's lease names it: ``id`` is unique to the agent (a new one
    at each start); the rest says where it runs, for people and for a restarted agent on the
    same host to tell that the holder's process is gone."""

    id: str
    host: str = ""
    pid: int = 0
    pid_namespace: str = ""
    """The process's pid namespace (``pid:[4026531836]``): pids compare only within one."""

    def __str__(self) -> str:
        where = f"process {self.pid} on host {self.host}" if self.pid else f"host {self.host}"
        return f"{where}, agent {self.id}"


@attrs.frozen
class NodeLease:
    """Who holds a node name on an engine, until when."""

    node_name: str
    holder: NodeHolder
    renewed_at: float
    """When the holder last took or renewed it (seconds since the epoch, its runtime's clock)."""
    ttl: float
    """Seconds after ``renewed_at`` at which the lease lapses unless renewed."""

    def expires_at(self) -> float:
        """When the lease lapses unless renewed: ``renewed_at + ttl`` (the runtime's clock)."""
        return self.renewed_at + self.ttl

    def expired(self, now: float) -> bool:
        """Whether the lease has lapsed at ``now``."""
        return now > self.expires_at()


@attrs.frozen
class NodeClaim:
    """What ``claim_node`` answered."""

    granted: bool
    lease: NodeLease
    """The lease as it stands: the caller's when granted, the live holder's when refused."""
    replaced: NodeLease | None = None
    """Another holder's lease that was taken over (it had lapsed, or was named in ``replace``)."""


@runtime_checkable
class NodeClaims(Protocol):
    """A runtime that can hold a node name on its engine for one agent at a time (optional):
    two agents with one node name on one engine would both sync the same objects. Agents on
    other hosts, and with other root directories, share the engine's leases, so the claim
    lives with the engine (Docker: a labelled marker container; CRI, whose objects cannot be
    updated, a lease file on the runtime's host), not in an agent's files."""

    def claim_node(
        self, node_name: str, holder: NodeHolder, ttl: float, *, replace: str = ""
    ) -> NodeClaim:
        """Take or renew the lease on ``node_name`` for ``holder``, atomically against every
        other caller on the engine. Granted when there is no lease, when ``holder`` (by ``id``)
        holds it, when it lapsed (not renewed within its ``ttl``), or when its holder's id is
        ``replace`` (the caller knows that holder is gone); the lease then stands renewed now
        for ``ttl`` seconds. Otherwise refused, naming the live holder. Raises a
        ``ContainerRuntimeError`` when the engine cannot answer."""
        ...

    def release_node(self, node_name: str, holder: NodeHolder) -> None:
        """Give up the lease if ``holder`` holds it (idempotent; another holder's stays)."""
        ...


@runtime_checkable
class ContainerLogReopener(Protocol):
    """A runtime that writes its containers' logs to files (``RuntimeContainer.log_path``) and
    can be told to reopen one (CRI ``ReopenContainerLog``): the agent then rotates those files
    as the kubelet does (``kubecore._housekeeping.log_rotation``)."""

    def reopen_container_log(self, container_id: str) -> None:
        """Make the running container write its output to a new file at its ``log_path`` (the
        old one has just been renamed away). Raises ``ContainerNotFound``, or a
        ``ContainerRuntimeError`` when the runtime cannot (the rotation is then undone)."""
        ...


@runtime_checkable
class HostMemoryVolumes(Protocol):
    """A runtime whose mounts are binds of host paths only (CRI's ``Mount`` has no tmpfs): the
    agent mounts each emptyDir of medium Memory as a tmpfs on the host itself, as the kubelet
    does (sized by its ``sizeLimit`` or the pod's memory limit), and hands the runtime a plain
    bind of it. The agent must then be able to mount (run as root)."""

    def binds_host_memory_volumes(self) -> bool:
        """True: memory-backed emptyDirs come to this runtime as binds of host tmpfs mounts
        (``Mount.memory_backed`` False), never as ``memory_backed`` mounts."""
        ...


@runtime_checkable
class InProcessMounts(Protocol):
    """A runtime that reads its containers' mounts itself (the in-memory runtime), not through
    kernel bind mounts: nothing resolves a host path again after the agent has verified it, so
    a subPath comes to it as that path. Any other runtime is given a bind of the verified inode
    under the pod's directory (``kubecore._volumes.subpath``), which needs the agent to run as
    root."""

    def reads_mounts_in_process(self) -> bool:
        """True: no kernel binds this runtime's mounts (subPaths come as verified paths)."""
        ...


OPTIONAL_CAPABILITIES: tuple[type, ...] = (
    ResourceUpdater,
    NodeClaims,
    StreamingRuntime,
    PortForwarder,
    ContainerLogReopener,
    HostMemoryVolumes,
    InProcessMounts,
)
"""The protocols a runtime may implement beyond ``ContainerRuntime`` (the module docstring)."""


def capabilities(runtime: object) -> tuple[type, ...]:
    """The optional capabilities (of ``OPTIONAL_CAPABILITIES``) that ``runtime`` implements, in
    that order: ``ResourceUpdater in capabilities(runtime)`` is ``isinstance(runtime,
    ResourceUpdater)``."""
    return tuple(
        capability for capability in OPTIONAL_CAPABILITIES if isinstance(runtime, capability)
    )
