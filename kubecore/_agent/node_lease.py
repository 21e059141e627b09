"""One agent per node name on an engine: the agent's lease on its node name (``NodeClaims``).

A started agent claims its node name on the engine and renews the claim every third of its
TTL. A second agent with the same name is refused (``NodeNameInUse``), wherever it runs and
whatever its root directory. A holder that stops gives the lease up; one that is killed stops
renewing, and its lease lapses after the TTL, or at once for an agent restarted on the same
host, which sees that the holder's process is gone.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable

from kubecore._contract.capabilities import NodeClaim, NodeClaims, NodeHolder, NodeLease
from kubecore._contract.errors import ContainerRuntimeError, NodeNameInUse
from kubecore._util.clock import Clock, TimerHandle

logger = logging.getLogger(__name__)

LEASE_TTL = 15.0
"""Seconds a lease stands without renewal; an agent renews it every third of that."""
RETRY_INTERVAL = 1.0
"""Seconds before the first claim again when the engine could not be asked (the agent runs
meanwhile, as it does whenever the engine is down); it doubles up to a renewal interval."""


def pid_namespace() -> str:
    """This process's pid namespace ('' where the system does not say)."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def this_agent() -> NodeHolder:
    """A holder for an agent starting now in this process."""
    return NodeHolder(uuid.uuid4().hex[:16], socket.gethostname(), os.getpid(), pid_namespace())


def process_gone(holder: NodeHolder, here: NodeHolder) -> bool:
    """The holder ran on this host, in this pid namespace, and no process has its pid now: it
    was killed (or crashed) without giving its lease up. Anything less certain is not gone."""
    if not holder.pid or not here.pid_namespace:
        return False
    if (holder.host, holder.pid_namespace) != (here.host, here.pid_namespace):
        return False
    if holder.pid == here.pid:
        return False  # another agent in this very process
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (another user's process, say)
    return _zombie(holder.pid)


def _zombie(pid: int) -> bool:
    """The process has ended and waits for its parent to collect it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


class NodeNameGuard:
    """Holds the agent's lease on its node name while the agent runs.

    ``acquire`` at start raises ``NodeNameInUse`` when another live agent holds the name; when
    the engine cannot be asked, it logs that and keeps claiming in the background. A renewal
    that finds the lease taken over (this agent could not renew it within the TTL, and another
    one took it) calls ``on_lost``: the agent must stop syncing. A runtime without
    ``NodeClaims`` cannot tell; the guard then does nothing. Claims, renewals and the release
    run one at a time, so nothing is claimed again after ``release``."""

    def __init__(
        self,
        runtime: object,
        node_name: str,
        clock: Clock,
        *,
        on_lost: Callable[[NodeLease], None],
        ttl: float = LEASE_TTL,
        holder: NodeHolder | None = None,
    ) -> None:
        self._claims = runtime if isinstance(runtime, NodeClaims) else None
        self.node_name = node_name
        self._clock = clock
        self._on_lost = on_lost
        self.ttl = ttl
        self.holder = holder or this_agent()
        self._lock = threading.Lock()
        """Held for each claim and the release, with the engine's answer."""
        self._timer: TimerHandle | None = None
        self._active = False
        """Between ``acquire`` and ``release`` (or the loss of the lease)."""
        self.held = False
        self._engine_failing = 0
        """While the engine does not answer: the level its failure was logged at."""
        self._retry = RETRY_INTERVAL

    @property
    def supported(self) -> bool:
        return self._claims is not None

    def acquire(self) -> None:
        """Claim the node name for this agent (at start)."""
        if self._claims is None:
            logger.info(
                "the runtime cannot hold node names: a second agent named %r on this engine"
                " would not be detected",
                self.node_name,
            )
            return
        with self._lock:
            if self._active:
                return
            try:
                claim = self._claim(self._claims, starting=True)
            except ContainerRuntimeError as exc:
                self._active = True
                self._schedule(self._engine_failed(exc, starting=True))
                return
            if claim.granted:
                self._active = self.held = True
                self._schedule(self.ttl / 3)
                return
        now = self._clock.now()
        lease = claim.lease
        raise NodeNameInUse(
            self.node_name, str(lease.holder), now - lease.renewed_at, lease.expires_at() - now
        )

    def release(self) -> None:
        """Give the lease up (at stop; idempotent)."""
        with self._lock:
            held, self.held, self._active = self.held, False, False
            timer, self._timer = self._timer, None
            if timer is not None:
                timer.cancel()
            if not held or self._claims is None:
                return
            try:
                self._claims.release_node(self.node_name, self.holder)
            except ContainerRuntimeError as exc:
                logger.warning(
                    "could not give up the lease on node name %r (it lapses in %.0fs): %s",
                    self.node_name,
                    self.ttl,
                    exc,
                )

    def _claim(self, claims: NodeClaims, *, starting: bool) -> NodeClaim:
        claim = claims.claim_node(self.node_name, self.holder, self.ttl)
        if not claim.granted and starting and process_gone(claim.lease.holder, self.holder):
            claim = claims.claim_node(
                self.node_name, self.holder, self.ttl, replace=claim.lease.holder.id
            )
        if not claim.granted:
            return claim
        if self._engine_failing:
            logger.log(
                logging.INFO if self._engine_failing >= logging.WARNING else logging.DEBUG,
                "node name %r claimed: the engine answers again",
                self.node_name,
            )
            self._engine_failing = 0
        self._retry = RETRY_INTERVAL
        old = claim.replaced
        if old is not None:
            now = self._clock.now()
            logger.warning(
                "node name %r taken over from %s: %s",
                self.node_name,
                old.holder,
                f"its lease lapsed {now - old.expires_at():.0f}s ago"
                if old.expired(now)
                else "its process on this host is gone",
            )
        return claim

    def _renew(self) -> None:
        with self._lock:
            if not self._active or self._claims is None:
                return
            self._timer = None
            was_held = self.held
            try:
                claim = self._claim(self._claims, starting=not was_held)
            except ContainerRuntimeError as exc:
                self._schedule(self._engine_failed(exc, starting=not was_held))
                return
            except Exception:
                logger.exception("renewing the lease on node name %r failed", self.node_name)
                self._schedule(self._engine_failed(None, starting=False))
                return
            if claim.granted:
                self.held = True
                self._schedule(self.ttl / 3)
                return
            self._active = self.held = False
        logger.error(
            "node name %r is held by %s: this agent %s, and stops syncing (give each agent on"
            " one engine its own --node-name)",
            self.node_name,
            claim.lease.holder,
            "could not renew its lease in time" if was_held else "found it taken",
        )
        self._on_lost(claim.lease)

    def _engine_failed(self, exc: ContainerRuntimeError | None, *, starting: bool) -> float:
        """Say so (once per outage: a warning at start, else at debug level, the relists
        reporting the outage); the seconds until the next claim."""
        if not self._engine_failing:
            self._engine_failing = logging.WARNING if starting else logging.DEBUG
            logger.log(
                self._engine_failing,
                "cannot claim node name %r on the engine yet (%s): claiming again until it answers",
                self.node_name,
                exc or "an unexpected error",
            )
        delay = self._retry
        self._retry = min(2 * self._retry, self.ttl / 3)
        return delay

    def _schedule(self, delay: float) -> None:
        """The next claim in ``delay`` seconds (with the lock held)."""
        if self._active:
            self._timer = self._clock.call_at(self._clock.monotonic() + delay, self._renew)
