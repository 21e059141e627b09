"""Ephemeral containers in pod documents: read and written back (``targetContainerName``, their
status), and refused as the API server refuses them: the fields an ephemeral container may not
have, subPath mounts, a name used twice, a target that is not an app or init container."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubecore._contract.errors import ValidationError
from kubecore._manifest import pod_from_dict, pod_to_dict
from kubecore._manifest.validation.ephemeral import NOT_FOR_EPHEMERAL
from kubecore.v1 import EphemeralContainer

FORBIDDEN: dict[str, Any] = {
    "ports": [{"containerPort": 80}],
    "resources": {"requests": {"memory": "1Mi"}},
    "livenessProbe": {"exec": {"command": ["true"]}},
    "readinessProbe": {"exec": {"command": ["true"]}},
    "startupProbe": {"exec": {"command": ["true"]}},
    "lifecycle": {"postStart": {"exec": {"command": ["true"]}}},
    "restartPolicy": "Always",
    "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
}


def pod(*ephemeral: dict[str, Any], **status: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {
            "volumes": [{"name": "data", "emptyDir": {}}],
            "initContainers": [{"name": "setup", "image": "busybox"}],
            "containers": [{"name": "app", "image": "busybox"}],
            "ephemeralContainers": list(ephemeral),
        },
    }
    if status:
        data["status"] = status
    return data


def debugger(**extra: Any) -> dict[str, Any]:
    return {"name": "debugger", "image": "busybox:1.36", "targetContainerName": "app", **extra}


def problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as refused:
        pod_from_dict(data)
    return [(p.path, p.message) for p in refused.value.problems]


def test_read_and_written_back_with_their_status() -> None:
    running = {"name": "debugger", "image": "busybox:1.36", "state": {"running": {}}}
    loaded = pod_from_dict(
        pod(debugger(stdin=True, tty=True), ephemeralContainerStatuses=[running])
    )
    (found,) = loaded.spec.ephemeral_containers
    assert isinstance(found, EphemeralContainer)
    assert (found.name, found.target_container_name, found.stdin, found.tty) == (
        "debugger",
        "app",
        True,
        True,
    )
    assert loaded.status is not None and loaded.status.ephemeral_container_statuses[0].name
    dumped = pod_to_dict(loaded)
    assert dumped["spec"]["ephemeralContainers"][0]["targetContainerName"] == "app"
    assert dumped["status"]["ephemeralContainerStatuses"][0]["name"] == "debugger"
    assert pod_from_dict(dumped) == loaded
    assert "ephemeralContainers" not in pod_to_dict(pod_from_dict(pod()))["spec"]


@given(st.sets(st.sampled_from(sorted(FORBIDDEN)), min_size=1))
def test_each_forbidden_field_is_named(names: set[str]) -> None:
    found = problems(pod(debugger(**{name: FORBIDDEN[name] for name in names})))
    assert sorted(found) == sorted(
        (f"spec.ephemeralContainers[0].{name}", NOT_FOR_EPHEMERAL) for name in names
    )


def test_sub_path_mounts_are_refused() -> None:
    mounts = [
        {"name": "data", "mountPath": "/a", "subPath": "x"},
        {"name": "data", "mountPath": "/b", "subPathExpr": "$(POD)"},
        {"name": "data", "mountPath": "/c"},
    ]
    assert problems(pod(debugger(volumeMounts=mounts))) == [
        ("spec.ephemeralContainers[0].volumeMounts[0].subPath", NOT_FOR_EPHEMERAL),
        ("spec.ephemeralContainers[0].volumeMounts[1].subPathExpr", NOT_FOR_EPHEMERAL),
    ]


def test_names_are_unique_among_all_containers_and_targets_exist() -> None:
    assert problems(pod(debugger(name="app"))) == [
        (
            "spec.ephemeralContainers[0].name",
            "duplicate container name 'app' (also spec.containers[0])",
        )
    ]
    assert problems(pod(debugger(), debugger())) == [
        (
            "spec.ephemeralContainers[1].name",
            "duplicate container name 'debugger' (also spec.ephemeralContainers[0])",
        )
    ]
    assert problems(pod(debugger(targetContainerName="debugger"))) == [
        (
            "spec.ephemeralContainers[0].targetContainerName",
            "no app or init container named 'debugger' in the pod",
        )
    ]
    assert pod_from_dict(pod(debugger(targetContainerName="setup")))  # an init container


def test_the_container_rules_apply_too() -> None:
    found = problems(pod(debugger(name="Bad_Name", image="", imagePullPolicy="Sometimes")))
    paths = {path for path, _ in found}
    assert {
        "spec.ephemeralContainers[0].name",
        "spec.ephemeralContainers[0].image",
        "spec.ephemeralContainers[0].imagePullPolicy",
    } <= paths
    found = problems(pod(debugger(securityContext={"runAsUser": -1})))
    assert found[0][0] == "spec.ephemeralContainers[0].securityContext.runAsUser"
