"""Ephemeral containers (``kubectl debug``) on the fake runtime, in virtual time: started once when
they appear in the spec, in the target's process namespace, never restarted, never restarting
another container, stopped with the pod, reported under ``ephemeralContainerStatuses``."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from kubecore._contract.labels import HASH_ANNOTATION, is_ephemeral
from kubecore._contract.values import NamespaceMode
from kubecore._model.v1 import ContainerStatus, EphemeralContainer, Pod
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


def debugger(name: str = "debugger", target: str = "app", **kw: object) -> EphemeralContainer:
    kw.setdefault("command", ("debug-shell",))
    kw.setdefault("image", "busybox:1.36")
    return EphemeralContainer(
        name=name,
        target_container_name=target,
        **kw,  # type: ignore[arg-type]
    )


def with_ephemeral(pod: Pod, *containers: EphemeralContainer) -> Pod:
    spec = attrs.evolve(pod.spec, ephemeral_containers=pod.spec.ephemeral_containers + containers)
    return attrs.evolve(pod, spec=spec)


def ephemeral_status(node: Node, name: str = "debugger") -> ContainerStatus:
    return next(s for s in node.status().ephemeral_container_statuses if s.name == name)


def running_pod(node: Node, **spec: object) -> Pod:
    pod = make_pod("web", ctr("app", command=("app-server",)), ctr("side"), **spec)
    node.kubelet.set_pods([pod])
    node.converge()
    assert node.status().phase == "Running"
    return pod


def test_an_ephemeral_container_starts_in_its_targets_pid_namespace(node: Node) -> None:
    pod = running_pod(node)
    before = {c.name: (c.id, c.annotations[HASH_ANNOTATION]) for c in node.running("web")}
    node.kubelet.set_pods([with_ephemeral(pod, debugger())])
    node.converge()

    (dbg,) = node.running("web", "debugger")
    assert is_ephemeral(dbg.annotations)
    app = node.running("web", "app")[0]
    options = node.runtime.container_config(dbg.id).namespace_options
    assert options is not None and options.pid is NamespaceMode.TARGET
    assert options.target_id == app.id
    seen = node.runtime.exec_sync(dbg.id, ["ps"], 5).stdout.decode()
    assert "app-server" in seen and "debug-shell" in seen, seen
    # No other container was touched: same instances, same spec hashes.
    after = {c.name: (c.id, c.annotations[HASH_ANNOTATION]) for c in node.running("web")}
    assert {k: v for k, v in after.items() if k != "debugger"} == before
    status = node.status()
    assert [s.restart_count for s in status.container_statuses] == [0, 0]
    eph = ephemeral_status(node)
    assert eph.state.running is not None and eph.restart_count == 0 and not eph.ready
    assert eph.container_id.endswith(dbg.id)


def test_without_a_target_it_has_the_pods_namespaces(node: Node) -> None:
    pod = running_pod(node)
    node.kubelet.set_pods([with_ephemeral(pod, debugger(target=""))])
    node.converge()
    (dbg,) = node.running("web", "debugger")
    assert node.runtime.container_config(dbg.id).namespace_options is None
    seen = node.runtime.exec_sync(dbg.id, ["ps"], 5).stdout.decode()
    assert "app-server" not in seen  # the pod does not share its process namespace


@pytest.mark.parametrize("policy", ["Always", "OnFailure", "Never"])
def test_an_exited_ephemeral_container_is_never_restarted(node: Node, policy: str) -> None:
    pod = running_pod(node, restart_policy=policy)
    node.kubelet.set_pods([with_ephemeral(pod, debugger())])
    node.converge()
    (dbg,) = node.running("web", "debugger")
    node.runtime.exit(dbg.id, 1)
    for _ in range(10):
        node.kubelet.sync()
        node.clock.advance(5)
    assert len(node.all("web", "debugger")) == 1
    eph = ephemeral_status(node)
    assert eph.state.terminated is not None and eph.state.terminated.exit_code == 1
    assert eph.restart_count == 0
    assert node.status().phase == "Running"
    assert {c.name for c in node.running("web")} == {"app", "side"}


def test_a_second_one_starts_and_the_first_is_left_alone(node: Node) -> None:
    pod = running_pod(node)
    first = with_ephemeral(pod, debugger("one"))
    node.kubelet.set_pods([first])
    node.converge()
    (one,) = node.running("web", "one")
    node.kubelet.set_pods([with_ephemeral(first, debugger("two", target="side"))])
    node.converge()
    assert [c.id for c in node.running("web", "one")] == [one.id]
    assert len(node.running("web", "two")) == 1
    assert [s.name for s in node.status().ephemeral_container_statuses] == ["one", "two"]


def test_it_waits_while_its_target_does_not_run(node: Node) -> None:
    pod = running_pod(node, restart_policy="Never")
    (app,) = node.running("web", "app")
    node.runtime.exit(app.id, 0)
    node.kubelet.sync()
    node.kubelet.set_pods([with_ephemeral(pod, debugger())])
    node.kubelet.sync()
    assert node.all("web", "debugger") == []
    waiting = ephemeral_status(node).state.waiting
    assert waiting is not None and waiting.reason == "CreateContainerConfigError"
    assert "unable to find target container app" in waiting.message


def test_it_is_stopped_with_the_pod(node: Node) -> None:
    pod = running_pod(node)
    node.kubelet.set_pods([with_ephemeral(pod, debugger())])
    node.converge()
    assert node.running("web", "debugger")
    node.kubelet.set_pods([])
    node.converge()
    assert node.running("web") == []


def test_its_one_run_survives_container_gc_and_an_agent_restart(tmp_path: Path) -> None:
    node = make_node(tmp_path, container_gc_interval=5, gc_max_dead_per_container=0, gc_min_age=0)
    pod = running_pod(node)
    node.kubelet.set_pods([with_ephemeral(pod, debugger())])
    node.converge()
    (dbg,) = node.running("web", "debugger")
    node.runtime.exit(dbg.id, 0)
    for _ in range(12):  # past two GC passes
        node.kubelet.sync()
        node.clock.advance(1)
    assert [c.id for c in node.all("web", "debugger")] == [dbg.id]
    apps = {c.name: c.id for c in node.running("web")}
    node.restart_kubelet(container_gc_interval=5, gc_max_dead_per_container=0, gc_min_age=0)
    node.kubelet.set_pods([with_ephemeral(pod, debugger())])
    node.converge()
    assert [c.id for c in node.all("web", "debugger")] == [dbg.id]
    assert {c.name: c.id for c in node.running("web")} == apps
    assert ephemeral_status(node).state.terminated is not None


def test_its_pull_back_off_event_names_its_image(tmp_path: Path) -> None:
    node = make_node(tmp_path, images=["busybox:1.36"])
    pod = running_pod(node)
    node.kubelet.set_pods([with_ephemeral(pod, debugger(image="nowhere/debug:1"))])
    node.run_until(
        lambda: (
            ephemeral_status(node).state.waiting is not None
            and ephemeral_status(node).state.waiting.reason == "ImagePullBackOff"
        )
    )
    messages = [
        e.message for e in node.kubelet.views.recent_events(name="web") if e.reason == "BackOff"
    ]
    assert 'Back-off pulling image "nowhere/debug:1"' in messages, messages
