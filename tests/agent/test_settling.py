"""The STATUS column as kubectl prints it, and `kubecore run --once` settling on every pod
Kubernetes would consider settled."""

from __future__ import annotations

from pathlib import Path

import pytest

import kubecore
from kubecore import Pod
from kubecore._status.compute import pod_status_text, pod_verdict
from kubecore.v1 import (
    Container,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    ObjectMeta,
    PodCondition,
    PodSpec,
    PodStatus,
)
from tests.cli.support import run_args, run_cli

RUNNING = ContainerState(running=ContainerStateRunning("2024-01-01T00:00:00Z"))
COMPLETED = ContainerState(terminated=ContainerStateTerminated(0, "Completed"))
ERROR = ContainerState(terminated=ContainerStateTerminated(1, "Error"))
KILLED = ContainerState(terminated=ContainerStateTerminated(137, signal=9))
INITIALIZING = ContainerState(waiting=ContainerStateWaiting("PodInitializing"))


def cs(name: str, state: ContainerState, ready: bool = False) -> ContainerStatus:
    return ContainerStatus(name=name, image="busybox", state=state, ready=ready)


def pod(
    policy: str,
    *statuses: ContainerStatus,
    init: tuple[ContainerStatus, ...] = (),
    ready: bool = False,
    initialized: bool = True,
    phase: str = "Running",
) -> Pod:
    conditions = (
        PodCondition("Initialized", "True" if initialized else "False"),
        PodCondition("Ready", "True" if ready else "False"),
    )
    return Pod(
        ObjectMeta(name="p"),
        PodSpec(
            containers=tuple(Container(name=s.name, image="busybox") for s in statuses),
            init_containers=tuple(Container(name=s.name, image="busybox") for s in init),
            restart_policy=policy,  # type: ignore[arg-type]
        ),
        PodStatus(
            phase=phase,  # type: ignore[arg-type]
            conditions=conditions,
            container_statuses=statuses,
            init_container_statuses=init,
        ),
    )


@pytest.mark.parametrize(
    "the_pod, text, verdict",
    [
        # a finished container beside a running one, under Never: settled, NotReady
        (pod("Never", cs("a", COMPLETED), cs("b", RUNNING, True)), "NotReady", "ok"),
        # kubectl reads the Ready condition, not the phase
        (pod("Never", cs("b", RUNNING, True), cs("a", COMPLETED), ready=True), "Running", "ok"),
        (pod("OnFailure", cs("a", COMPLETED), cs("b", RUNNING, True)), "NotReady", "ok"),
        # the kubelet restarts it: not settled yet
        (pod("Always", cs("a", COMPLETED), cs("b", RUNNING, True)), "NotReady", "pending"),
        (pod("Never", cs("a", ERROR), cs("b", RUNNING, True)), "Error", "failed"),
        (pod("Always", cs("a", RUNNING, True), cs("b", ERROR)), "Error", "pending"),
        (pod("Never", cs("a", KILLED)), "Signal:9", "failed"),
        (
            pod("Always", cs("a", INITIALIZING), init=(cs("i", KILLED),), initialized=False),
            "Init:Signal:9",
            "pending",
        ),
        (
            pod("Always", cs("a", INITIALIZING), init=(cs("i", RUNNING),), initialized=False),
            "Init:0/1",
            "pending",
        ),
        # an init container still running once the pod is initialized (a sidecar)
        (
            pod("Always", cs("a", RUNNING, True), init=(cs("s", RUNNING),), ready=True),
            "Init:0/1",
            "ok",
        ),
    ],
)
def test_status_column_and_verdict(the_pod: Pod, text: str, verdict: str) -> None:
    assert pod_status_text(the_pod) == text
    assert pod_verdict(the_pod)[0] == verdict
    assert kubecore.pod_settled(the_pod) == (verdict != "pending")


@pytest.mark.parametrize(
    "the_pod",
    [
        Pod(ObjectMeta(name="p"), PodSpec(containers=(Container(name="a", image="busybox"),))),
        pod("Always", cs("a", ContainerState(waiting=ContainerStateWaiting("ContainerCreating")))),
        pod("Always", cs("a", RUNNING, ready=False)),  # a readiness probe not yet passed
    ],
    ids=["no-status", "creating", "running-unready"],
)
def test_a_pod_still_starting_has_not_settled(the_pod: Pod) -> None:
    assert not kubecore.pod_settled(the_pod)


def test_a_pod_waiting_on_outside_help_has_settled() -> None:
    waiting = ContainerState(waiting=ContainerStateWaiting("ImagePullBackOff"))
    assert kubecore.pod_settled(pod("Always", cs("a", waiting), phase="Pending"))


NEVER_WITH_A_FINISHED_CONTAINER = """\
apiVersion: v1
kind: Pod
metadata:
  name: mixed
spec:
  restartPolicy: Never
  containers:
  - name: setup
    image: busybox:1.35
    command: ["sh", "-c", "echo configured > /tmp/done"]
  - name: server
    image: busybox:1.35
    command: ["httpd", "-f", "-p", "8080"]
"""


def test_run_once_settles_on_a_never_pod_with_a_finished_container(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    (pods / "mixed.yaml").write_text(NEVER_WITH_A_FINISHED_CONTAINER)
    code, out, err = run_cli(
        *run_args(tmp_path, str(pods), "--runtime", "fake", "--once", "--deadline", "60")
    )
    assert code == 0, out + err
    row = next(line.split() for line in out.splitlines() if line.startswith("mixed"))
    assert row[1:3] == ["1/2", "NotReady"]
