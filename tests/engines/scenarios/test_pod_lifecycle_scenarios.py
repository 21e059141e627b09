"""A pod's life through the agent on every engine (Docker, then the CRI on containerd): a native
sidecar pod end to end (the sidecar before the init container before the app, stopped when the
pod is done), the log tail as termination message, and activeDeadlineSeconds."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable

from kubecore._model.v1 import ContainerStatus, Pod
from kubecore.runtime import NODE_LABEL
from tests.engines.docker.e2e_helpers import AgentFactory, container, make_pod, wait_pod
from tests.engines.engine_support import EngineUnderTest

# Agents of other tests on a shared engine treat objects without a node label, or with their
# node's, as theirs (and kill what they do not want): these tests use a node of their own.
OWN_NODE = {NODE_LABEL: f"sidecars-tests-{uuid.uuid4().hex[:8]}"}  # each process its own


def started_at(status: ContainerStatus) -> datetime.datetime:
    """When the container the status describes started (running or terminated)."""
    state = status.state.running or status.state.terminated
    assert state is not None and state.started_at is not None, status
    return state.started_at


def test_a_sidecar_pod_end_to_end(
    make_agent: AgentFactory,
    engine: EngineUnderTest,
    namespace: str,
) -> None:
    pod = make_pod(
        "job",
        namespace,
        [container("main", engine.image, ["sh", "-c", "sleep 2"])],
        initContainers=[
            container("log", engine.image, restartPolicy="Always"),
            container("setup", engine.image, ["true"]),
        ],
        restartPolicy="Never",
    )
    kubelet = make_agent([pod], node_name=OWN_NODE[NODE_LABEL])

    def initialized(found: Pod) -> bool:
        status = found.status
        return status is not None and any(
            c.type == "Initialized" and c.status == "True" for c in status.conditions
        )

    running = wait_pod(kubelet, namespace, "job", initialized, what="job initialized")
    assert running.status is not None
    log = running.status.init_container_statuses[0]
    assert log.state.running is not None and log.started
    done = wait_pod(
        kubelet,
        namespace,
        "job",
        lambda p: p.status is not None and p.status.phase == "Succeeded",
        what="job succeeded",
    )
    assert done.status is not None
    log, setup = done.status.init_container_statuses
    (main,) = done.status.container_statuses
    assert started_at(log) <= started_at(setup) <= started_at(main)
    wait_pod(
        kubelet,
        namespace,
        "job",
        lambda p: (
            p.status is not None and p.status.init_container_statuses[0].state.running is None
        ),
        what="the sidecar stopped",
    )


def test_the_log_tail_is_the_message_and_the_deadline_fails_the_pod(
    make_agent: AgentFactory,
    engine: EngineUnderTest,
    namespace: str,
) -> None:
    failing = make_pod(
        "failing",
        namespace,
        [
            container(
                "app",
                engine.image,
                ["sh", "-c", "echo starting; echo 'cannot open /data' >&2; exit 3"],
                terminationMessagePolicy="FallbackToLogsOnError",
            )
        ],
        restartPolicy="Never",
    )
    slow = make_pod("slow", namespace, [container("app", engine.image)], activeDeadlineSeconds=3)
    kubelet = make_agent([failing, slow], node_name=OWN_NODE[NODE_LABEL])

    def phase(name: str) -> Callable[[Pod], bool]:
        return lambda p: p.status is not None and p.status.phase == name

    done = wait_pod(kubelet, namespace, "failing", phase("Failed"), what="failing failed")
    assert done.status is not None
    terminated = done.status.container_statuses[0].state.terminated
    assert terminated is not None and terminated.exit_code == 3
    # Both streams of the log (the engine may interleave them either way).
    assert sorted(terminated.message.splitlines()) == ["cannot open /data", "starting"]
    killed = wait_pod(kubelet, namespace, "slow", phase("Failed"), what="slow past its deadline")
    assert killed.status is not None and killed.status.reason == "DeadlineExceeded"
    wait_pod(
        kubelet,
        namespace,
        "slow",
        lambda p: p.status is not None and p.status.container_statuses[0].state.running is None,
        what="slow's container stopped",
    )
