"""Ownership on a shared engine: an agent leaves alone what does not carry its node label, and
two agents with one node name do not both run."""

# ruff: noqa: F811 - pytest fixtures imported from the agent tests

from __future__ import annotations

import logging
from typing import Any

import pytest

from kubecore._runtime import (
    CONTAINER_NAME_LABEL,
    MANAGED_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
)
from kubecore_docker import DockerRuntime
from kubecore_docker import _runtime as docker_runtime
from kubecore_docker._names import CONTAINER_TYPE, DOCKER_TYPE_LABEL, SANDBOX_ID_LABEL, SANDBOX_TYPE
from tests.docker.conftest import TestEngine
from tests.docker.e2e_helpers import all_running, container, get_pod, make_pod
from tests.docker.helpers import SLEEPER, TEST_LABEL, wait_for
from tests.docker.test_e2e_agent import (  # noqa: F401 - the fixtures
    AgentFactory,
    make_agent,
    namespace,
    own_images,
)

pytestmark = pytest.mark.docker


def make_stray(
    raw: Any, engine: TestEngine, test_uid: str, kind: str, name: str, **labels: str
) -> str:
    """A container made with docker-py as kubecore would make it, but with no node label."""
    every = {
        MANAGED_LABEL: "true",
        DOCKER_TYPE_LABEL: kind,
        TEST_LABEL: test_uid,
        POD_UID_LABEL: f"stray-{test_uid}",
        POD_NAME_LABEL: "stray",
        POD_NAMESPACE_LABEL: f"stray-{test_uid}",
        **labels,
    }
    created = raw.create_container(
        engine.image, command=list(SLEEPER), name=f"{name}-{test_uid}", labels=every
    )
    return str(created["Id"])


def test_containers_without_a_node_label_survive_passes_and_gc_and_are_reported_once(
    make_agent: AgentFactory,
    engine: TestEngine,
    namespace: str,
    raw: Any,
    test_uid: str,
    cleanup: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sandbox = make_stray(raw, engine, test_uid, SANDBOX_TYPE, "stray-pod")
    app = make_stray(
        raw, engine, test_uid, CONTAINER_TYPE, "stray-app",
        **{CONTAINER_NAME_LABEL: "app", SANDBOX_ID_LABEL: sandbox},
    )  # fmt: skip
    done = make_stray(
        raw, engine, test_uid, CONTAINER_TYPE, "stray-done",
        **{CONTAINER_NAME_LABEL: "done", SANDBOX_ID_LABEL: sandbox},
    )  # fmt: skip
    dead_sandbox = make_stray(raw, engine, test_uid, SANDBOX_TYPE, "stray-dead-pod")
    for cid in (sandbox, app, done, dead_sandbox):
        raw.start(cid)
    for cid in (done, dead_sandbox):
        raw.kill(cid)
    strays = {sandbox, app, done, dead_sandbox}

    pod = make_pod("web", namespace, [container("app", engine.image)])
    kubelet = make_agent(
        [pod],
        start=False,
        node_name=f"own-{test_uid}",
        container_gc_interval=0.0,  # container GC at every pass
        housekeeping_interval=0.0,
    )
    with caplog.at_level(logging.INFO, logger="kubecore"):
        wait_for(
            lambda: kubelet.sync() and all_running(get_pod(kubelet, namespace, "web")),
            60,
            what="the agent's own pod",
        )
        for _ in range(5):
            kubelet.sync()
    present = {
        entry["Id"]: entry["State"]
        for entry in raw.containers(all=True, filters={"label": f"{TEST_LABEL}={test_uid}"})
    }
    assert strays <= set(present), "an unlabelled container was removed"
    assert present[sandbox] == "running" and present[app] == "running"
    warned = [
        record
        for record in caplog.records
        if record.levelno == logging.WARNING and "no io.kubecore.node label" in record.getMessage()
    ]
    # once each (the engine is shared: other tests' unlabelled objects are reported too)
    assert sorted(r.object_id for r in warned if r.object_id in strays) == sorted(strays)


def test_a_never_started_sandbox_without_a_node_label_is_hidden_and_never_removed(
    runtime: DockerRuntime,
    raw: Any,
    engine: TestEngine,
    test_uid: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stray = make_stray(raw, engine, test_uid, SANDBOX_TYPE, "stray-created")
    monkeypatch.setattr(docker_runtime, "INTERRUPTED_AFTER", 0.0)
    for _ in range(3):
        assert stray not in {s.id for s in runtime.snapshot().sandboxes}
    assert raw.containers(all=True, filters={"id": stray})
