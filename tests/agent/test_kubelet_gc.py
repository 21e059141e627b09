"""Garbage collection: dead containers and sandboxes, unused images."""

from __future__ import annotations

from pathlib import Path

from kubecore._contract.labels import CONTAINER_NAME_LABEL, POD_UID_LABEL
from kubecore._contract.observed import restart_count
from kubecore._contract.values import (
    RuntimeContainer,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    SandboxState,
)
from kubecore._housekeeping.gc import ContainerGCPolicy, plan_container_gc
from kubecore_fake import Behaviour
from tests.agent.support import make_node
from tests.builders import ctr, make_pod

MiB = 1024 * 1024


def dead(
    cid: str, uid: str, name: str, t: float, state: RuntimeState = RuntimeState.EXITED
) -> RuntimeContainer:
    return RuntimeContainer(
        id=cid,
        sandbox_id="s1",
        name=name,
        image="x",
        state=state,
        created_at=t,
        finished_at=t + 1,
        exit_code=None if state is RuntimeState.RUNNING else 1,
        labels={POD_UID_LABEL: uid, CONTAINER_NAME_LABEL: name},
    )


def test_plan_keeps_the_newest_dead_per_container_and_every_running_one() -> None:
    snapshot = RuntimeSnapshot(
        sandboxes=(RuntimeSandbox("s1", "web", "default", "u1", 0, SandboxState.READY, 0),),
        containers=(
            dead("a1", "u1", "app", 1),
            dead("a2", "u1", "app", 2),
            dead("a3", "u1", "app", 3),
            dead("a4", "u1", "app", 4, RuntimeState.RUNNING),
            dead("b1", "u1", "side", 1),
        ),
    )
    plan = plan_container_gc(snapshot, {"u1"}, ContainerGCPolicy(1, 0), now=100)
    assert sorted(plan.containers) == ["a1", "a2"]
    assert plan.sandboxes == ()
    # minimum age: a1 died 98 s ago, a2 97 s ago
    young = plan_container_gc(snapshot, {"u1"}, ContainerGCPolicy(1, 97.5), now=100)
    assert young.containers == ("a1",)
    # a pod no longer desired keeps no dead container
    gone = plan_container_gc(snapshot, set(), ContainerGCPolicy(1, 0), now=100)
    assert sorted(gone.containers) == ["a1", "a2", "a3", "b1"]


def unstarted(cid: str, uid: str, name: str, t: float) -> RuntimeContainer:
    """Created, never started, no error: an interrupted start."""
    return RuntimeContainer(
        id=cid,
        sandbox_id="s1",
        name=name,
        image="x",
        state=RuntimeState.CREATED,
        created_at=t,
        labels={POD_UID_LABEL: uid, CONTAINER_NAME_LABEL: name},
    )


def test_an_interrupted_start_that_a_newer_instance_replaced_goes_and_is_not_counted() -> None:
    # An engine killed between a create and its start leaves the instance `created`; the agent
    # starts a newer one. The half-made one never ran: nothing of it is worth keeping, and it
    # must not take the place of the run that `logs --previous` reads.
    snapshot = RuntimeSnapshot(
        sandboxes=(RuntimeSandbox("s1", "web", "default", "u1", 0, SandboxState.READY, 0),),
        containers=(
            dead("a1", "u1", "app", 1),
            unstarted("a2", "u1", "app", 2),
            dead("a3", "u1", "app", 3, RuntimeState.RUNNING),
            unstarted("b1", "u1", "side", 1),
            dead("b2", "u1", "side", 2),
        ),
    )
    plan = plan_container_gc(snapshot, {"u1"}, ContainerGCPolicy(1, 0), now=100)
    assert sorted(plan.containers) == ["a2", "b1"]


def test_the_newest_instance_is_kept_while_it_may_be_being_started() -> None:
    snapshot = RuntimeSnapshot(
        sandboxes=(RuntimeSandbox("s1", "web", "default", "u1", 0, SandboxState.READY, 0),),
        containers=(
            dead("a1", "u1", "app", 1),
            unstarted("a2", "u1", "app", 2),
            dead("b1", "u1", "side", 1, RuntimeState.RUNNING),
            unstarted("b2", "u1", "side", 2),
        ),
    )
    plan = plan_container_gc(snapshot, {"u1"}, ContainerGCPolicy(0, 0), now=100)
    assert plan.containers == ("a1",)


def test_plan_removes_dead_sandboxes_left_empty() -> None:
    snapshot = RuntimeSnapshot(
        sandboxes=(
            RuntimeSandbox("old", "web", "default", "u1", 0, SandboxState.NOTREADY, 1),
            RuntimeSandbox("new", "web", "default", "u1", 1, SandboxState.READY, 2),
            RuntimeSandbox("gone", "db", "default", "u2", 0, SandboxState.NOTREADY, 1),
            RuntimeSandbox("last", "job", "default", "u3", 0, SandboxState.NOTREADY, 1),
        ),
    )
    plan = plan_container_gc(snapshot, {"u1", "u3"}, ContainerGCPolicy(), now=100)
    # the newest sandbox of a desired pod stays even when dead
    assert sorted(plan.sandboxes) == ["gone", "old"]


def test_container_gc_runs_on_its_interval(tmp_path: Path) -> None:
    node = make_node(tmp_path, container_gc_interval=60, gc_max_dead_per_container=1)
    node.runtime.script(command="crasher", behaviour=Behaviour(exit_code=1, after=1))
    node.kubelet.set_pods([make_pod("web", ctr("app", command=("crasher",)))])
    for _ in range(59):
        node.kubelet.sync()
        node.clock.advance(1)
    assert len(node.all("web", "app")) >= 3
    node.clock.advance(2)
    node.kubelet.sync()
    containers = node.all("web", "app")
    dead_ones = [c for c in containers if c.state is not RuntimeState.RUNNING]
    assert len(dead_ones) <= 2  # one kept, plus one that may have died since the pass
    # the termination-message directories of the collected instances went with them
    pod = node.kubelet.get_pod("default", "web")
    assert pod is not None
    runs = tmp_path.glob(f"**/pods/{pod.uid}/containers/app/*")
    on_node = {str(restart_count(c)) for c in containers}
    assert {run.name for run in runs} <= on_node


def test_image_gc_frees_unused_images_down_to_the_low_threshold(tmp_path: Path) -> None:
    node = make_node(tmp_path, image_gc_interval=300, image_min_age=120)
    node.runtime.set_image_fs_capacity(1000 * MiB)
    for i in range(8):
        node.runtime.add_image(f"old{i}:1", 100 * MiB, pulled=True)
    node.runtime.add_image("busybox:1.36", 100 * MiB, pulled=True)
    node.kubelet.set_pods([make_pod("web", ctr("app", image="busybox:1.36"))])
    node.converge()
    usage = node.runtime.image_fs_usage()
    assert usage.used_bytes == 900 * MiB  # 90 %: above the high threshold
    node.clock.advance(301)
    node.kubelet.sync()
    # first seen now: younger than the minimum age, nothing goes yet
    assert node.runtime.image_fs_usage().used_bytes == 900 * MiB
    node.clock.advance(301)
    node.kubelet.sync()
    usage = node.runtime.image_fs_usage()
    assert usage.used_bytes == 800 * MiB  # freed down to 80 %
    assert node.runtime.image_status("busybox:1.36") is not None  # in use: kept
    assert node.running_names() == [("web", "app")]
