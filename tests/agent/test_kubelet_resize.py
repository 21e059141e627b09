"""``resizePolicy``: a change of a running container's resources, in place where every changed
resource allows it and the runtime can, else a restart."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from kubecore._contract.observed import ObservedPod
from kubecore._model.v1 import Container, ContainerResizePolicy, Pod, ResourceRequirements
from kubecore._planner.actions import KillReason, PodHistory
from kubecore._planner.plan import compute_pod_actions
from tests.agent.support import Node, make_node
from tests.builders import NOW, T0, ctr, make_pod, observed_ctr, sandbox

CPU_IN_PLACE = ContainerResizePolicy("cpu", "NotRequired")
MEMORY_RESTARTS = ContainerResizePolicy("memory", "RestartContainer")


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


def resized_pod(cpu: str, memory: str, *policies: ContainerResizePolicy) -> Pod:
    resources = ResourceRequirements(limits={"cpu": cpu, "memory": memory})
    return make_pod("web", ctr("app", resources=resources, resize_policy=policies))


def test_a_cpu_change_is_applied_in_place(node: Node) -> None:
    node.kubelet.set_pods([resized_pod("500m", "64Mi", CPU_IN_PLACE, MEMORY_RESTARTS)])
    node.converge()
    (app,) = node.running("web", "app")
    assert node.runtime.container_config(app.id).cpu_quota == 50_000
    node.kubelet.set_pods([resized_pod("250m", "64Mi", CPU_IN_PLACE, MEMORY_RESTARTS)])
    node.converge()
    assert [c.id for c in node.all("web", "app")] == [app.id]  # not restarted
    assert node.runtime.container_config(app.id).cpu_quota == 25_000
    node.converge()
    assert node.runtime.call_count("update_container_resources") == 1  # then steady


def test_a_memory_change_restarts_as_its_policy_says(node: Node) -> None:
    node.kubelet.set_pods([resized_pod("500m", "64Mi", CPU_IN_PLACE, MEMORY_RESTARTS)])
    node.converge()
    (first,) = node.running("web", "app")
    node.kubelet.set_pods([resized_pod("250m", "128Mi", CPU_IN_PLACE, MEMORY_RESTARTS)])
    node.converge()
    (second,) = node.running("web", "app")
    assert second.id != first.id
    assert node.runtime.container_config(second.id).memory_limit == 128 * 1024 * 1024
    assert node.runtime.call_count("update_container_resources") == 0


def test_without_a_resize_policy_a_resources_change_restarts(node: Node) -> None:
    node.kubelet.set_pods([resized_pod("500m", "64Mi")])
    node.converge()
    (first,) = node.running("web", "app")
    node.kubelet.set_pods([resized_pod("250m", "64Mi")])
    node.converge()
    (second,) = node.running("web", "app")
    assert second.id != first.id


def test_a_runtime_that_cannot_resize_restarts_instead() -> None:
    before = resized_pod("500m", "64Mi", CPU_IN_PLACE)
    after = resized_pod("250m", "64Mi", CPU_IN_PLACE)
    running = observed_ctr("app", before, created=T0 + 1)
    observed = ObservedPod(sandboxes=(sandbox(after),), containers=(running,))
    in_place = compute_pod_actions(after, observed, PodHistory(resize_in_place=True), NOW)
    assert [r.name for r in in_place.containers_to_resize] == ["app"]
    assert not in_place.containers_to_kill
    restart = compute_pod_actions(after, observed, PodHistory(), NOW)
    assert [k.reason for k in restart.containers_to_kill] == [KillReason.RESOURCES_CHANGED]
    assert [s.index for s in restart.containers_to_start] == [0]
    done = PodHistory(resize_in_place=True, resized={running.id: _record(after)})
    assert compute_pod_actions(after, observed, done, NOW).is_noop


def _record(pod: Pod) -> str:
    from kubecore._model.spec_hash import resources_record

    return resources_record(pod.spec.containers[0])


def test_adding_a_resize_policy_keeps_other_hashes() -> None:
    from kubecore._model.spec_hash import container_hash

    plain = Container("app", "busybox:1.35")
    assert container_hash(plain) == container_hash(attrs.evolve(plain, resize_policy=()))
    sized = attrs.evolve(plain, resize_policy=(CPU_IN_PLACE,))
    bigger = attrs.evolve(sized, resources=ResourceRequirements(limits={"cpu": "2"}))
    assert container_hash(sized) == container_hash(bigger)


def test_resize_policy_loads_and_is_validated() -> None:
    from kubecore._contract.errors import ValidationError
    from kubecore._manifest import load_pods_from_dict

    def load(policies: list[dict[str, str]]) -> Pod:
        data = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web"},
            "spec": {
                "containers": [{"name": "app", "image": "busybox:1.35", "resizePolicy": policies}]
            },
        }
        (pod,) = load_pods_from_dict(data, source_name="web")
        return pod

    pod = load([{"resourceName": "cpu", "restartPolicy": "NotRequired"}])
    assert pod.spec.containers[0].resize_policy == (CPU_IN_PLACE,)
    with pytest.raises(ValidationError) as info:
        load(
            [
                {"resourceName": "gpu", "restartPolicy": "NotRequired"},
                {"resourceName": "cpu", "restartPolicy": "Sometimes"},
            ]
        )
    paths = [p.path for p in info.value.problems]
    assert paths == [
        "spec.containers[0].resizePolicy[0].resourceName",
        "spec.containers[0].resizePolicy[1].restartPolicy",
    ]


def test_a_resize_is_forgotten_with_its_container(node: Node) -> None:
    node.kubelet.set_pods([resized_pod("500m", "64Mi", CPU_IN_PLACE)])
    node.converge()
    node.kubelet.set_pods([resized_pod("250m", "64Mi", CPU_IN_PLACE)])
    node.converge()
    state = node.kubelet._rooms.desired.states["uid-default-web"]
    (app,) = node.running("web", "app")
    assert list(state.record.resized) == [app.id]
    node.runtime.crash(app.id)
    node.run_until(lambda: len(node.running("web", "app")) == 1, step=5)
    node.runtime.remove_container(app.id)  # as the container GC would
    node.kubelet.sync()
    assert app.id not in state.record.resized  # the record after the sync, as the worker keeps it


def test_a_failed_resize_is_retried_in_place(node: Node) -> None:
    node.kubelet.set_pods([resized_pod("500m", "64Mi", CPU_IN_PLACE)])
    node.converge()
    (app,) = node.running("web", "app")
    node.runtime.fail_next("update_container_resources")
    node.kubelet.set_pods([resized_pod("250m", "64Mi", CPU_IN_PLACE)])
    node.kubelet.sync()
    assert node.runtime.call_count("update_container_resources") == 1
    assert node.runtime.container_config(app.id).cpu_quota == 50_000  # the failed one left it
    node.converge()
    assert [c.id for c in node.all("web", "app")] == [app.id]  # retried, not restarted
    assert node.runtime.container_config(app.id).cpu_quota == 25_000
    assert node.runtime.call_count("update_container_resources") == 2
    m, labels = node.kubelet.metrics, {"operation_type": "update_container"}
    assert m.value("kubelet_runtime_operations_total", labels) == 2
    assert m.value("kubelet_runtime_operations_errors_total", labels) == 1
