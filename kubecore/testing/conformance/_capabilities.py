"""Checks of the optional capabilities: node leases, the event stream, stats, the plugin's
health checker. Each is skipped when the runtime does not offer it."""

from __future__ import annotations

import threading

from kubecore._contract.capabilities import NodeClaims, NodeHolder
from kubecore._contract.values import (
    ProbeOutcome,
    ProbeTarget,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeState,
)
from kubecore._model.v1 import ExecAction, Probe
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import Harness


class OptionalCapabilityChecks(PluginFixtures):
    """Node leases, events, stats and exec probes."""

    # -- node leases (optional: NodeClaims) ----------------------------------------------------

    def test_node_claims_are_exclusive_renewable_and_lapse(self, harness: Harness) -> None:
        rt = harness.runtime
        if not isinstance(rt, NodeClaims):
            harness.not_checked("node leases (NodeClaims)", "the runtime holds no node leases")
        node = f"{harness.prefix}-node"
        first = NodeHolder(f"{harness.prefix}-a", "host-a", 101, "pid:[1]")
        second = NodeHolder(f"{harness.prefix}-b", "host-b", 202, "pid:[2]")
        try:
            took = rt.claim_node(node, first, 60.0)
            assert took.granted and took.replaced is None
            assert took.lease.holder == first and took.lease.ttl == 60.0
            refused = rt.claim_node(node, second, 60.0)
            assert not refused.granted, "a live lease of another holder is refused"
            assert refused.lease.holder == first, "a refusal names the holder, every field"
            assert abs(refused.lease.renewed_at - took.lease.renewed_at) < 5.0
            assert rt.claim_node(node, first, 60.0).granted, "the holder renews its own lease"
            rt.release_node(node, second)
            assert not rt.claim_node(node, second, 60.0).granted, "release by another holder"
            rt.release_node(node, first)
            rt.release_node(node, first)  # idempotent
            assert rt.claim_node(node, second, 60.0).granted, "a released lease is free"
            replaced = rt.claim_node(node, first, 60.0, replace=second.id)
            assert replaced.granted and replaced.replaced is not None
            assert replaced.replaced.holder == second, "replace takes over the holder named"
            rt.release_node(node, first)
            assert rt.claim_node(node, second, 0.5).granted
            harness.clock.sleep(1.5)
            lapsed = rt.claim_node(node, first, 60.0)
            assert lapsed.granted, "a lease not renewed within its ttl is taken over"
            assert lapsed.replaced is not None and lapsed.replaced.holder == second
            assert not rt.claim_node(node, second, 60.0).granted
        finally:
            rt.release_node(node, first)
            rt.release_node(node, second)
        assert rt.claim_node(node, second, 60.0).granted, "nothing is left after the releases"
        rt.release_node(node, second)

    # -- events and stats ----------------------------------------------------------------------

    def test_events_for_start_and_death(self, harness: Harness) -> None:
        rt = harness.runtime
        events: list[RuntimeEvent] = []
        lock = threading.Lock()

        def record(event: RuntimeEvent) -> None:
            with lock:
                events.append(event)

        subscription = rt.watch_events(record)
        if subscription is None:
            harness.not_checked(
                "the event stream (watch_events)", "the runtime has no event stream"
            )
        try:
            sandbox = harness.run_sandbox()
            running = harness.start(sandbox, harness.workloads.run_forever, name="events")
            harness.wait_state(running, RuntimeState.RUNNING)

            def seen(kind: RuntimeEventType) -> RuntimeEvent | None:
                with lock:
                    return next(
                        (e for e in events if e.type is kind and e.container_id == running), None
                    )

            started = harness.wait(lambda: seen(RuntimeEventType.STARTED), "a started event")
            assert started.pod_uid == sandbox[1].uid
            assert started.container_name == "events"
            harness.runtime.stop_container(running, self.STOP_TIMEOUT)
            died = harness.wait(lambda: seen(RuntimeEventType.DIED), "a died event")
            assert died.exit_code == 0
            assert died.pod_uid == sandbox[1].uid
        finally:
            subscription.close()

    def test_container_stats(self, harness: Harness) -> None:
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        every = list(harness.runtime.container_stats())
        # Listed after the stats: a container another client started meanwhile is in both.
        running = {
            c.id for c in harness.runtime.list_containers() if c.state is RuntimeState.RUNNING
        }
        assert container_id in {stats.container_id for stats in every}
        for stats in every:
            assert stats.container_id in running
            for figure in (
                stats.cpu_usage_nanos,
                stats.memory_working_set_bytes,
                stats.memory_usage_bytes,
                stats.memory_rss_bytes,
                stats.memory_page_faults,
                stats.memory_major_page_faults,
                stats.writable_layer_used_bytes,
                stats.writable_layer_inodes_used,
                stats.log_used_bytes,
                stats.log_inodes_used,
            ):
                assert figure is None or figure >= 0, stats

    # -- the plugin's own health checker --------------------------------------------------------

    def test_exec_probes(self, harness: Harness) -> None:
        checker = harness.bundle.health_checker
        if checker is None:
            harness.not_checked(
                "a health checker of its own", "the bundle uses the core's health checker"
            )
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        target = ProbeTarget(container_id, harness.runtime.sandbox_status(sandbox[0]).ip)
        success = Probe(exec=ExecAction(harness.workloads.exit_with(0)), timeout_seconds=10)
        failure = Probe(exec=ExecAction(harness.workloads.exit_with(1)), timeout_seconds=10)
        assert checker.check(success, target).outcome is ProbeOutcome.SUCCESS
        assert checker.check(failure, target).outcome is ProbeOutcome.FAILURE
