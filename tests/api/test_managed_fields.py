"""Field ownership of server-side apply (``kubecore._api.managed_fields``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubecore._api.errors import ApiError
from kubecore._api.managed_fields import (
    APPLY,
    UPDATE,
    Entry,
    applied,
    created,
    dotted,
    field_set,
    from_fields_v1,
    to_fields_v1,
    updated,
)

NOW = 1_700_000_000.0


def pod(labels: dict[str, str], containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": labels},
        "spec": {"containers": containers},
    }


MAIN = {"name": "main", "image": "a:1", "ports": [{"containerPort": 80}], "args": ["x", "y"]}


def test_the_field_set_follows_maps_keyed_lists_and_atomic_ones() -> None:
    fields = field_set(pod({"app": "web"}, [MAIN]))
    item = ("f:spec", "f:containers", 'k:{"name":"main"}')
    assert fields == {
        ("f:metadata", "f:labels", "f:app"),
        item,
        (*item, "f:name"),
        (*item, "f:image"),
        (*item, "f:args"),  # an atomic list is one field
        (*item, "f:ports", 'k:{"containerPort":80}'),
        (*item, "f:ports", 'k:{"containerPort":80}', "f:containerPort"),
    }
    tree = to_fields_v1(fields)
    assert tree["f:spec"]["f:containers"]['k:{"name":"main"}']["."] == {}
    assert from_fields_v1(tree) == fields
    assert dotted((*item, "f:image")) == '.spec.containers[name="main"].image'


tokens = st.one_of(
    st.text(min_size=1, max_size=5).map(lambda t: "f:" + t),
    st.integers(0, 3).map(lambda n: f'k:{{"name":"c{n}"}}'),
)


@given(st.sets(st.lists(tokens, min_size=1, max_size=4).map(tuple), max_size=12))
def test_fields_v1_reads_back_what_it_writes(fields: set[tuple[str, ...]]) -> None:
    assert from_fields_v1(to_fields_v1(fields)) == fields


def test_an_apply_keeps_others_fields_removes_its_dropped_ones_and_names_conflicts() -> None:
    config = pod({"app": "web", "tier": "front"}, [MAIN])
    live, entries = applied((), "kubectl", {}, config, force=False, now=NOW)
    assert live == config
    labelled = {
        **live,
        "metadata": {**live["metadata"], "labels": {**config["metadata"]["labels"], "team": "a"}},
    }
    entries = updated(entries, "kubectl-label", live, labelled, NOW)
    assert [(e.manager, e.operation) for e in entries] == [
        ("kubectl", APPLY),
        ("kubectl-label", UPDATE),
    ]

    smaller = pod({"app": "web"}, [{**MAIN, "image": "a:2", "ports": [{"containerPort": 81}]}])
    merged, after = applied(entries, "kubectl", labelled, smaller, force=False, now=NOW)
    assert merged["metadata"]["labels"] == {"app": "web", "team": "a"}
    (container,) = merged["spec"]["containers"]
    assert container["image"] == "a:2" and container["ports"] == [{"containerPort": 81}]
    assert container["args"] == ["x", "y"]

    taking = pod({"app": "web", "team": "b"}, [MAIN])
    with pytest.raises(ApiError) as raised:
        applied(after, "kubectl", merged, taking, force=False, now=NOW)
    assert raised.value.code == 409
    assert raised.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-label" using v1: '
        ".metadata.labels.team"
    )
    forced, owners = applied(after, "kubectl", merged, taking, force=True, now=NOW)
    assert forced["metadata"]["labels"]["team"] == "b"
    assert [e.manager for e in owners] == ["kubectl"]


def test_the_same_value_is_shared_not_a_conflict() -> None:
    config = pod({"app": "web"}, [MAIN])
    entries = created("kubectl-create", UPDATE, config, NOW)
    merged, after = applied(entries, "kubectl", config, config, force=False, now=NOW)
    assert merged == config
    assert {e.manager for e in after} == {"kubectl-create", "kubectl"}


def test_an_update_takes_what_it_changed_and_drops_what_it_removed() -> None:
    old = pod({"app": "web", "tier": "x"}, [MAIN])
    entries = (Entry("kubectl", APPLY, "", field_set(old)),)
    new = pod({"app": "other"}, [MAIN])
    after = updated(entries, "kubectl-edit", old, new, NOW)
    apply, edit = after
    assert ("f:metadata", "f:labels", "f:app") in edit.fields
    assert ("f:metadata", "f:labels", "f:app") not in apply.fields
    assert ("f:metadata", "f:labels", "f:tier") not in apply.fields
    assert edit.fields == {("f:metadata", "f:labels", "f:app")}
