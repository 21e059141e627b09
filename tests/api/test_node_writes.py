"""What a write to the Node may change (``kubecore._api.node_writes.node_change``): only
``spec.unschedulable``; anything else, whatever the body, is a 422 naming the field, never
another failure."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._api.errors import ApiError
from kubecore._api.node_writes import node_change
from kubecore._api.nodes import unschedulable_spec
from kubecore._api.patch import merge_patch, strategic_merge_patch
from kubecore._model.node_record import NodeRecord

RECORD = NodeRecord("u-1", "2026-01-01T00:00:00Z")
NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "node-1",
        "uid": "u-1",
        "labels": {"kubernetes.io/hostname": "node-1"},
        "resourceVersion": "7",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    },
    "spec": {},
    "status": {"capacity": {"cpu": "2"}, "conditions": [{"type": "Ready", "status": "True"}]},
}


def test_cordon_and_uncordon_as_kubectl_sends_them() -> None:
    cordoned = strategic_merge_patch(copy.deepcopy(NODE), {"spec": {"unschedulable": True}})
    assert node_change(NODE, cordoned, check_status=True).unschedulable is True
    shown = {**NODE, "spec": unschedulable_spec(NodeRecord("u-1", "t", True, "t2"))}
    uncordoned = strategic_merge_patch(copy.deepcopy(shown), {"spec": {"unschedulable": None}})
    assert node_change(shown, uncordoned, check_status=True).unschedulable is False
    merged = merge_patch(copy.deepcopy(NODE), {"spec": {"unschedulable": True}})
    assert node_change(NODE, merged, check_status=True).unschedulable is True


def test_a_put_of_what_was_read_may_flip_unschedulable_and_carries_its_old_status() -> None:
    wanted = copy.deepcopy(NODE)
    wanted["spec"] = {"unschedulable": True, "taints": []}
    wanted["status"] = {"capacity": {"cpu": "64"}}
    wanted["metadata"]["resourceVersion"] = "3"
    assert node_change(NODE, wanted, check_status=False).unschedulable is True


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"metadata": {"labels": {"team": "a"}}}, "metadata.labels"),
        ({"metadata": {"annotations": {"a": "b"}}}, "metadata.annotations"),
        ({"metadata": {"name": "other"}}, "metadata.name"),
        ({"spec": {"unschedulable": "yes"}}, "spec.unschedulable"),
        ({"spec": {"unschedulable": 0}}, "spec.unschedulable"),
        ({"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}, "spec.taints"),
        ({"spec": {"podCIDR": "10.0.0.0/24"}}, "spec.podCIDR"),
        ({"status": {"capacity": {"cpu": "64"}}}, "status"),
        ({"kind": "Pod"}, "kind"),
    ],
)
def test_any_other_change_is_a_422_naming_the_field(patch: dict[str, Any], field: str) -> None:
    wanted = strategic_merge_patch(copy.deepcopy(NODE), patch)
    with pytest.raises(ApiError) as raised:
        node_change(NODE, wanted, check_status=True)
    assert raised.value.code == 422
    assert [c["field"] for c in raised.value.details["causes"]] == [field]
    assert "only spec.unschedulable can be changed" in raised.value.message


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    ["metadata", "spec", "status", "kind", "apiVersion", "unschedulable", "taints", "labels"]
)
BODIES = st.dictionaries(KEYS, JSON | st.dictionaries(KEYS, JSON, max_size=3), max_size=4)


@given(BODIES | JSON)
@example({"spec": {"taints": [1]}})
@example({"spec": {"taints": "all"}})
@example({"metadata": []})
@example({"spec": {"unschedulable": 0}})
def test_any_body_is_a_change_or_a_422(body: Any) -> None:
    for wanted in (body, merge_patch(copy.deepcopy(NODE), body)):
        try:
            change = node_change(NODE, wanted, check_status=True)
        except ApiError as error:
            assert error.code == 422
        else:
            assert isinstance(change.unschedulable, bool)
