"""Resources and images through the agent on every engine (Docker, then the CRI on containerd):
limits seen in the container's own cgroup (cgroup v1 or v2), pod-level limits capping the
containers without their own, an OOM kill reported as such, and the image pull policies."""

from __future__ import annotations

from kubecore._agent.kubelet import Kubelet
from kubecore._model.v1 import Pod
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    exec_until,
    make_pod,
    status_of,
    wait_pod,
)
from tests.engines.docker.helpers import OOM_HOG
from tests.engines.engine_support import EngineUnderTest

CGROUP = (
    "m=/sys/fs/cgroup/memory.max; [ -e $m ] || m=/sys/fs/cgroup/memory/memory.limit_in_bytes;"
    " if [ -e /sys/fs/cgroup/cpu.max ]; then q=$(cut -d' ' -f1 /sys/fs/cgroup/cpu.max);"
    " else q=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us); fi; echo $(cat $m) $q"
)
"""Prints the container's memory limit (bytes) and CPU quota (us a 100 ms period; ``max`` or
-1 without one), from cgroup v2 or v1."""


def limits_seen(kubelet: Kubelet, namespace: str, pod: str, name: str) -> tuple[int, int]:
    result = exec_until(kubelet, namespace, pod, name, ["sh", "-c", CGROUP])
    assert result.exit_code == 0, result
    memory, quota = result.stdout.decode().split()
    return int(memory), -1 if quota == "max" else int(quota)


def test_limits_are_seen_in_the_containers_cgroup(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    resources = {"limits": {"memory": "48Mi", "cpu": "250m"}, "requests": {"cpu": "100m"}}
    pod = make_pod("limited", namespace, [container("app", engine.image, resources=resources)])
    kubelet = make_agent([pod])
    wait_pod(kubelet, namespace, "limited", all_running)
    assert limits_seen(kubelet, namespace, "limited", "app") == (48 << 20, 25_000)


def test_pod_level_limits_cap_containers_without_their_own(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    pod = make_pod(
        "capped",
        namespace,
        [
            container("free", engine.image),
            container("own", engine.image, resources={"limits": {"memory": "32Mi"}}),
        ],
        resources={"limits": {"memory": "64Mi", "cpu": "500m"}},
    )
    kubelet = make_agent([pod])
    wait_pod(kubelet, namespace, "capped", all_running, what="capped running")
    assert limits_seen(kubelet, namespace, "capped", "free") == (64 << 20, 50_000)
    assert limits_seen(kubelet, namespace, "capped", "own") == (32 << 20, 50_000)
    assert sorted(c.name for c in engine.containers(namespace)) == ["free", "own"]


def test_a_container_over_its_memory_limit_is_oom_killed(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    pod = make_pod(
        "hog",
        namespace,
        [container("app", engine.image, list(OOM_HOG), resources={"limits": {"memory": "16Mi"}})],
        restartPolicy="Never",
    )
    kubelet = make_agent([pod])

    def ended(found: Pod) -> bool:
        status = status_of(found, "app")
        return status is not None and status.state.terminated is not None

    done = wait_pod(kubelet, namespace, "hog", ended, timeout=30, what="the hog ended")
    status = status_of(done, "app")
    assert status is not None and status.state.terminated is not None
    assert (status.state.terminated.reason, status.state.terminated.exit_code) == ("OOMKilled", 137)
    assert done.status is not None and done.status.phase == "Failed"


def test_the_image_pull_policies(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    """Never with an image the node lacks waits in ErrImageNeverPull and pulls nothing;
    IfNotPresent with one it has starts without pulling."""
    absent = f"kubecore-e2e/absent-{namespace}:never"
    pods = [
        make_pod("never", namespace, [container("app", absent, imagePullPolicy="Never")]),
        make_pod(
            "present", namespace, [container("app", engine.image, imagePullPolicy="IfNotPresent")]
        ),
    ]
    kubelet = make_agent(pods)
    wait_pod(kubelet, namespace, "present", all_running)

    def never_pulled(found: Pod) -> bool:
        status = status_of(found, "app")
        waiting = status.state.waiting if status is not None else None
        return waiting is not None and waiting.reason == "ErrImageNeverPull"

    refused = wait_pod(kubelet, namespace, "never", never_pulled, what="ErrImageNeverPull")
    assert refused.status is not None and refused.status.phase == "Pending"
    for name in ("never", "present"):
        events = kubelet.views.recent_events(namespace=namespace, name=name)
        assert not [e for e in events if e.reason == "Pulling"], events
    assert not engine.has_image(absent)
    assert engine.containers(namespace, "app") and all(
        c.pod == "present" for c in engine.containers(namespace, "app")
    )
