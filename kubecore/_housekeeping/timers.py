"""Housekeeping on timers: orphaned pod directories, dead containers, unused images, and the
volumes of running pods (objects refreshed, local storage limits enforced by eviction).

Run by the sync pass with the pass's snapshot; each chore has its own interval on the agent's
monotonic clock. Orphaned volumes and the container GC of pods no longer desired wait until every
source has reported (a pod missing from a source that has not reported yet may still be wanted).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Sequence

from kubecore._contract.errors import ContainerRuntimeError
from kubecore._contract.labels import POD_UID_LABEL
from kubecore._contract.observed import container_name, restart_count
from kubecore._contract.protocols import ContainerRuntime
from kubecore._contract.values import RuntimeSnapshot
from kubecore._housekeeping.gc import (
    ContainerGCPolicy,
    ImageGC,
    plan_container_gc,
    run_container_gc,
)
from kubecore._housekeeping.local_storage import has_ephemeral_storage_limit, local_storage_eviction
from kubecore._housekeeping.log_rotation import ContainerLogRotation
from kubecore._model.rejection import Rejection
from kubecore._model.v1 import Pod
from kubecore._volumes.pod_dirs import VolumeManager

logger = logging.getLogger(__name__)

ORPHAN_RESCAN = 300.0
"""Seconds after which the pod directories are listed again even though no pod left: a
directory an earlier agent left, or one whose removal failed. Otherwise they are listed only
when a pod has left (listing 10,000 directories every housekeeping interval is most of a pass)."""

POD_DIR_RECLAIM_GRACE = 30.0
"""Seconds a pod that left keeps its directory (its emptyDir data) before it is reclaimed: a pod
made again with the same UID within them (a manifest rewritten, a source that came back) finds
its emptyDir as it left it, never emptied."""


def _watches_storage(pod: Pod) -> bool:
    """The pod has a limit on local storage to enforce (memoised on the pod object: asked of
    every pod at every housekeeping interval)."""
    derived = pod.derived
    watches: bool | None = derived.get("watches_storage")
    if watches is None:
        watches = derived["watches_storage"] = has_ephemeral_storage_limit(pod) or any(
            v.empty_dir is not None
            and v.empty_dir.size_limit is not None
            and v.empty_dir.medium != "Memory"
            for v in pod.spec.volumes
        )
    return watches


class Housekeeping:
    def __init__(
        self,
        runtime: ContainerRuntime,
        volumes: VolumeManager,
        image_gc: ImageGC,
        gc_policy: ContainerGCPolicy,
        *,
        housekeeping_interval: float,
        container_gc_interval: float,
        image_gc_interval: float,
        start: float,
        log_rotation: ContainerLogRotation | None = None,
    ) -> None:
        self._runtime = runtime
        self._log_rotation = log_rotation
        self._volumes = volumes
        self._image_gc = image_gc
        self._gc_policy = gc_policy
        self._intervals = (housekeeping_interval, container_gc_interval, image_gc_interval)
        self._last_volumes = -math.inf
        self._last_volume_chores = -math.inf
        self._kept: set[str] = set()
        self._left: dict[str, float] = {}
        """The pods that left, and when: their directories are reclaimed once the grace is over."""
        self._last_orphan_scan = -math.inf
        """The pods whose directories the last orphan scan kept."""
        self._last_container_gc = start
        self._last_image_gc = start

    def run(
        self,
        snapshot: RuntimeSnapshot,
        engine_snapshot: RuntimeSnapshot,
        desired: Collection[str],
        observed: Collection[str],
        *,
        sources_ready: bool,
        now: float,
        mono: float,
    ) -> int:
        """The chores that are due; returns how many containers and images were collected.
        ``snapshot`` holds this node's objects (grouped by pod as ``observed``); image GC looks
        at ``engine_snapshot``, since an image another node's containers use is in use."""
        volumes_every, container_gc_every, image_gc_every = self._intervals
        collected = 0
        if sources_ready and mono - self._last_volumes >= volumes_every:
            self._last_volumes = mono
            keep = (
                set(desired)
                | {s.uid for s in snapshot.sandboxes}
                | {c.labels.get(POD_UID_LABEL, "") for c in snapshot.containers}
            )
            for uid in self._kept - keep:
                self._left.setdefault(uid, mono)
            for uid in keep & self._left.keys():  # back with the same UID: its data stays
                del self._left[uid]
            graced = {
                uid for uid, left in self._left.items() if mono - left < POD_DIR_RECLAIM_GRACE
            }
            ripe = len(graced) < len(self._left)
            if ripe or mono - self._last_orphan_scan >= ORPHAN_RESCAN:
                self._last_orphan_scan = mono
                try:
                    self._volumes.cleanup_orphans(keep | graced)
                    self._left = {uid: self._left[uid] for uid in graced}
                except OSError as exc:
                    self._last_orphan_scan = -math.inf  # retried at the next interval
                    logger.warning("orphaned volume cleanup failed: %s", exc)
            self._kept = keep
        if mono - self._last_container_gc >= container_gc_every:
            self._last_container_gc = mono
            wanted = set(desired) if sources_ready else set(desired) | set(observed)
            plan = plan_container_gc(snapshot, wanted, self._gc_policy, now)
            collected += run_container_gc(self._runtime, plan)
            if plan.containers:
                self._prune_messages(snapshot, set(plan.containers), desired)
        if self._log_rotation is not None:
            self._log_rotation.run(snapshot.containers, now=now, mono=mono)
        if mono - self._last_image_gc >= image_gc_every:
            self._last_image_gc = mono
            try:
                collected += len(self._image_gc.collect(engine_snapshot, now))
            except ContainerRuntimeError as exc:
                logger.warning("image GC failed: %s", exc)
            except Exception:
                logger.exception("image GC failed unexpectedly")
        return collected

    def volume_chores(
        self,
        pods: Sequence[Pod],
        snapshot: RuntimeSnapshot,
        *,
        mono: float,
    ) -> list[tuple[Pod, Rejection, str]]:
        """When due (each housekeeping interval): bring the pods' configMap, secret, downwardAPI
        and projected volumes up to date, and return the pods to evict for their local storage
        (disk emptyDir ``sizeLimit``, ``ephemeral-storage`` limits), with the eviction signal."""
        if mono - self._last_volume_chores < self._intervals[0]:
            return []
        self._last_volume_chores = mono
        try:
            self._volumes.refresh(pods)
        except OSError as exc:
            logger.warning("refreshing volumes failed: %s", exc)
        watched = [p for p in pods if _watches_storage(p)]
        if not watched:
            return []
        layers = (
            self._writable_layers(snapshot)
            if any(map(has_ephemeral_storage_limit, watched))
            else {}
        )
        evictions: list[tuple[Pod, Rejection, str]] = []
        for pod in watched:
            try:
                empty_dirs = self._volumes.empty_dir_usage(pod)
            except (OSError, ValueError) as exc:
                logger.warning("measuring the emptyDirs of pod %s failed: %s", pod.uid, exc)
                continue
            eviction = local_storage_eviction(pod, empty_dirs, layers.get(pod.uid, {}))
            if eviction is not None:
                evictions.append((pod, *eviction))
        return evictions

    def _writable_layers(self, snapshot: RuntimeSnapshot) -> dict[str, dict[str, int]]:
        """Pod UID -> container name -> bytes of its writable layer and logs, as far as the
        runtime reports them."""
        try:
            stats = {s.container_id: s for s in self._runtime.container_stats()}
        except ContainerRuntimeError as exc:
            logger.warning("container stats failed: %s", exc)
            return {}
        usage: dict[str, dict[str, int]] = {}
        for c in snapshot.containers:
            found = stats.get(c.id)
            if found is None:
                continue
            used = (found.writable_layer_used_bytes or 0) + (found.log_used_bytes or 0)
            by_name = usage.setdefault(c.labels.get(POD_UID_LABEL, ""), {})
            name = container_name(c)
            by_name[name] = by_name.get(name, 0) + used
        return usage

    def _prune_messages(
        self, snapshot: RuntimeSnapshot, removed: set[str], desired: Collection[str]
    ) -> None:
        """Remove the termination-message directories of the instances just collected, for the
        pods that stay (a pod that goes loses its whole directory as an orphan)."""
        kept: dict[str, set[tuple[str, int]]] = {}
        touched: set[str] = set()
        for c in snapshot.containers:
            uid = c.labels.get(POD_UID_LABEL, "")
            if c.id in removed:
                touched.add(uid)
            else:
                kept.setdefault(uid, set()).add((container_name(c), restart_count(c)))
        for uid in touched.intersection(desired):
            try:
                self._volumes.prune_container_dirs(uid, kept.get(uid, ()))
            except (OSError, ValueError) as exc:
                logger.warning("pruning termination messages of pod %s failed: %s", uid, exc)
