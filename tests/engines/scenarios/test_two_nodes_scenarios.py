"""Two agents with different node names on one engine, given the same manifest, on every engine:
each runs its own copy of the pods (a static pod's UID holds the node name, so their names
differ), neither touches the other's, and an adapter asked to make a name another node's object
holds refuses (``NameOwnedByAnotherNode``) and leaves that object alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet
from kubecore._contract.errors import NameOwnedByAnotherNode
from kubecore._kuberuntime.translate import sandbox_config
from kubecore._manifest import load_pods_from_dict
from kubecore._model.v1 import Pod
from tests.engines.docker.e2e_helpers import AgentFactory, all_running, running_ids, wait_pod
from tests.engines.engine_support import EngineUnderTest

STABLE_PASSES = 8
"""Passes (a relist each, 0.3 s apart) both agents must go through with nothing of either
replaced: each would remove the other's containers at its first pass if they clashed."""


def manifest(engine: EngineUnderTest, namespace: str) -> list[Pod]:
    """The pods as a manifest file gives them: no uid (the agent gives the node's)."""
    data: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "shared", "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": "app", "image": engine.image, "command": ["sleep", "3600"]},
                {"name": "side", "image": engine.image, "command": ["sleep", "3600"]},
            ],
        },
    }
    return load_pods_from_dict(data, source_name="two-nodes")


def running_pod(kubelet: Kubelet, namespace: str) -> Pod:
    return wait_pod(kubelet, namespace, "shared", all_running, timeout=30, what="shared running")


def test_two_nodes_on_one_engine_run_the_same_manifest_apart(
    engine: EngineUnderTest, make_agent: AgentFactory, namespace: str, test_uid: str
) -> None:
    pods = manifest(engine, namespace)
    first = make_agent(pods, node_name=f"two-a-{test_uid}")
    second = make_agent(pods, node_name=f"two-b-{test_uid}")

    pod_a, pod_b = running_pod(first, namespace), running_pod(second, namespace)
    assert pod_a.uid != pod_b.uid
    ids = {**running_ids(pod_a), **{f"b/{k}": v for k, v in running_ids(pod_b).items()}}
    assert len(set(ids.values())) == 4

    for _ in range(STABLE_PASSES):
        assert first.wait_pass(30, ask=False) and second.wait_pass(30, ask=False)
    now_a, now_b = running_pod(first, namespace), running_pod(second, namespace)
    assert {**running_ids(now_a), **{f"b/{k}": v for k, v in running_ids(now_b).items()}} == ids
    listed = engine.containers(namespace)
    assert sorted(c.id for c in listed) == sorted(ids.values())
    assert all(c.running for c in listed)
    for pod in (now_a, now_b):
        statuses = pod.status.container_statuses if pod.status is not None else ()
        assert [s.restart_count for s in statuses] == [0, 0]


def test_an_adapter_refuses_a_name_another_node_holds(
    engine: EngineUnderTest,
    make_agent: AgentFactory,
    namespace: str,
    test_uid: str,
    tmp_path: Path,
) -> None:
    pods = manifest(engine, namespace)
    owner = make_agent(pods, node_name=f"owner-{test_uid}")
    held = running_pod(owner, namespace)
    sandboxes = engine.sandboxes(namespace)
    assert len(sandboxes) == 1

    # Another node's adapter asked for exactly that pod's sandbox (the names clash).
    intruder = engine.open(tmp_path / "intruder").runtime
    clash = sandbox_config(held, 0, dns=None, node_name=f"intruder-{test_uid}")
    try:
        with pytest.raises(NameOwnedByAnotherNode, match=f"owner-{test_uid}"):
            intruder.run_sandbox(clash)
    finally:
        intruder.close()

    assert engine.sandboxes(namespace) == sandboxes
    assert owner.wait_pass(30)
    assert running_ids(running_pod(owner, namespace)) == running_ids(held)
    assert all(c.running for c in engine.containers(namespace))
