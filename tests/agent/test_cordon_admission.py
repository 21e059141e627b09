"""A cordoned node at admission (``kubecore._agent.admission.cordon``): new pods of the API are
refused as the scheduler's NodeUnschedulable filter would, the ones kept stay, static pods and
pods tolerating the taint come in; the node's record on disk."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import attrs
import pytest

from kubecore._agent.admission.admit import Admission
from kubecore._agent.admission.cordon import cordon_refusal, tolerates_unschedulable
from kubecore._manifest import load_pods_from_string
from kubecore._manifest.identity import SOURCE_ANNOTATION
from kubecore._model.node_record import (
    NODE_UNSCHEDULABLE,
    SCHEDULABLE,
    CordonView,
    NodeRecord,
    NodeRecordFile,
)
from kubecore._model.v1 import Pod, Toleration

POD = """
apiVersion: v1
kind: Pod
metadata: {name: NAME, uid: NAME-uid}
spec:
  containers: [{name: main, image: busybox:1.35}]
"""


def pod(name: str, source: str = "kube-apiserver", **spec: object) -> Pod:
    (found,) = load_pods_from_string(POD.replace("NAME", name))
    meta = attrs.evolve(found.metadata, annotations={SOURCE_ANNOTATION: source})
    return attrs.evolve(found, metadata=meta, spec=attrs.evolve(found.spec, **spec))


def test_a_schedulable_node_admits_everything() -> None:
    admitted, rejected = Admission(node_name="n").admit([pod("a"), pod("b", "file")])
    assert [p.metadata.name for p in admitted] == ["a", "b"] and rejected == []


def test_a_cordoned_node_refuses_new_api_pods_only() -> None:
    view = CordonView(True, kept=frozenset({"old-uid"}))
    admission = Admission(node_name="n", cordon=lambda: view)
    pods = [pod("old"), pod("new"), pod("static", "file"), pod("embedded", "api")]
    admitted, rejected = admission.admit(pods)
    assert [p.metadata.name for p in admitted] == ["old", "static", "embedded"]
    ((refused, why),) = rejected
    assert refused.metadata.name == "new" and why.reason == NODE_UNSCHEDULABLE
    assert "node n is cordoned" in why.message and "kubectl uncordon n" in why.message


def test_pods_admitted_before_the_cordon_stay_and_the_rejection_is_final() -> None:
    state = [SCHEDULABLE]
    admission = Admission(node_name="n", cordon=lambda: state[0])
    admission.admit([pod("a")])
    state[0] = CordonView(True)
    admitted, rejected = admission.admit([pod("a"), pod("b")])
    assert [p.metadata.name for p in admitted] == ["a"]
    assert [p.metadata.name for p, _ in rejected] == ["b"]
    state[0] = SCHEDULABLE  # uncordoned: b stays refused, as every rejection does; c comes in
    admitted, rejected = admission.admit([pod("a"), pod("b"), pod("c")])
    assert [p.metadata.name for p in admitted] == ["a", "c"] and rejected == []
    assert admission.rejection("b-uid") is not None


def test_a_pod_refused_while_cordoned_stays_refused_after_the_uncordon() -> None:
    view = CordonView(False, refused=frozenset({"b-uid"}))  # as a restarted agent reads it
    admitted, rejected = Admission(node_name="n", cordon=lambda: view).admit([pod("a"), pod("b")])
    assert [p.metadata.name for p in admitted] == ["a"]
    ((refused, why),) = rejected
    assert refused.metadata.name == "b" and why.reason == NODE_UNSCHEDULABLE
    assert "was cordoned when the pod was created" in why.message


@pytest.mark.parametrize(
    ("toleration", "tolerates"),
    [
        (Toleration(operator="Exists"), True),
        (Toleration(key="node.kubernetes.io/unschedulable", operator="Exists"), True),
        (Toleration(key="node.kubernetes.io/unschedulable", effect="NoSchedule"), True),
        (Toleration(key="node.kubernetes.io/unschedulable", value="x"), False),
        (Toleration(key="node.kubernetes.io/unschedulable", effect="NoExecute"), False),
        (Toleration(key="other", operator="Exists"), False),
    ],
)
def test_a_pod_tolerating_the_taint_comes_in(toleration: Toleration, tolerates: bool) -> None:
    assert tolerates_unschedulable([toleration]) is tolerates
    refusal = cordon_refusal(pod("t", tolerations=(toleration,)), CordonView(True), "n")
    assert (refusal is None) is tolerates


def test_the_record_is_written_and_read_back(tmp_path: Path) -> None:
    file = NodeRecordFile(str(tmp_path))
    assert file.load() is None and file.cordon() == SCHEDULABLE
    record = NodeRecord(
        "u-1", "2026-01-01T00:00:00Z", True, "2026-01-02T00:00:00Z", ("a", "b"), ("c",)
    )
    file.save(record)
    assert file.path == str(tmp_path / "node.json")
    assert (tmp_path / "node.json").stat().st_mode & 0o777 == 0o600
    assert NodeRecordFile(str(tmp_path)).load() == record
    assert file.cordon() == CordonView(True, frozenset({"a", "b"}), frozenset({"c"}))
    file.save(attrs.evolve(record, unschedulable=False, kept=()))
    assert file.cordon() == CordonView(False, refused=frozenset({"c"}))


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"{not json", "Expecting property name"),
        (b"[]", "does not hold a JSON object"),
        (json.dumps({"uid": "u"}).encode(), "needs a uid and a creationTimestamp"),
        (
            json.dumps({"uid": "u", "creationTimestamp": "t", "unschedulable": "yes"}).encode(),
            "unschedulable must be true or false",
        ),
        (
            json.dumps({"uid": "u", "creationTimestamp": "t", "kept": [1]}).encode(),
            "kept must be a list of pod uids",
        ),
        (
            json.dumps({"uid": "u", "creationTimestamp": "t", "refused": "x"}).encode(),
            "refused must be a list of pod uids",
        ),
        (b"\xff\xfe", "codec"),
    ],
)
def test_a_broken_record_is_named_and_taken_as_schedulable(
    tmp_path: Path, content: bytes, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    file = NodeRecordFile(str(tmp_path))
    Path(file.path).write_bytes(content)
    with pytest.raises(ValueError, match=why) as raised:
        file.load()
    assert file.path in str(raised.value)
    with caplog.at_level(logging.ERROR):
        assert file.cordon() == SCHEDULABLE
    assert "cannot be read" in caplog.text
