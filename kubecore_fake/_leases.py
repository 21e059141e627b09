"""Node leases (``NodeClaims``) of the in-memory runtime: kept in the runtime object and timed
by its clock, so every agent handed the same runtime shares them, as agents on one engine do."""

from __future__ import annotations

import threading

from kubecore.runtime import Clock, NodeClaim, NodeHolder, NodeLease


class NodeLeases:
    """The leases by node name, under the runtime's lock."""

    def __init__(self, clock: Clock, lock: threading.RLock) -> None:
        self._clock = clock
        self._lock = lock
        self._leases: dict[str, NodeLease] = {}

    def claim(self, node_name: str, holder: NodeHolder, ttl: float, replace: str) -> NodeClaim:
        with self._lock:
            now = self._clock.now()
            current = self._leases.get(node_name)
            mine = NodeLease(node_name, holder, now, ttl)
            if current is None or current.holder.id == holder.id:
                self._leases[node_name] = mine
                return NodeClaim(True, mine)
            if current.expired(now) or (replace and current.holder.id == replace):
                self._leases[node_name] = mine
                return NodeClaim(True, mine, replaced=current)
            return NodeClaim(False, current)

    def release(self, node_name: str, holder: NodeHolder) -> None:
        with self._lock:
            current = self._leases.get(node_name)
            if current is not None and current.holder.id == holder.id:
                del self._leases[node_name]

    def lease(self, node_name: str) -> NodeLease | None:
        with self._lock:
            return self._leases.get(node_name)
