"""Which objects an agent touches: only those whose node label names its node (``owned_by``).

An object that carries ``io.kubecore.managed`` but no node label (made by hand, by another tool,
or by an agent older than node labels) is nobody's: no agent syncs, kills or collects it, and
each agent reports it once."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kubecore._agent.snapshot import NodeView
from kubecore._contract.labels import (
    CONTAINER_NAME_LABEL,
    MANAGED_LABEL,
    NODE_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    owned_by,
)
from kubecore._contract.values import (
    ContainerConfig,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    SandboxConfig,
    SandboxState,
)
from kubecore_fake import FakeRuntime
from tests.agent.support import Node, make_node
from tests.builders import make_pod

IMAGE = "busybox:1.36"


@pytest.mark.parametrize(
    ("labels", "node", "owned"),
    [
        ({NODE_LABEL: "a"}, "a", True),
        ({NODE_LABEL: "b"}, "a", False),
        ({MANAGED_LABEL: "true"}, "a", False),  # no node label: nobody's
        ({NODE_LABEL: ""}, "a", False),
        ({MANAGED_LABEL: "true"}, "", True),  # an agent that labels no node
    ],
)
def test_the_ownership_rule(labels: dict[str, str], node: str, owned: bool) -> None:
    assert owned_by(labels, node) is owned


def stray_labels(uid: str, name: str, **extra: str) -> dict[str, str]:
    """What a hand-made object imitating kubecore's carries: everything but the node."""
    return {
        MANAGED_LABEL: "true",
        POD_UID_LABEL: uid,
        POD_NAME_LABEL: name,
        POD_NAMESPACE_LABEL: "default",
        **extra,
    }


def make_strays(runtime: FakeRuntime) -> set[str]:
    """Unlabelled objects of every kind a pass could act on: a ready sandbox with a running and
    an exited container (a pod no source wants: would be killed), a stopped empty sandbox and
    an exited container with no pod (would be collected)."""
    runtime.add_image(IMAGE, pulled=True)
    ready_config = SandboxConfig(
        "stray", "default", "uid-stray", labels=stray_labels("uid-stray", "stray")
    )
    ready = runtime.run_sandbox(ready_config)
    ids = {ready}
    for name, command in (("app", ("server",)), ("done", ("true",))):
        labels = stray_labels("uid-stray", "stray", **{CONTAINER_NAME_LABEL: name})
        cid = runtime.create_container(
            ready, ContainerConfig(name, IMAGE, command=command, labels=labels), ready_config
        )
        runtime.start_container(cid)
        ids.add(cid)
    empty_config = SandboxConfig(
        "gone", "default", "uid-gone", labels=stray_labels("uid-gone", "gone")
    )
    empty = runtime.run_sandbox(empty_config)
    runtime.stop_sandbox(empty)
    ids.add(empty)
    orphan = runtime.create_container(
        ready,
        ContainerConfig("orphan", IMAGE, command=("true",), labels={MANAGED_LABEL: "true"}),
        ready_config,
    )
    runtime.start_container(orphan)
    ids.add(orphan)
    return ids


def listed(runtime: FakeRuntime) -> set[str]:
    snapshot = runtime.snapshot()
    return {s.id for s in snapshot.sandboxes} | {c.id for c in snapshot.containers}


@pytest.fixture
def gc_node(tmp_path: Path) -> Node:
    """A node whose housekeeping and container GC run at every pass."""
    return make_node(tmp_path, housekeeping_interval=1.0, container_gc_interval=1.0)


def test_objects_without_a_node_label_survive_passes_and_gc_and_are_reported_once(
    gc_node: Node, caplog: pytest.LogCaptureFixture
) -> None:
    node = gc_node
    strays = make_strays(node.runtime)
    node.clock.advance(120)  # every stray is old enough to collect
    signals_before = {
        cid: node.runtime.signals(cid) for cid in strays if cid.startswith("container")
    }
    node.kubelet.set_pods([make_pod("web")])
    with caplog.at_level(logging.INFO, logger="kubecore"):
        for _ in range(10):
            node.kubelet.sync()
            node.clock.advance(5)
    assert strays <= listed(node.runtime)
    for cid, before in signals_before.items():
        assert node.runtime.signals(cid) == before, f"{cid} was signalled"
    running = {c.id for c in node.runtime.find_containers(state=RuntimeState.RUNNING)}
    assert {c.id for c in node.runtime.find_containers("app", pod_name="stray")} <= running
    assert [c.name for c in node.running("web")] == ["app"]  # the agent's own pod runs
    warned = [
        r
        for r in caplog.records
        if r.levelno == logging.WARNING and "no io.kubecore.node" in r.getMessage()
    ]
    assert sorted(r.object_id for r in warned) == sorted(strays)  # once each, not every pass
    assert all("leaves it alone" in r.getMessage() for r in warned)


def test_another_nodes_objects_are_reported_once_per_node(caplog: pytest.LogCaptureFixture) -> None:
    def sandbox(sid: str, node: str) -> RuntimeSandbox:
        return RuntimeSandbox(
            sid, sid, "default", sid, 0, SandboxState.READY, 0.0, labels={NODE_LABEL: node}
        )

    view = NodeView("a")
    with caplog.at_level(logging.DEBUG, logger="kubecore"):
        first = view.own_objects(
            RuntimeSnapshot((sandbox("s1", "a"), sandbox("s2", "b"), sandbox("s3", "b")))
        )
        view.own_objects(
            RuntimeSnapshot((sandbox("s1", "a"), sandbox("s2", "b"), sandbox("s4", "b")))
        )
    assert [s.id for s in first.sandboxes] == ["s1"]
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(info) == 1 and "'b'" in info[0]
    assert len(debug) == 3  # s2, s3, then s4 once it appears


def test_an_object_reported_is_reported_again_only_after_it_was_gone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stray = RuntimeSandbox(
        "s9", "x", "default", "u", 0, SandboxState.READY, 0.0, labels={MANAGED_LABEL: "true"}
    )
    view = NodeView("a")
    with caplog.at_level(logging.WARNING, logger="kubecore"):
        for snapshot in ((stray,), (stray,), (), (stray,)):
            view.own_objects(RuntimeSnapshot(tuple(snapshot)))
    assert len(caplog.records) == 2


def test_logs_and_exec_never_reach_another_nodes_container(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    pod = make_pod("web")
    node.kubelet.set_pods([pod])
    node.converge()
    (own,) = node.running("web", "app")
    found = node.kubelet._reads.find_container("default", "web", "app", running=True)
    assert found.id == own.id
    # an unlabelled copy with the same pod UID, newer than the agent's own: never picked
    config = node.runtime.sandbox_config(own.sandbox_id)
    labels = stray_labels(pod.uid, "web", **{CONTAINER_NAME_LABEL: "app"})
    node.clock.advance(10)
    copy = node.runtime.create_container(
        own.sandbox_id,
        ContainerConfig("app", IMAGE, command=("server",), labels=labels, attempt=9),
        config,
    )
    node.runtime.start_container(copy)
    assert node.kubelet._reads.find_container("default", "web", "app", running=True).id == own.id
