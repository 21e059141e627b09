"""Lifecycle hooks, graceful termination, volumes and termination messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubecore._housekeeping.timers import POD_DIR_RECLAIM_GRACE
from kubecore._model.v1 import (
    EmptyDirVolumeSource,
    ExecAction,
    HostPathVolumeSource,
    Lifecycle,
    LifecycleHandler,
    Pod,
    Volume,
    VolumeMount,
)
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


def hook(*command: str) -> LifecycleHandler:
    return LifecycleHandler(exec=ExecAction(command))


def stop_timeouts(node: Node, container_id: str) -> list[float]:
    return [
        float(args[1])  # type: ignore[arg-type]
        for op, args in node.runtime.calls
        if op == "stop_container" and args[0] == container_id
    ]


def test_failed_post_start_kills_the_new_container_and_the_sync_goes_on(node: Node) -> None:
    node.runtime.on_exec("post-hook", 1)
    pod = make_pod(
        "web",
        ctr("hooked", lifecycle=Lifecycle(post_start=hook("post-hook"))),
        ctr("plain"),
    )
    node.kubelet.set_pods([pod])
    node.kubelet.sync()
    assert node.running_names() == [("web", "plain")]  # the sync went on to the next container
    events = node.kubelet.views.recent_events(name="web", reason="FailedPostStartHook")
    assert events and events[0].involved_object.field_path == "spec.containers{hooked}"
    (dead,) = node.all("web", "hooked")
    assert node.runtime.signals(dead.id)
    node.runtime.on_exec("post-hook", 0)
    node.run_until(lambda: bool(node.running("web", "hooked")), step=5)


def test_post_start_runs_after_start(node: Node) -> None:
    seen: list[str] = []

    def handler(request: object) -> int:
        seen.append(request.container.state.value)  # type: ignore[attr-defined]
        return 0

    node.runtime.on_exec("post-hook", handler)
    node.kubelet.set_pods(
        [make_pod("web", ctr("app", lifecycle=Lifecycle(post_start=hook("post-hook"))))]
    )
    node.converge()
    assert seen == ["running"]
    assert "FailedPostStartHook" not in node.reasons("web")


def test_pre_stop_then_stop_with_the_remaining_grace_period(node: Node) -> None:
    calls: list[str] = []
    node.runtime.on_exec("pre-hook", lambda request: calls.append("pre-stop") or 0)
    pod = make_pod(
        "web",
        ctr("app", lifecycle=Lifecycle(pre_stop=hook("pre-hook"))),
        termination_grace_period_seconds=20,
    )
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    node.runtime.add_latency("exec_sync", 5)  # the hook takes five seconds
    node.kubelet.set_pods([])
    node.converge()
    assert calls == ["pre-stop"]
    assert stop_timeouts(node, app.id)[0] == pytest.approx(15)


def test_grace_period_is_never_under_two_seconds(node: Node) -> None:
    node.runtime.on_exec("pre-hook", 0)
    pod = make_pod(
        "web",
        ctr("app", lifecycle=Lifecycle(pre_stop=hook("pre-hook"))),
        termination_grace_period_seconds=3,
    )
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    node.runtime.add_latency("exec_sync", 5)
    node.kubelet.set_pods([])
    node.converge()
    assert stop_timeouts(node, app.id)[0] == 2


def test_empty_dir_and_host_path_volumes(tmp_path: Path) -> None:
    node = make_node(tmp_path, allowed_host_paths=(f"{tmp_path}/host-data:ro",))
    host = tmp_path / "host-data"
    host.mkdir()
    pod = make_pod(
        "web",
        ctr(
            "app",
            volume_mounts=(
                VolumeMount("cache", "/cache"),
                VolumeMount("data", "/data", read_only=True),
            ),
        ),
        volumes=(
            Volume("cache", empty_dir=EmptyDirVolumeSource()),
            Volume("data", host_path=HostPathVolumeSource(str(host))),
        ),
    )
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    mounts = {m.container_path: m for m in node.runtime.container_config(app.id).mounts}
    empty_dir = (
        tmp_path / "root" / "pods" / pod.uid / "volumes" / "kubernetes.io~empty-dir" / "cache"
    )
    assert mounts["/cache"].host_path == str(empty_dir) and empty_dir.is_dir()
    assert mounts["/data"].host_path == str(host) and mounts["/data"].read_only
    # termination-message file, per container run
    term = tmp_path / "root" / "pods" / pod.uid / "containers" / "app" / "0" / "termination-log"
    assert mounts["/dev/termination-log"].host_path == str(term) and term.exists()


def test_orphaned_pod_directories_are_torn_down(tmp_path: Path) -> None:
    node = make_node(tmp_path, allowed_host_paths=(f"{tmp_path}/keep-me",))
    host = tmp_path / "keep-me"
    host.mkdir()
    (host / "file").write_text("data")
    pod = make_pod(
        "web",
        ctr("app", volume_mounts=(VolumeMount("cache", "/cache"), VolumeMount("data", "/data"))),
        volumes=(
            Volume("cache", empty_dir=EmptyDirVolumeSource()),
            Volume("data", host_path=HostPathVolumeSource(str(host))),
        ),
    )
    stranger = tmp_path / "root" / "pods" / "uid-from-before"
    stranger.mkdir(parents=True)
    node.kubelet.set_pods([pod, make_pod("db")])
    node.converge()
    pod_dir = tmp_path / "root" / "pods" / pod.uid
    assert pod_dir.is_dir()
    assert not stranger.exists()  # nothing desired nor running: torn down
    node.kubelet.set_pods([make_pod("db")])
    node.converge()
    node.clock.advance(5)
    node.converge()
    assert pod_dir.is_dir()  # within the reclaim grace: a pod made again would find its data
    node.clock.advance(POD_DIR_RECLAIM_GRACE)
    node.converge()
    assert not pod_dir.exists()
    assert (host / "file").read_text() == "data"  # hostPath is never touched


def test_termination_message_is_reported(node: Node, tmp_path: Path) -> None:
    node.kubelet.set_pods([make_pod("job", ctr("app"), restart_policy="Never")])
    node.converge()
    (app,) = node.running("job", "app")
    mounts = {m.container_path: m for m in node.runtime.container_config(app.id).mounts}
    Path(mounts["/dev/termination-log"].host_path).write_text("all done, 42 items")
    node.runtime.exit(app.id, 0)
    node.converge()
    (cs,) = node.status("job").container_statuses
    assert cs.state.terminated is not None
    assert cs.state.terminated.message == "all done, 42 items"


def test_a_source_reporting_during_a_pass_makes_no_running_pod_an_orphan(tmp_path: Path) -> None:
    """A restarted agent: its file source reports between the pass's read of the desired pods
    and its check that every source has reported. Nothing running may be killed for that."""
    node = make_node(tmp_path)
    pods = [make_pod("web"), make_pod("db")]
    node.kubelet.set_pods(pods, source="file")
    node.converge()
    running = {c.id for c in node.running()}
    kubelet = node.restart_kubelet()
    kubelet.register_source("file")
    config = kubelet._rooms.pod_config
    read_before_report = config.pods

    def report_while_read() -> tuple[Pod, ...]:
        view = read_before_report()  # the view taken before the source reports
        config.pods = read_before_report  # type: ignore[method-assign]
        kubelet.set_pods(pods, source="file")  # the source reports now, in another thread
        return view

    config.pods = report_while_read  # type: ignore[method-assign]
    kubelet.sync()
    assert {c.id for c in node.running()} == running
    node.converge()
    assert {c.id for c in node.running()} == running
