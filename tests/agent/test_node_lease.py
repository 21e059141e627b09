"""One agent per node name on an engine: the lease a started agent holds on its node name, on
the in-memory runtime in virtual time."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kubecore._agent.kubelet import Kubelet
from kubecore._agent.node_lease import LEASE_TTL, NodeNameGuard, pid_namespace, process_gone
from kubecore._contract.capabilities import NodeClaims, NodeHolder
from kubecore._contract.errors import NodeNameInUse, RuntimeUnavailable
from kubecore_fake import FakeRuntime
from tests.agent.support import Node, make_node, new_kubelet
from tests.builders import make_pod


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


def second_agent(node: Node, **config: object) -> Kubelet:
    """Another agent on the same runtime (the same engine), with its own root directory."""
    return new_kubelet(node.runtime, node.clock, node.checker, node.tmp / "second", **config)


def wait_until(predicate: object, timeout: float = 10.0) -> bool:
    """Real time, bounded: for the agents' loop threads."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False


def crashed_holder(**fields: object) -> NodeHolder:
    values: dict[str, object] = {"id": "crashed-agent", "host": "elsewhere", "pid": 4242}
    values.update(fields)
    return NodeHolder(**values)  # type: ignore[arg-type]


def test_the_fake_runtime_holds_node_leases() -> None:
    assert isinstance(FakeRuntime(), NodeClaims)


def test_a_second_agent_with_the_same_node_name_is_refused_naming_the_first(
    node: Node,
) -> None:
    first = node.kubelet
    first.start()
    second = second_agent(node)
    try:
        with pytest.raises(NodeNameInUse) as refused:
            second.start()
        message = str(refused.value)
        assert "'kubecore-node'" in message
        assert f"process {os.getpid()} on host" in message
        assert first._rooms.node_guard.holder.id in message
        assert "--node-name" in message
        assert not second.running
        assert first.running  # the first one carries on
    finally:
        second.stop()
        first.stop()


def test_another_node_name_on_the_same_engine_starts(node: Node) -> None:
    node.kubelet.start()
    other = second_agent(node, node_name="other-node")
    try:
        other.start()
        assert other.running
    finally:
        other.stop()
        node.kubelet.stop()


def test_after_the_first_stops_cleanly_the_second_starts(node: Node) -> None:
    first = node.kubelet
    first.start()
    second = second_agent(node)
    with pytest.raises(NodeNameInUse):
        second.start()
    first.stop()
    assert node.runtime.node_lease("kubecore-node") is None  # given up, not left to lapse
    try:
        second.start()
        assert second.running
        lease = node.runtime.node_lease("kubecore-node")
        assert lease is not None and lease.holder == second._rooms.node_guard.holder
    finally:
        second.stop()


def test_a_lease_is_renewed_while_the_agent_runs(node: Node) -> None:
    first = node.kubelet
    first.start()
    second = second_agent(node)
    try:
        for _ in range(12):  # 4 TTLs, in steps of 5 s: every renewal on time
            node.clock.advance(LEASE_TTL / 3)
        with pytest.raises(NodeNameInUse):
            second.start()
        lease = node.runtime.node_lease("kubecore-node")
        assert lease is not None and not lease.expired(node.clock.now())
    finally:
        second.stop()
        first.stop()


def test_a_crashed_agents_lease_is_taken_over_after_its_ttl(
    node: Node, caplog: pytest.LogCaptureFixture
) -> None:
    # A crash: the lease stands, neither renewed nor given up.
    node.runtime.claim_node("kubecore-node", crashed_holder(), LEASE_TTL)
    agent = node.kubelet
    with pytest.raises(NodeNameInUse) as refused:
        agent.start()
    assert "process 4242 on host elsewhere" in str(refused.value)
    assert "lapses in 15s" in str(refused.value)
    node.clock.advance(LEASE_TTL - 1)
    with pytest.raises(NodeNameInUse):
        agent.start()
    node.clock.advance(2)
    with caplog.at_level(logging.WARNING, logger="kubecore"):
        agent.start()
    try:
        assert agent.running
        (taken,) = [r.getMessage() for r in caplog.records if "taken over" in r.getMessage()]
        assert "process 4242 on host elsewhere" in taken and "lapsed" in taken
    finally:
        agent.stop()


def test_an_agent_killed_on_this_host_is_taken_over_at_once(node: Node) -> None:
    if not pid_namespace():
        pytest.skip("this system does not name pid namespaces")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    here = node.kubelet._rooms.node_guard.holder
    gone = crashed_holder(host=here.host, pid=int(dead.stdout), pid_namespace=here.pid_namespace)
    node.runtime.claim_node("kubecore-node", gone, LEASE_TTL)
    node.kubelet.start()  # no waiting out the TTL: the holder's process is gone
    try:
        lease = node.runtime.node_lease("kubecore-node")
        assert lease is not None and lease.holder == here
    finally:
        node.kubelet.stop()


def test_a_killed_process_not_yet_collected_by_its_parent_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        assert wait_until(lambda: _state(child.pid) == "Z")
        here = NodeHolder("me", "this-host", os.getpid(), pid_namespace() or "pid:[7]")
        holder = NodeHolder("them", "this-host", child.pid, here.pid_namespace)
        assert process_gone(holder, here)
    finally:
        child.wait()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        return f.read().rpartition(")")[2].split()[0]


def test_a_live_process_on_this_host_keeps_its_lease(node: Node) -> None:
    here = node.kubelet._rooms.node_guard.holder
    alive = crashed_holder(host=here.host, pid=os.getppid(), pid_namespace=here.pid_namespace)
    node.runtime.claim_node("kubecore-node", alive, LEASE_TTL)
    with pytest.raises(NodeNameInUse):
        node.kubelet.start()


@pytest.mark.parametrize(
    ("fields", "gone"),
    [
        ({}, True),
        ({"host": "another-host"}, False),
        ({"pid_namespace": "pid:[1]"}, False),
        ({"pid": 0}, False),
    ],
)
def test_a_holder_counts_as_gone_only_when_surely_gone(
    fields: dict[str, object], gone: bool
) -> None:
    here = NodeHolder("me", "this-host", os.getpid(), "pid:[7]")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    values: dict[str, object] = {
        "host": "this-host",
        "pid": int(dead.stdout),
        "pid_namespace": "pid:[7]",
    }
    values.update(fields)
    holder = NodeHolder("them", **values)  # type: ignore[arg-type]
    assert process_gone(holder, here) is gone
    assert not process_gone(NodeHolder("other-kubelet", "this-host", os.getpid(), "pid:[7]"), here)


def test_an_agent_that_lost_its_lease_stops_syncing(
    node: Node, caplog: pytest.LogCaptureFixture
) -> None:
    first = node.kubelet
    first.start()
    # The engine answers nothing about leases for longer than the TTL: the renewal at 5 s and
    # the retries after it (at 6, 8 and 12 s, backing off) fail ...
    node.runtime.fail_next("claim_node", 4, RuntimeUnavailable("engine down"))
    node.clock.advance(LEASE_TTL + 1)
    second = second_agent(node)
    try:
        second.start()  # ... so another agent with the name takes it over
        with caplog.at_level(logging.ERROR, logger="kubecore"):
            node.clock.advance(LEASE_TTL)  # the first one's next renewal finds it taken
        assert wait_until(lambda: not first.running)
        assert second.running
        (lost,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert "stops syncing" in lost and second._rooms.node_guard.holder.id in lost
    finally:
        second.stop()
        first.stop()
    assert node.runtime.node_lease("kubecore-node") is None


def test_an_engine_down_at_start_does_not_stop_the_agent_and_the_claim_follows(
    node: Node, caplog: pytest.LogCaptureFixture
) -> None:
    node.runtime.fail_next("claim_node", 2, RuntimeUnavailable("engine down"))
    with caplog.at_level(logging.INFO, logger="kubecore"):
        node.kubelet.start()
        try:
            assert node.kubelet.running
            assert node.runtime.node_lease("kubecore-node") is None
            node.clock.advance(1)  # the retry fails too: said once
            assert node.runtime.node_lease("kubecore-node") is None
            node.clock.advance(2)  # the next one, 2 s later, claims it
            lease = node.runtime.node_lease("kubecore-node")
            assert lease is not None and lease.holder == node.kubelet._rooms.node_guard.holder
        finally:
            node.kubelet.stop()
    said = [r.getMessage() for r in caplog.records if "claim" in r.getMessage()]
    assert len([m for m in said if "cannot claim" in m]) == 1
    assert any("the engine answers again" in m for m in said)


def test_sync_alone_claims_nothing(node: Node) -> None:
    """Inline passes (tests, ``--once`` in virtual time) hold no lease: only ``start`` does."""
    node.kubelet.set_pods([make_pod("web")])
    node.converge()
    assert node.runtime.node_lease("kubecore-node") is None


def test_a_runtime_without_leases_starts_as_before() -> None:
    from kubecore._util.clock import ManualClock

    guard = NodeNameGuard(object(), "n", ManualClock(), on_lost=lambda _lease: None)
    guard.acquire()
    assert not guard.supported and not guard.held
    guard.release()


def test_a_first_agent_that_hangs_or_dies_is_taken_over_after_the_ttl(
    node: Node, caplog: pytest.LogCaptureFixture
) -> None:
    from kubecore._util.clock import ManualClock

    # The first agent's own clock never moves: it never renews (as if killed, or stopped),
    # and never gives its lease up.
    frozen = new_kubelet(node.runtime, ManualClock(), node.checker, node.tmp / "frozen")
    frozen.start()
    second = second_agent(node)
    try:
        with pytest.raises(NodeNameInUse):
            second.start()
        node.clock.advance(LEASE_TTL + 1)  # the engine's time
        with caplog.at_level(logging.WARNING, logger="kubecore"):
            second.start()
        assert second.running
        assert any("lapsed" in r.getMessage() for r in caplog.records)
        lease = node.runtime.node_lease("kubecore-node")
        assert lease is not None and lease.holder == second._rooms.node_guard.holder
    finally:
        second.stop()
        frozen.stop()  # gives up nothing: the lease is not its own any more
    assert node.runtime.node_lease("kubecore-node") is None
