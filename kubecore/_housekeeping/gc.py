"""Garbage collection of dead containers, dead sandboxes and unused images."""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection

import attrs

from kubecore._contract.errors import Conflict, ContainerRuntimeError
from kubecore._contract.labels import POD_UID_LABEL, is_ephemeral
from kubecore._contract.observed import (
    container_age,
    container_name,
    never_started,
    newest_sandbox,
)
from kubecore._contract.protocols import ContainerRuntime, Puller
from kubecore._contract.values import (
    RuntimeContainer,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    SandboxState,
)

logger = logging.getLogger(__name__)


@attrs.frozen
class ContainerGCPolicy:
    max_dead_per_container: int = 1
    """Dead containers kept per (pod UID, container name); negative keeps them all."""
    min_age: float = 0.0
    """A dead container younger than this (seconds since it finished) is kept."""


@attrs.frozen
class GCPlan:
    containers: tuple[str, ...] = ()
    sandboxes: tuple[str, ...] = ()


def _dead_since(c: RuntimeContainer) -> float:
    return c.finished_at if c.finished_at is not None else c.created_at


def plan_container_gc(
    snapshot: RuntimeSnapshot,
    desired_uids: Collection[str],
    policy: ContainerGCPolicy,
    now: float,
) -> GCPlan:
    """Which dead containers and sandboxes to remove (pure).

    Per (pod UID, container name) the newest ``max_dead_per_container`` dead containers are kept;
    for pods no longer desired none are kept. Only dead containers older than ``min_age`` go;
    running ones never. Dead sandboxes go when no container is left in them and they are not the
    newest sandbox of a desired pod.
    """
    groups: dict[tuple[str, str], list[RuntimeContainer]] = {}
    live: list[RuntimeContainer] = []
    for c in snapshot.containers:
        if c.state is RuntimeState.RUNNING or c.state is RuntimeState.UNKNOWN:
            live.append(c)
            continue
        uid = c.labels.get(POD_UID_LABEL, "")
        groups.setdefault((uid, container_name(c)), []).append(c)
    if not groups and all(s.state is not SandboxState.NOTREADY for s in snapshot.sandboxes):
        return GCPlan()  # nothing is dead: the common case, without the bookkeeping below
    newest_live = _newest_live(live, groups)
    remove: list[str] = []
    for key, dead in groups.items():
        uid = key[0]
        dead.sort(key=container_age, reverse=True)
        stale, dead = _stale_unstarted(dead, newest_live.get(key))
        remove.extend(c.id for c in stale if now - _dead_since(c) >= policy.min_age)
        if dead and uid in desired_uids and never_started(dead[0]):
            dead = dead[1:]  # the newest instance, maybe being started now: the planner's
        if not dead:
            continue
        keep = policy.max_dead_per_container if uid in desired_uids else 0
        if keep == 0 and uid in desired_uids and is_ephemeral(dead[0].annotations):
            keep = 1  # an ephemeral container's one run: removed, the planner would start it again
        candidates = dead[keep:] if keep >= 0 else []
        remove.extend(c.id for c in candidates if now - _dead_since(c) >= policy.min_age)

    removed = set(remove)
    left_in: dict[str, int] = {}
    for c in snapshot.containers:
        if c.id not in removed:
            left_in[c.sandbox_id] = left_in.get(c.sandbox_id, 0) + 1
    by_pod: dict[str, list[RuntimeSandbox]] = {}
    for s in snapshot.sandboxes:
        by_pod.setdefault(s.uid, []).append(s)
    newest = {uid: newest_sandbox(group) for uid, group in by_pod.items()}
    sandboxes = [
        s.id
        for s in snapshot.sandboxes
        if s.state is SandboxState.NOTREADY
        and not left_in.get(s.id)
        and not (s.uid in desired_uids and newest[s.uid] is s)
        and now - s.created_at >= policy.min_age
    ]
    return GCPlan(tuple(remove), tuple(sandboxes))


def _newest_live(
    live: list[RuntimeContainer], groups: dict[tuple[str, str], list[RuntimeContainer]]
) -> dict[tuple[str, str], tuple[float, int, str]]:
    """The age of the newest running instance of each group that has dead ones."""
    newest: dict[tuple[str, str], tuple[float, int, str]] = {}
    for c in live:
        key = (c.labels.get(POD_UID_LABEL, ""), container_name(c))
        if key in groups:
            age = container_age(c)
            if key not in newest or age > newest[key]:
                newest[key] = age
    return newest


def _stale_unstarted(
    dead: list[RuntimeContainer], newest_live: tuple[float, int, str] | None
) -> tuple[list[RuntimeContainer], list[RuntimeContainer]]:
    """(never-started instances that are not the newest of their container, the other dead
    ones), from ``dead`` newest first. An interrupted start that a newer instance has replaced
    will never be started and holds no run, logs or exit status: it does not count among the
    dead kept, and goes. The newest instance may be one being started right now: it stays."""
    stale = [
        c
        for i, c in enumerate(dead)
        if never_started(c)
        and (i > 0 or (newest_live is not None and newest_live > container_age(c)))
    ]
    if not stale:
        return stale, dead
    gone = {c.id for c in stale}
    return stale, [c for c in dead if c.id not in gone]


def run_container_gc(runtime: ContainerRuntime, plan: GCPlan) -> int:
    """Carry a plan out; errors are logged and skipped (the next pass retries). Returns removals."""
    done = 0
    for cid in plan.containers:
        try:
            runtime.remove_container(cid)
            done += 1
        except ContainerRuntimeError as exc:
            logger.warning("container GC could not remove %s: %s", cid, exc)
        except Exception:
            logger.exception("container GC could not remove %s", cid)
    for sid in plan.sandboxes:
        try:
            runtime.remove_sandbox(sid)
            done += 1
        except ContainerRuntimeError as exc:
            logger.warning("container GC could not remove sandbox %s: %s", sid, exc)
        except Exception:
            logger.exception("container GC could not remove sandbox %s", sid)
    return done


@attrs.frozen
class ImageGCPolicy:
    high_threshold: int = 85
    low_threshold: int = 80
    min_age: float = 120.0


class ImageGC:
    """Frees image space: above ``high_threshold`` percent used, removes unused images (the least
    recently used first, none younger than ``min_age`` as first seen here) until usage falls to
    ``low_threshold``. Holds ``lock`` (shared with image pulls) for the whole pass."""

    def __init__(self, puller: Puller, policy: ImageGCPolicy, lock: threading.Lock) -> None:
        if not 0 <= policy.low_threshold <= policy.high_threshold <= 100:
            raise ValueError("image GC thresholds must satisfy 0 <= low <= high <= 100")
        self._puller = puller
        self.policy = policy
        self._lock = lock
        self._first_seen: dict[str, float] = {}
        self._last_used: dict[str, float] = {}

    def collect(self, snapshot: RuntimeSnapshot, now: float) -> list[str]:
        """One pass; returns the ids of the images removed."""
        with self._lock:
            usage = self._puller.image_fs_usage()
            images = self._puller.list_images()
            in_use_refs = {c.image for c in snapshot.containers} | {
                c.image_id for c in snapshot.containers if c.image_id
            }
            present = set()
            for image in images:
                present.add(image.id)
                self._first_seen.setdefault(image.id, now)
                refs = {image.id, *image.tags, *image.digests}
                if refs & in_use_refs:
                    self._last_used[image.id] = now
            for gone in [i for i in self._first_seen if i not in present]:
                self._first_seen.pop(gone, None)
                self._last_used.pop(gone, None)
            if usage is None or usage.capacity_bytes <= 0:
                return []
            percent = 100.0 * usage.used_bytes / usage.capacity_bytes
            if percent < self.policy.high_threshold:
                return []
            to_free = usage.used_bytes - usage.capacity_bytes * self.policy.low_threshold // 100
            candidates = [
                image
                for image in images
                if not ({image.id, *image.tags, *image.digests} & in_use_refs)
                and now - self._first_seen[image.id] >= self.policy.min_age
            ]
            candidates.sort(
                key=lambda i: (self._last_used.get(i.id, self._first_seen[i.id]), i.created_at)
            )
            removed: list[str] = []
            freed = 0
            for image in candidates:
                if freed >= to_free:
                    break
                try:
                    self._puller.remove_image(image.id)
                except Conflict:
                    continue
                except ContainerRuntimeError as exc:
                    logger.warning("image GC could not remove %s: %s", image.id, exc)
                    continue
                freed += image.size
                removed.append(image.id)
                self._first_seen.pop(image.id, None)
                self._last_used.pop(image.id, None)
            logger.info(
                "image GC: %.0f%% used (high %d%%), freed %d bytes from %d image(s)",
                percent,
                self.policy.high_threshold,
                freed,
                len(removed),
            )
            return removed
