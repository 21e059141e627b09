"""Checks of what a runtime lists: snapshots agree with the lists and show only managed objects."""

from __future__ import annotations

from collections.abc import Callable

from kubecore._contract.values import RuntimeState, SandboxState
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import Harness, assert_sandbox_matches


class SnapshotChecks(PluginFixtures):
    """Snapshots and lists."""

    # -- labels and snapshots ------------------------------------------------------------------

    def test_snapshot_agrees_with_the_lists(self, harness: Harness) -> None:
        rt = harness.runtime
        ready = harness.run_sandbox()
        stopped = harness.run_sandbox()
        running = harness.start(ready, harness.workloads.run_forever)
        created = harness.create(ready, harness.workloads.run_forever)
        harness.wait_state(running, RuntimeState.RUNNING)
        rt.stop_sandbox(stopped[0])
        snapshot = rt.snapshot()
        sandboxes = {s.id: s for s in snapshot.sandboxes}
        containers = {c.id: c for c in snapshot.containers}
        assert sandboxes[ready[0]].state is SandboxState.READY
        assert sandboxes[stopped[0]].state is SandboxState.NOTREADY
        assert_sandbox_matches(sandboxes[ready[0]], ready[1])
        assert containers[running].state is RuntimeState.RUNNING
        assert containers[created].state is RuntimeState.CREATED
        listed = {c.id: c for c in rt.list_containers()}
        for container_id in (running, created):
            assert listed[container_id].state is containers[container_id].state
            assert dict(listed[container_id].labels) == dict(containers[container_id].labels)
            assert dict(listed[container_id].annotations) == dict(
                containers[container_id].annotations
            )
        assert {s.id for s in rt.list_sandboxes()} >= {ready[0], stopped[0]}

    def test_snapshot_shows_only_managed_objects(
        self, harness: Harness, unmanaged_container: Callable[[], str] | None
    ) -> None:
        if unmanaged_container is None:
            harness.unseen("no unmanaged_container fixture")
        foreign = unmanaged_container()
        sandbox = harness.run_sandbox()
        ours = harness.start(sandbox, harness.workloads.run_forever)
        snapshot = harness.runtime.snapshot()
        ids = {c.id for c in snapshot.containers} | {s.id for s in snapshot.sandboxes}
        assert ours in ids
        assert foreign not in ids
        assert foreign not in {c.id for c in harness.runtime.list_containers()}
        assert foreign not in {s.id for s in harness.runtime.list_sandboxes()}
