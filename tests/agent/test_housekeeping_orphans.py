"""Orphaned pod directories are looked for when a pod that left has been gone for the reclaim
grace (and every ORPHAN_RESCAN seconds), not at every housekeeping interval: listing 10,000
directories is most of a pass; and a pod back within the grace keeps its directory."""

from __future__ import annotations

from typing import Any

from kubecore._contract.values import RuntimeSnapshot
from kubecore._housekeeping.gc import ContainerGCPolicy, plan_container_gc
from kubecore._housekeeping.timers import ORPHAN_RESCAN, POD_DIR_RECLAIM_GRACE, Housekeeping


class Volumes:
    def __init__(self) -> None:
        self.scans: list[set[str]] = []

    def cleanup_orphans(self, keep: Any) -> list[str]:
        self.scans.append(set(keep))
        return []


def housekeeping(volumes: Volumes) -> Housekeeping:
    return Housekeeping(
        None,  # type: ignore[arg-type]
        volumes,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        ContainerGCPolicy(),
        housekeeping_interval=2.0,
        container_gc_interval=1e9,
        image_gc_interval=1e9,
        start=0.0,
    )


def run(chores: Housekeeping, desired: set[str], mono: float) -> None:
    chores.run(
        RuntimeSnapshot(sandboxes=(), containers=()),
        RuntimeSnapshot(sandboxes=(), containers=()),
        desired,
        (),
        sources_ready=True,
        now=mono,
        mono=mono,
    )


def test_orphans_are_looked_for_when_a_pod_leaves_or_after_the_rescan_period() -> None:
    volumes = Volumes()
    chores = housekeeping(volumes)
    run(chores, {"a", "b"}, 0.0)  # the first time: directories an earlier agent left
    run(chores, {"a", "b"}, 2.0)
    run(chores, {"a", "b", "c"}, 4.0)  # a pod came: nothing can be orphaned
    assert volumes.scans == [{"a", "b"}]
    run(chores, {"a", "c"}, 6.0)  # b left: its directory waits out the grace
    assert len(volumes.scans) == 1
    run(chores, {"a", "c"}, 6.0 + POD_DIR_RECLAIM_GRACE)
    assert volumes.scans[-1] == {"a", "c"} and len(volumes.scans) == 2
    run(chores, {"a", "c"}, 6.0 + POD_DIR_RECLAIM_GRACE + ORPHAN_RESCAN)
    assert len(volumes.scans) == 3


def test_a_pod_back_within_the_grace_keeps_its_directory() -> None:
    volumes = Volumes()
    chores = housekeeping(volumes)
    run(chores, {"a", "b"}, 0.0)
    run(chores, {"a"}, 2.0)  # b left
    assert all("b" in scan for scan in volumes.scans)
    run(chores, {"a"}, 2.0 + POD_DIR_RECLAIM_GRACE / 2)
    run(chores, {"a", "b"}, 4.0 + POD_DIR_RECLAIM_GRACE / 2)  # made again, the same UID
    run(chores, {"a", "b"}, 4.0 + POD_DIR_RECLAIM_GRACE * 2)
    assert all("b" in scan for scan in volumes.scans)


def test_container_gc_plans_nothing_when_nothing_is_dead() -> None:
    plan = plan_container_gc(
        RuntimeSnapshot(sandboxes=(), containers=()), {"a"}, ContainerGCPolicy(), 0.0
    )
    assert plan.containers == () and plan.sandboxes == ()
