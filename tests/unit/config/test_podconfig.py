from __future__ import annotations

import attrs
import pytest

from kubecore._config.podconfig import PodConfig
from kubecore._config.updates import Operation, PodUpdate
from kubecore._manifest.identity import SOURCE_ANNOTATION, pod_uid
from kubecore._model.v1 import Container, ObjectMeta, Pod, PodSpec

NODE = "node-a"


def pod(name: str, uid: str = "", namespace: str = "default", image: str = "busybox:1") -> Pod:
    return Pod(
        ObjectMeta(name=name, namespace=namespace, uid=uid),
        PodSpec(containers=(Container("c", image),)),
    )


def names(config: PodConfig) -> list[str]:
    return [p.metadata.name for p in config.pods()]


def test_set_replaces_the_sources_pods() -> None:
    config = PodConfig(node_name=NODE)
    config.apply(PodUpdate(Operation.SET, (pod("a", "1"), pod("b", "2")), "file"))
    assert names(config) == ["a", "b"]
    config.apply(PodUpdate(Operation.SET, (pod("c", "3"),), "file"))
    assert names(config) == ["c"]


def test_add_update_remove() -> None:
    config = PodConfig(node_name=NODE)
    config.apply(PodUpdate(Operation.ADD, (pod("a", "1"),), "api"))
    config.apply(PodUpdate(Operation.ADD, (pod("b", "2"),), "api"))
    config.apply(PodUpdate(Operation.UPDATE, (pod("a", "1", image="busybox:2"),), "api"))
    assert [p.spec.containers[0].image for p in config.pods()] == ["busybox:2", "busybox:1"]
    config.apply(PodUpdate(Operation.REMOVE, (pod("a", "1"),), "api"))
    assert names(config) == ["b"]


def test_sources_keep_their_own_state() -> None:
    config = PodConfig(node_name=NODE)
    config.apply(PodUpdate(Operation.SET, (pod("a", "1"),), "file"))
    config.apply(PodUpdate(Operation.SET, (pod("b", "2"),), "http"))
    config.apply(PodUpdate(Operation.SET, (), "http"))
    assert names(config) == ["a"]


def test_pods_are_stamped_with_source_and_uid() -> None:
    config = PodConfig(node_name=NODE)
    config.apply(PodUpdate(Operation.SET, (pod("a"),), "file"))
    (only,) = config.pods()
    assert only.metadata.annotations[SOURCE_ANNOTATION] == "file"
    assert only.uid == pod_uid("file", "default", "a", node_name=NODE)
    # the same pod again gets the same uid: an agent restart adopts it
    other = PodConfig(node_name=NODE)
    other.apply(PodUpdate(Operation.SET, (pod("a"),), "file"))
    assert other.pods()[0].uid == only.uid


def test_static_pod_uids_differ_by_node() -> None:
    # Two agents on one engine with the same manifest: their pods (and so their container
    # names) must differ, or each takes the other's containers for its own.
    uids = set()
    for node in ("node-a", "node-b"):
        config = PodConfig(node_name=node)
        config.apply(PodUpdate(Operation.SET, (pod("a"),), "file"))
        uids.add(config.pods()[0].uid)
    assert len(uids) == 2


def test_the_earlier_source_wins_a_name_clash() -> None:
    config = PodConfig(["file", "http"], node_name=NODE)
    config.apply(PodUpdate(Operation.SET, (pod("a", "2", image="from-http"),), "http"))
    config.apply(PodUpdate(Operation.SET, (pod("a", "1", image="from-file"),), "file"))
    assert [p.spec.containers[0].image for p in config.pods()] == ["from-file"]


def test_sources_ready_once_every_registered_source_reported() -> None:
    config = PodConfig(["file", "http"], node_name=NODE)
    assert not config.sources_ready()
    config.apply(PodUpdate(Operation.SET, (), "file"))
    assert not config.sources_ready()
    config.apply(PodUpdate(Operation.SET, (), "http"))
    assert config.sources_ready()
    config.register_source("etcd")
    assert not config.sources_ready()


def test_no_source_means_not_ready() -> None:
    assert not PodConfig(node_name=NODE).sources_ready()


def test_change_detection() -> None:
    config = PodConfig(node_name=NODE)
    a = pod("a", "1")
    assert config.apply(PodUpdate(Operation.SET, (a,), "file"))  # first report counts
    generation = config.generation
    assert not config.apply(PodUpdate(Operation.SET, (attrs.evolve(a),), "file"))
    assert config.generation == generation
    assert config.apply(PodUpdate(Operation.SET, (pod("a", "1", image="x:2"),), "file"))
    assert config.generation == generation + 1


def test_update_needs_a_source() -> None:
    with pytest.raises(ValueError):
        PodConfig(node_name=NODE).apply(PodUpdate(Operation.SET, (), ""))


def test_a_source_that_is_not_ready_says_why_until_it_reports_again() -> None:
    config = PodConfig(["file", "etcd"], node_name=NODE)
    assert config.not_ready_reasons() == {
        "file": "it has not reported yet",
        "etcd": "it has not reported yet",
    }
    config.apply(PodUpdate(Operation.SET, (), "file"))
    config.apply(PodUpdate(Operation.SET, (), "etcd"))
    assert config.not_ready_reasons() == {}
    config.apply(PodUpdate(Operation.NOT_READY, (), "etcd", reason="etcd is unreachable: refused"))
    assert config.not_ready_reasons() == {"etcd": "etcd is unreachable: refused"}
    config.apply(PodUpdate(Operation.SET, (), "etcd"))
    assert config.not_ready_reasons() == {}


def test_a_pod_has_one_uid_whichever_way_it_reaches_the_agent() -> None:
    """``Kubelet.set_pods`` and ``StaticSource`` are two documented ways to hand the agent pods:
    switching between them must not replace every container."""
    from kubecore import StaticSource

    web = pod("web")
    direct = PodConfig(node_name=NODE)
    direct.apply(PodUpdate(Operation.SET, (web,), "api"))
    update = StaticSource([web], name="api").poll(0.0)
    assert update is not None
    through_source = PodConfig(node_name=NODE)
    through_source.apply(update)
    assert [p.uid for p in direct.pods()] == [p.uid for p in through_source.pods()]


def test_a_set_with_a_reason_is_a_last_known_state_not_a_report() -> None:
    config = PodConfig(["file"], node_name=NODE)
    remembered = PodUpdate(
        Operation.SET, (pod("a", "1"),), "file", reason="/pods: no such file or directory"
    )
    assert config.apply(remembered)  # the pods are desired (run and kept)
    assert names(config) == ["a"]
    assert not config.sources_ready()  # but nothing else may be deleted yet
    assert config.not_ready_reasons() == {"file": "/pods: no such file or directory"}
    config.apply(PodUpdate(Operation.SET, (pod("a", "1"), pod("b", "2")), "file"))
    assert config.sources_ready() and names(config) == ["a", "b"]
