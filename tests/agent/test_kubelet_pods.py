"""Pods converge: sandbox first, containers, changes, deletion, adoption, restart policies."""

from __future__ import annotations

import itertools
from pathlib import Path

import attrs
import pytest

from kubecore._contract.errors import ContainerRuntimeError, SandboxUnusable
from kubecore._contract.labels import HASH_ANNOTATION, MANAGED_LABEL, NODE_LABEL, POD_NAME_LABEL
from kubecore._contract.values import RuntimeState, SandboxState
from kubecore._model.v1 import ContainerPort, EnvVar
from kubecore_fake import Behaviour
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


def test_a_new_pod_gets_a_sandbox_and_its_containers(node: Node) -> None:
    pod = make_pod("web", ctr("app"), ctr("sidecar", image="nginx:1.25"))
    node.kubelet.set_pods([pod])
    node.converge()
    assert node.running_names() == [("web", "app"), ("web", "sidecar")]
    sandboxes = node.runtime.list_sandboxes()
    assert len(sandboxes) == 1 and sandboxes[0].state is SandboxState.READY
    app = node.running("web", "app")[0]
    assert app.sandbox_id == sandboxes[0].id
    status = node.status("web")
    assert status.phase == "Running"
    assert status.pod_ip == sandboxes[0].ip
    assert {c.name: c.state.running is not None for c in status.container_statuses} == {
        "app": True,
        "sidecar": True,
    }
    reasons = node.reasons("web")
    for reason in ("Pulling", "Pulled", "Created", "Started"):
        assert reason in reasons


def test_a_converged_node_does_nothing(node: Node) -> None:
    node.kubelet.set_pods([make_pod("web")])
    node.converge()
    before = node.runtime.call_count("*")
    report = node.kubelet.sync()
    assert report.converged
    # the steady state reads the runtime once, and only once
    assert node.runtime.call_count("*") - before == 1
    assert node.runtime.call_count("snapshot") >= 1


def test_sandbox_carries_the_pods_ports_hostname_and_dns(tmp_path: Path) -> None:
    node = make_node(tmp_path, cluster_dns=("10.96.0.10",))
    pod = make_pod(
        "web",
        ctr("app", ports=(ContainerPort(80, name="http", host_port=8080),)),
        namespace="shop",
    )
    node.kubelet.set_pods([pod])
    node.converge()
    (sandbox,) = node.runtime.list_sandboxes()
    config = node.runtime.sandbox_config(sandbox.id)
    assert config.hostname == "web"
    assert [(p.container_port, p.host_port) for p in config.ports] == [(80, 8080)]
    assert config.dns is not None
    assert config.dns.searches[:3] == (
        "shop.svc.cluster.local",
        "svc.cluster.local",
        "cluster.local",
    )
    assert config.dns.servers[:2] == ("10.96.0.10", "192.0.2.53")


def test_env_in_spec_order_and_labels_for_adoption(node: Node) -> None:
    env = (EnvVar("B", "2"), EnvVar("A", "1"))
    node.kubelet.set_pods([make_pod("web", ctr("app", env=env))])
    node.converge()
    (app,) = node.running("web", "app")
    config = node.runtime.container_config(app.id)
    assert [k for k, _ in config.env if k in ("A", "B")] == ["B", "A"]
    assert app.labels[MANAGED_LABEL]
    assert app.annotations.get(HASH_ANNOTATION) or app.labels.get(HASH_ANNOTATION)


def test_changed_spec_recreates_only_that_container(node: Node) -> None:
    pod = make_pod("web", ctr("app"), ctr("side"))
    node.kubelet.set_pods([pod])
    node.converge()
    (old_app,) = node.running("web", "app")
    (side,) = node.running("web", "side")
    changed = attrs.evolve(
        pod,
        spec=attrs.evolve(pod.spec, containers=(ctr("app", image="busybox:1.37"), ctr("side"))),
    )
    node.kubelet.set_pods([changed])
    node.converge()
    (new_app,) = node.running("web", "app")
    assert new_app.id != old_app.id and new_app.image.endswith("busybox:1.37")
    assert node.running("web", "side")[0].id == side.id
    assert "Killing" in node.reasons("web")


def test_dead_sandbox_restarts_the_whole_pod(node: Node) -> None:
    node.kubelet.set_pods([make_pod("web", ctr("app"))])
    node.converge()
    (old,) = node.running("web", "app")
    (sandbox,) = node.runtime.list_sandboxes()
    node.runtime.stop_sandbox(sandbox.id)
    node.converge(step=30)
    (new,) = node.running("web", "app")
    assert new.id != old.id
    ready = [s for s in node.runtime.list_sandboxes() if s.state is SandboxState.READY]
    assert len(ready) == 1 and ready[0].id != sandbox.id
    assert new.sandbox_id == ready[0].id


def test_a_sandbox_that_cannot_be_joined_is_re_created(node: Node) -> None:
    """The engine lists the sandbox as running, but a container cannot join it (Docker after
    the engine was killed: "can't join IPC of container ...: non-shareable IPC")."""
    node.runtime.fail_next("start_container", 1, SandboxUnusable("can't join IPC of container"))
    node.kubelet.set_pods([make_pod("web", ctr("app"))])
    report = node.kubelet.sync()
    assert "default/web" in report.errors
    (first,) = node.runtime.list_sandboxes()
    assert first.state is SandboxState.NOTREADY
    node.converge(step=30)
    (app,) = node.running("web", "app")
    assert app.sandbox_id != first.id
    assert "SandboxChanged" in node.reasons("web")


@pytest.mark.parametrize(
    ("policy", "code", "restarted", "phase"),
    [
        ("Always", 0, True, "Running"),
        ("Always", 1, True, "Running"),
        ("OnFailure", 0, False, "Succeeded"),
        ("OnFailure", 1, True, "Running"),
        ("Never", 0, False, "Succeeded"),
        ("Never", 1, False, "Failed"),
    ],
)
def test_restart_policy(node: Node, policy: str, code: int, restarted: bool, phase: str) -> None:
    node.kubelet.set_pods([make_pod("job", ctr("app"), restart_policy=policy)])
    node.converge()
    (first,) = node.running("job", "app")
    node.runtime.exit(first.id, code)
    node.converge(step=15)
    running = node.running("job", "app")
    assert bool(running) is restarted
    status = node.status("job")
    assert status.phase == phase
    (cs,) = status.container_statuses
    if restarted:
        assert cs.restart_count == 1
        assert cs.last_state.terminated is not None
        assert cs.last_state.terminated.exit_code == code
    else:
        assert cs.state.terminated is not None and cs.state.terminated.exit_code == code


def test_init_containers_run_in_order_before_the_app(node: Node) -> None:
    node.runtime.script(command="init-one", behaviour=Behaviour(exit_code=0, after=1))
    node.runtime.script(command="init-two", behaviour=Behaviour(exit_code=0, after=1))
    pod = make_pod(
        "web",
        ctr("app"),
        init_containers=(ctr("one", command=("init-one",)), ctr("two", command=("init-two",))),
    )
    node.kubelet.set_pods([pod])
    node.kubelet.sync()
    assert [c.name for c in node.all("web")] == ["one"]
    node.run_until(lambda: bool(node.running("web", "app")))
    node.converge()
    names = [c.name for c in node.all("web")]
    assert names == ["one", "two", "app"]
    assert node.running_names() == [("web", "app")]
    status = node.status("web")
    assert status.phase == "Running"
    assert {c.type: c.status for c in status.conditions}["Initialized"] == "True"


def test_failed_init_container_under_never_fails_the_pod(node: Node) -> None:
    node.runtime.script(command="init-bad", behaviour=Behaviour(exit_code=3, after=1))
    pod = make_pod(
        "web", ctr("app"), init_containers=(ctr("bad", command=("init-bad",)),),
        restart_policy="Never",
    )  # fmt: skip
    node.kubelet.set_pods([pod])
    node.run_until(lambda: node.status("web").phase == "Failed")
    assert node.running("web") == []


def test_failed_init_container_is_retried_under_always(node: Node) -> None:
    node.runtime.script(command="init-bad", behaviour=Behaviour(exit_code=3, after=1))
    pod = make_pod("web", ctr("app"), init_containers=(ctr("bad", command=("init-bad",)),))
    node.kubelet.set_pods([pod])
    node.kubelet.sync_until_converged(max_syncs=40, step=5)
    assert len(node.all("web", "bad")) >= 2  # retried (GC keeps only the newest dead ones)
    assert node.running("web", "app") == []
    assert node.status("web").phase == "Pending"


def test_removed_pod_is_killed_once_sources_are_ready(node: Node) -> None:
    node.kubelet.register_source("http")
    node.kubelet.set_pods([make_pod("web"), make_pod("db")], source="file")
    node.converge()
    node.kubelet.set_pods([make_pod("db")], source="file")
    node.kubelet.sync()
    # the http source has never reported: nothing is deleted yet
    assert node.running_names() == [("db", "app"), ("web", "app")]
    node.kubelet.set_pods([], source="http")
    node.converge()
    assert node.running_names() == [("db", "app")]
    assert node.all("web") == []  # killed, then removed
    assert all(s.name == "db" for s in node.runtime.list_sandboxes())
    assert "Killing" in node.reasons("web")


def test_unmanaged_containers_are_never_touched(node: Node) -> None:
    other = node.runtime.add_unmanaged_container("someone-else", labels={POD_NAME_LABEL: "web"})
    node.kubelet.set_pods([make_pod("web")])
    node.converge()
    node.kubelet.set_pods([])
    node.converge()
    assert node.runtime.unmanaged_calls == []
    assert other not in {c.id for c in node.all()}
    assert node.all() == []


def test_duplicates_are_reduced_to_one(node: Node) -> None:
    pod = make_pod("web")
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    # a second copy of the same container (as after a crash between create and record)
    config = node.runtime.container_config(app.id)
    sandbox_config = node.runtime.sandbox_config(app.sandbox_id)
    twin = node.runtime.create_container(
        app.sandbox_id, attrs.evolve(config, attempt=1), sandbox_config
    )
    node.runtime.start_container(twin)
    assert len(node.running("web", "app")) == 2
    node.converge()
    assert len(node.running("web", "app")) == 1


def test_a_restarted_agent_adopts_what_runs(node: Node) -> None:
    pods = [make_pod("web", ctr("app"), ctr("side")), make_pod("db")]
    node.kubelet.set_pods(pods)
    node.converge()
    node.runtime.crash(node.running("db", "app")[0].id)
    node.converge(step=15)
    before = {c.id for c in node.running()}
    restarts = node.status("db").container_statuses[0].restart_count
    assert restarts == 1
    calls = node.runtime.call_count("*")
    kubelet = node.restart_kubelet()
    kubelet.set_pods(pods)
    node.converge()
    assert {c.id for c in node.running()} == before
    mutating = {"run_sandbox", "create_container", "start_container", "stop_container",
                "remove_container", "stop_sandbox", "remove_sandbox"}  # fmt: skip
    assert [op for op, _ in node.runtime.calls[calls:] if op in mutating] == []
    assert node.status("db").container_statuses[0].restart_count == 1
    assert node.status("web").phase == "Running"


def test_runtime_errors_are_retried_at_the_next_sync(node: Node) -> None:
    node.runtime.fail_next("create_container", 2)
    node.kubelet.set_pods([make_pod("web")])
    report = node.kubelet.sync()
    assert "default/web" in report.errors
    node.converge()
    assert node.running_names() == [("web", "app")]
    assert "Failed" in node.reasons("web")


def test_a_failing_snapshot_does_not_crash_the_agent(node: Node) -> None:
    node.runtime.fail_next("snapshot", 1)
    node.kubelet.set_pods([make_pod("web")])
    report = node.kubelet.sync()
    assert "runtime" in report.errors
    node.converge()
    assert node.running_names() == [("web", "app")]


def test_one_bad_pod_never_stops_the_others(node: Node) -> None:
    node.runtime.fail_next("pull", 1, ContainerRuntimeError("registry down"))
    bad = make_pod("bad", ctr("app", image="nowhere/bad:1"))
    node.kubelet.set_pods([bad, make_pod("good", ctr("app", image="busybox:1.36"))])
    node.kubelet.sync()
    assert ("good", "app") in node.running_names()


def test_privileged_is_refused_unless_allowed(tmp_path: Path) -> None:
    from kubecore._model.v1 import SecurityContext

    node = make_node(tmp_path)
    privileged = ctr("app", security_context=SecurityContext(privileged=True))
    node.kubelet.set_pods([make_pod("root", privileged), make_pod("web")])
    node.kubelet.sync_until_converged(max_syncs=5)
    assert node.running_names() == [("web", "app")]
    refused = node.kubelet.views.recent_events(name="root", reason="PrivilegedNotAllowed")
    assert refused and "privileged" in refused[0].message
    assert len(refused) == 1  # not repeated at every sync
    root = node.kubelet.get_pod("default", "root")
    assert root is not None and root.status is not None
    assert (root.status.phase, root.status.reason) == ("Failed", "PrivilegedNotAllowed")


def test_privileged_runs_when_allowed(tmp_path: Path) -> None:
    from kubecore._model.v1 import SecurityContext

    node = make_node(tmp_path, allow_privileged=True)
    privileged = ctr("app", security_context=SecurityContext(privileged=True))
    node.kubelet.set_pods([make_pod("root", privileged)])
    node.converge()
    (app,) = node.running("root", "app")
    assert node.runtime.container_config(app.id).privileged


def test_pods_lists_status_and_get_pod(node: Node) -> None:
    node.kubelet.set_pods([make_pod("web"), make_pod("db")])
    node.converge()
    assert [p.metadata.name for p in node.kubelet.pods()] == ["web", "db"]
    assert all(p.status is not None and p.status.phase == "Running" for p in node.kubelet.pods())
    assert node.kubelet.get_pod("default", "nope") is None


def test_containers_that_exit_keep_running_state_out_of_running(node: Node) -> None:
    node.kubelet.set_pods([make_pod("web")])
    node.converge()
    (app,) = node.running("web", "app")
    assert app.state is RuntimeState.RUNNING


def test_sync_until_converged_waits_for_init_containers_to_finish(node: Node) -> None:
    init = ctr("setup", command=("sleep", "30"))
    node.kubelet.set_pods([make_pod("web", ctr("app"), init_containers=(init,))])
    assert node.kubelet.sync_until_converged(max_syncs=100, step=1.0)
    assert [name for _, name in node.running_names()] == ["app"]
    assert node.status("web").phase == "Running"
    assert node.clock.monotonic() >= 30


def test_sync_until_converged_reports_a_pod_that_cannot_settle(node: Node) -> None:
    init = ctr("setup", command=("sleep", "30"))
    node.kubelet.set_pods([make_pod("web", ctr("app"), init_containers=(init,))])
    assert not node.kubelet.sync_until_converged(max_syncs=5, step=1.0)


def test_crash_backoff_delays_follow_the_configured_initial_delay_and_cap(tmp_path: Path) -> None:
    node = make_node(tmp_path, backoff_initial=1.0, backoff_max=4.0)
    node.kubelet.set_pods([make_pod("web", ctr("app", command=("sh", "-c", "exit 1")))])
    starts: list[float] = []
    for _ in range(40):
        before = node.runtime.call_count("start_container")
        node.kubelet.sync()
        if node.runtime.call_count("start_container") > before:
            starts.append(node.clock.monotonic())
        node.clock.advance(0.5)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps[1:5] == [1.0, 2.0, 4.0, 4.0]


def test_two_nodes_on_one_runtime_leave_each_other_alone(node: Node) -> None:
    from tests.agent.support import new_kubelet

    other = new_kubelet(node.runtime, node.clock, node.checker, node.tmp / "other", node_name="b")
    node.kubelet.set_pods([make_pod("a-web")])
    other.set_pods([make_pod("b-web")])
    for _ in range(5):
        node.kubelet.sync()
        other.sync()
        node.clock.advance(1)
    assert node.running_names() == [("a-web", "app"), ("b-web", "app")]
    assert {p.metadata.name for p in other.pods()} == {"b-web"}

    other.set_pods([])  # b's pod goes; a's keeps running
    for _ in range(5):
        node.kubelet.sync()
        other.sync()
        node.clock.advance(1)
    assert node.running_names() == [("a-web", "app")]


def test_objects_without_a_node_label_are_nobodys(tmp_path: Path) -> None:
    unlabelled = make_node(tmp_path, node_name="")  # an agent that labels no node
    unlabelled.kubelet.set_pods([make_pod("web")])
    unlabelled.converge()
    (first,) = unlabelled.running("web", "app")
    assert NODE_LABEL not in first.labels
    labelled = unlabelled.restart_kubelet(node_name="kubecore-node")
    labelled.set_pods([])
    for _ in range(5):
        labelled.sync()
        unlabelled.clock.advance(1)
    assert [c.id for c in unlabelled.running("web", "app")] == [first.id]  # left alone
