"""``Kubelet.plan``: what a sync would do, with the planner's reasons; it changes nothing, and
the sync that follows does exactly what it said (a property over random spec changes)."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubecore._agent.plan import NodePlan
from kubecore._agent.sync_pass import SyncReport
from kubecore._model.v1 import ExecAction, Pod, Probe
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod

READ_ONLY_CALLS = {"snapshot", "image_status"}


def files_under(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and modification time."""
    seen: dict[str, tuple[int, int]] = {}
    for directory, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = os.path.join(directory, name)
            stat = os.lstat(path)
            seen[path] = (stat.st_size, stat.st_mtime_ns)
    return seen


def steps_of(plan: NodePlan, name: str) -> list[tuple[str, str]]:
    pod = plan.pod("default", name)
    assert pod is not None, f"{name} not in the plan"
    return [(step.action, step.container) for step in pod.steps]


def assert_sync_did_what_plan_said(plan: NodePlan, report: SyncReport) -> None:
    said = {f"{p.namespace}/{p.name}": p.summary for p in plan.pods if p.changes}
    assert report.actions == said
    removed = {p.uid for p in plan.pods if p.removal}
    assert set(report.removed) == removed


def test_plan_of_a_new_pod_creates_pulls_and_starts(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    node.kubelet.set_pods([make_pod("web", ctr("app", image="nginx:1"))])
    plan = node.kubelet.plan()
    assert plan.changes
    assert steps_of(plan, "web") == [("create-sandbox", ""), ("pull", "app"), ("start", "app")]
    assert_sync_did_what_plan_said(plan, node.kubelet.sync())
    assert not node.kubelet.plan().changes
    assert steps_of(node.kubelet.plan(), "web") == [("nothing", "")]


def test_plan_changes_nothing_on_the_runtime_on_disk_or_in_the_agent(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    probe = Probe(exec=ExecAction(("check",)), period_seconds=5)
    pods = [
        make_pod("web", ctr("app", image="nginx:1")),
        make_pod("crash", ctr("app", command=("sh", "-c", "exit 3"))),
        make_pod("probed", ctr("app", readiness_probe=probe)),
        make_pod("gone"),
    ]
    node.kubelet.set_pods(pods)
    node.run_until(lambda: node.status("crash").container_statuses[0].restart_count >= 2)
    web = attrs.evolve(pods[0], spec=attrs.evolve(pods[0].spec, containers=(ctr(image="nginx:2"),)))
    node.kubelet.set_pods([web, *pods[1:3]])
    node.kubelet.set_pods([*pods[1:3], make_pod("new")], source="file")
    calls = len(node.runtime.calls)
    files = files_under(node.root_dir)
    events = node.kubelet.views.recent_events()
    statuses = [p.status for p in node.kubelet.pods()]
    plan = node.kubelet.plan()
    made = node.runtime.calls[calls:]
    assert {op for op, _ in made} <= READ_ONLY_CALLS
    assert [op for op, _ in made].count("snapshot") == 1
    assert files_under(node.root_dir) == files
    assert node.kubelet.views.recent_events() == events
    assert [p.status for p in node.kubelet.pods()] == statuses
    assert plan.changes
    # and the sync after it does what it said
    assert_sync_did_what_plan_said(plan, node.kubelet.sync())


def test_restart_reasons_come_from_the_planner(tmp_path: Path) -> None:
    node = make_node(tmp_path, images=["nginx:1", "nginx:2", "busybox:1.36"])
    pod = make_pod("web", ctr("app", image="nginx:1"), ctr("side", command=("sh", "-c", "exit 4")))
    node.kubelet.set_pods([pod])
    node.kubelet.sync()
    containers = (ctr("app", image="nginx:2"), pod.spec.containers[1])
    changed = attrs.evolve(pod, spec=attrs.evolve(pod.spec, containers=containers))
    node.kubelet.set_pods([changed])
    plan = node.kubelet.plan()
    web = plan.pod("default", "web")
    assert web is not None
    reasons = {(s.action, s.container): s.reason for s in web.steps}
    assert reasons[("restart", "app")] == "the container spec changed: image nginx:1 -> nginx:2"
    assert reasons[("restart", "side")].startswith("exited with code 4 (Error); restart policy")
    assert_sync_did_what_plan_said(plan, node.kubelet.sync())


def test_wait_says_until_when_and_a_removed_pod_names_its_source(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    node.kubelet.set_pods([make_pod("crash", ctr("app", command=("sh", "-c", "exit 3")))])
    node.run_until(lambda: node.status("crash").container_statuses[0].restart_count >= 2)
    node.kubelet.sync()
    plan = node.kubelet.plan()
    (wait,) = plan.pods[0].steps
    assert wait.action == "wait" and wait.reason.startswith("CrashLoopBackOff")
    assert wait.until is not None and wait.until > node.clock.now()
    assert not plan.changes
    node.kubelet.set_pods([])
    plan = node.kubelet.plan()
    assert plan.pods[0].removal
    assert plan.pods[0].steps[0].reason == "removed from its source api"
    assert_sync_did_what_plan_said(plan, node.kubelet.sync())


def test_a_pod_admission_refuses_is_planned_as_refused(tmp_path: Path) -> None:
    node = make_node(tmp_path, max_pods=1)
    node.kubelet.set_pods([make_pod("one"), make_pod("two")])
    plan = node.kubelet.plan()
    two = plan.pod("default", "two")
    assert two is not None
    assert two.steps[0].action == "nothing" and "OutOfpods" in two.steps[0].reason
    # a plan decided nothing: the sync refuses it all the same, with its event
    node.kubelet.sync()
    assert node.status("two").reason == "OutOfpods"


# --- the property: plan then sync does exactly what the plan said ------------------------------

IMAGES = ("busybox:1.36", "busybox:2", "nginx:1")
COMMANDS = (("server",), ("sh", "-c", "exit 0"), ("sh", "-c", "exit 2"))

POLICIES = ("Always", "OnFailure", "Never")
change = st.one_of(
    st.tuples(st.just("image"), st.integers(0, 3), st.sampled_from(IMAGES)),
    st.tuples(st.just("command"), st.integers(0, 3), st.sampled_from(COMMANDS)),
    st.tuples(st.just("policy"), st.integers(0, 3), st.sampled_from(POLICIES)),
    st.tuples(st.just("delete"), st.integers(0, 3), st.just(None)),
    st.tuples(st.just("crash"), st.integers(0, 3), st.just(None)),
    st.tuples(st.just("wait"), st.integers(1, 40), st.just(None)),
)  # fmt: skip


def apply_change(node: Node, pods: dict[str, Pod], step: tuple[str, int, object]) -> None:
    kind, index, value = step
    name = f"p{index}"
    if kind == "wait":
        node.clock.advance(index)
        return
    if kind == "crash":
        running = node.running(name)
        if running:
            node.runtime.crash(running[0].id, 5)
        return
    if kind == "delete":
        pods.pop(name, None)
        return
    pod = pods.get(name) or make_pod(name, ctr("app"))
    container = pod.spec.containers[0]
    if kind == "image":
        container = attrs.evolve(container, image=str(value))
    elif kind == "command":
        container = attrs.evolve(container, command=tuple(value))  # type: ignore[arg-type]
    spec = attrs.evolve(pod.spec, containers=(container,))
    if kind == "policy":
        spec = attrs.evolve(spec, restart_policy=value)
    pods[name] = attrs.evolve(pod, spec=spec)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(changes=st.lists(change, min_size=1, max_size=12))
def test_sync_does_exactly_what_the_plan_said(tmp_path_factory: object, changes: list) -> None:  # type: ignore[type-arg]
    root = tmp_path_factory.mktemp("plan")  # type: ignore[attr-defined]
    node = make_node(root, images=IMAGES, pulled=IMAGES[:1])
    try:
        pods = {f"p{i}": make_pod(f"p{i}", ctr("app")) for i in range(2)}
        node.kubelet.set_pods(pods.values())
        node.kubelet.sync()
        for step in changes:
            apply_change(node, pods, step)
            node.kubelet.set_pods(pods.values())
            plan = node.kubelet.plan()
            assert_sync_did_what_plan_said(plan, node.kubelet.sync())
    finally:
        node.close()
