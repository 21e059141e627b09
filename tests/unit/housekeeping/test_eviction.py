"""The eviction manager's two pure decisions over one summary (``kubecore._housekeeping.eviction``):
the Node's pressure conditions from the node's signals against the hard thresholds, and the pods
to evict for their local storage, with the kubelet's reason, message and eviction signal."""

from __future__ import annotations

import json
from decimal import Decimal

from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._housekeeping.eviction import (
    CONTAINER_SIGNAL,
    EMPTY_DIR_SIGNAL,
    EVICTED,
    POD_SIGNAL,
    Filesystem,
    HostFigures,
    PodUsage,
    Summary,
    eviction_thresholds,
    local_storage_eviction,
    pods_to_evict,
    pressure_conditions,
    watches_local_storage,
)
from kubecore._model.v1 import Pod
from kubecore.manifest import load_pods_from_string

GiB = 1 << 30
MiB = 1 << 20
CALM = HostFigures(
    memory_available=8 * GiB,
    memory_capacity=16 * GiB,
    nodefs=Filesystem(50 * GiB, 100 * GiB, 900, 1000),
    pid_max=4_194_304,
    processes=300,
)
PRESSED = HostFigures(
    memory_available=MiB,
    memory_capacity=16 * GiB,
    nodefs=Filesystem(GiB, 100 * GiB, 1, 1000),
    pid_max=1000,
    processes=999,
)


def pod(name: str, limits: dict[str, str], empty_dir: dict[str, str] | None = None) -> Pod:
    """A pod whose containers have these ``ephemeral-storage`` limits (by container name), and
    one emptyDir volume ``data`` when ``empty_dir`` is given (its sizeLimit, medium)."""
    spec: dict[str, object] = {
        "containers": [
            {
                "name": container,
                "image": "busybox:1.36",
                "resources": {"limits": {"ephemeral-storage": limit}} if limit else {},
            }
            for container, limit in limits.items()
        ]
    }
    if empty_dir is not None:
        spec["volumes"] = [{"name": "data", "emptyDir": empty_dir}]
    document = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    (found,) = load_pods_from_string(json.dumps(document))
    return found


@given(
    available=st.integers(0, 4 * GiB),
    limit=st.integers(0, 4 * GiB),
)
@example(available=100 * MiB, limit=100 * MiB)
def test_memory_pressure_is_available_below_the_threshold(available: int, limit: int) -> None:
    thresholds = eviction_thresholds([f"memory.available<{limit}"])
    node = HostFigures(memory_available=available, memory_capacity=16 * GiB)
    conditions = pressure_conditions(Summary(node=node), thresholds)
    assert ("MemoryPressure" in conditions) == (available < limit)
    if available < limit:
        assert conditions["MemoryPressure"] == [f"memory.available<{limit}"]


@given(
    available=st.integers(0, 1000),
    percent=st.integers(0, 100),
)
@example(available=100, percent=10)
def test_a_percentage_threshold_is_of_the_capacity(available: int, percent: int) -> None:
    thresholds = eviction_thresholds([f"nodefs.available<{percent}%", "imagefs.available<0%"])
    node = HostFigures(nodefs=Filesystem(available, 1000))
    conditions = pressure_conditions(Summary(node=node), thresholds)
    pressed = Decimal(available) < Decimal(percent) * 1000 / 100
    assert conditions == ({"DiskPressure": [f"nodefs.available<{percent}%"]} if pressed else {})


def test_the_conditions_come_from_the_node_and_the_evictions_from_the_pods() -> None:
    over = PodUsage(pod("over", {"a": "1Mi"}), containers={"a": 2 * MiB})
    under = PodUsage(pod("under", {"a": "1Mi"}), containers={"a": MiB})
    thresholds = eviction_thresholds(["pid.available<10%"])
    calm = Summary(node=CALM, pods=(over, under))
    assert pressure_conditions(calm, thresholds) == {}
    assert [e.pod.metadata.name for e in pods_to_evict(calm)] == ["over"]
    pressed = Summary(node=PRESSED, pods=(under,))
    assert set(pressure_conditions(pressed, thresholds)) == {
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
    }
    assert pods_to_evict(pressed) == []  # pressure makes conditions; it evicts no pod


@given(usage=st.integers(0, 4 * MiB), limit_mib=st.integers(1, 3))
def test_a_container_over_its_limit_is_evicted(usage: int, limit_mib: int) -> None:
    found = pods_to_evict(
        Summary(pods=(PodUsage(pod("web", {"a": f"{limit_mib}Mi"}), containers={"a": usage}),))
    )
    if usage <= limit_mib * MiB:
        assert found == []
        return
    (eviction,) = found
    assert eviction.rejection.reason == EVICTED
    assert eviction.signal == POD_SIGNAL  # one container: its limit is the pod's total too
    assert eviction.rejection.message == (
        f"Pod ephemeral local storage usage exceeds the total limit of containers {limit_mib}Mi. "
    )


@given(
    empty_dir=st.integers(0, 3 * MiB),
    containers=st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3 * MiB)),
)
@example(empty_dir=2 * MiB + 1, containers={"a": 3 * MiB})
def test_the_kubelets_order_and_each_eviction_is_the_per_pod_rule(
    empty_dir: int, containers: dict[str, int]
) -> None:
    """emptyDir sizeLimit first, then the pod's total, then each container's limit; the summary's
    decision is the per-pod rule applied to every pod."""
    web = pod("web", {"a": "1Mi", "b": "4Mi"}, {"sizeLimit": "2Mi"})
    usage = PodUsage(web, {"data": empty_dir}, containers)
    found = pods_to_evict(Summary(pods=(usage,)))
    rule = local_storage_eviction(web, {"data": empty_dir}, containers)
    assert [(e.rejection, e.signal) for e in found] == ([] if rule is None else [rule])
    if empty_dir > 2 * MiB:
        assert rule is not None and rule[1] == EMPTY_DIR_SIGNAL
        assert rule[0].message == 'Usage of EmptyDir volume "data" exceeds the limit "2Mi". '
    elif empty_dir + sum(containers.values()) > 5 * MiB:
        assert rule is not None and rule[1] == POD_SIGNAL
    elif containers.get("a", 0) > MiB:
        assert rule is not None and rule[1] == CONTAINER_SIGNAL
    else:
        assert rule is None


def test_only_pods_with_a_disk_limit_are_watched() -> None:
    assert watches_local_storage(pod("limited", {"a": "1Mi"}))
    assert watches_local_storage(pod("sized", {"a": ""}, {"sizeLimit": "1Mi"}))
    assert not watches_local_storage(
        pod("memory", {"a": ""}, {"sizeLimit": "1Mi", "medium": "Memory"})
    )
    assert not watches_local_storage(pod("free", {"a": ""}, {}))
