"""The identity labels and annotations: written once (``kubecore._contract.labels``, published in
``kubecore.runtime``), read back the same
way by the planner, the executor and the adapters."""

from __future__ import annotations

import attrs

from kubecore import runtime as public
from kubecore._contract.labels import (
    GRACE_PERIOD_ANNOTATION,
    HASH_ANNOTATION,
    container_name,
    grace_period,
    init_flag,
    is_sidecar,
    owned_by,
    pod_identity,
    recorded_hash,
    restart_count,
)
from kubecore._contract.values import RuntimeContainer, RuntimeState
from kubecore._kuberuntime.translate import container_config, sandbox_config
from kubecore._model.spec_hash import container_hash
from kubecore._model.v1 import Container, ObjectMeta, Pod, PodSpec

SIDECAR = Container(name="proxy", image="envoy:1", restart_policy="Always")
POD = Pod(
    metadata=ObjectMeta(name="web", namespace="shop", uid="uid-7"),
    spec=PodSpec(
        containers=(Container(name="app", image="nginx:1"),),
        init_containers=(SIDECAR,),
        termination_grace_period_seconds=45,
    ),
)


def observed(labels: dict[str, str], annotations: dict[str, str]) -> RuntimeContainer:
    return RuntimeContainer(
        id="c1",
        sandbox_id="s1",
        name="runtime-name",
        image="nginx:1",
        state=RuntimeState.RUNNING,
        created_at=0.0,
        attempt=9,
        labels=labels,
        annotations=annotations,
    )


def test_what_the_core_writes_reads_back() -> None:
    config = container_config(
        POD, SIDECAR, restart_count=3, volume_paths={}, is_init=True, node_name="node-1"
    )
    c = observed(dict(config.labels), dict(config.annotations))
    assert pod_identity(c.labels) == ("shop", "web", "uid-7")
    assert container_name(c) == "proxy"
    assert restart_count(c) == 3
    assert recorded_hash(c) == container_hash(SIDECAR)
    assert init_flag(c.annotations) is True and is_sidecar(c.annotations)
    assert grace_period(c.annotations, 30.0) == 45.0
    assert owned_by(c.labels, "node-1") and not owned_by(c.labels, "node-2")
    sandbox = sandbox_config(POD, 0, dns=None, node_name="node-1")
    assert pod_identity(sandbox.labels) == ("shop", "web", "uid-7")
    assert grace_period(sandbox.annotations, 30.0) == 45.0


def test_an_object_the_core_did_not_write_reads_as_the_runtime_shows_it() -> None:
    c = observed({}, {})
    assert container_name(c) == "runtime-name"
    assert restart_count(c) == 9  # the runtime's attempt
    assert recorded_hash(c) == ""  # no hash: nothing to compare
    assert init_flag(c.annotations) is None  # judged by the spec
    assert pod_identity(c.labels) == ("", "", "")
    assert grace_period({GRACE_PERIOD_ANNOTATION: "soon"}, 30.0) == 30.0


def test_the_hash_reads_the_same_for_the_planner_and_the_observed_record() -> None:
    """One reader for the planner's steady path and the observed record: an empty hash
    annotation falls back to a label of that name (the steady path's own copy took the empty
    annotation as "no hash" where the record compared the label's)."""
    c = observed({HASH_ANNOTATION: "abc"}, {HASH_ANNOTATION: ""})
    assert recorded_hash(c) == "abc"
    assert recorded_hash(attrs.evolve(c, annotations={HASH_ANNOTATION: "def"})) == "def"


def test_the_public_names_are_the_core_ones() -> None:
    from kubecore._contract import labels as _labels
    from kubecore._util.exports import SURFACE

    label_names = [
        name
        for name, home in SURFACE["kubecore.runtime"].items()
        if home == "kubecore._contract.labels"
    ]
    assert "MANAGED_LABEL" in label_names
    for name in label_names:
        assert getattr(public, name) is getattr(_labels, name)
