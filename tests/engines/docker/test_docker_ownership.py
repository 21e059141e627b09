"""Ownership on a shared engine: an agent leaves alone what does not carry its node label, and
two agents with one node name do not both run."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubecore._contract.errors import NodeNameInUse
from kubecore._contract.labels import (
    CONTAINER_NAME_LABEL,
    MANAGED_LABEL,
    NODE_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
)
from kubecore._contract.protocols import ContainerRuntime
from kubecore_docker import DockerRuntime
from kubecore_docker import _runtime as docker_runtime
from kubecore_docker._names import (
    CONTAINER_TYPE,
    DOCKER_TYPE_LABEL,
    LEASE_LABEL,
    SANDBOX_ID_LABEL,
    SANDBOX_TYPE,
    lease_name,
)
from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import AgentFactory, all_running, container, get_pod, make_pod
from tests.engines.docker.helpers import SLEEPER, TEST_LABEL, free_port, wait_for

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


def make_strays(raw: Any, engine: TestEngine, test_uid: str, **node: str) -> set[str]:
    """A running sandbox with a running and an exited container (a pod nobody wants: an agent
    that took them for its own would kill it), and an exited sandbox (it would collect it).
    Made as fast as the engine allows: an agent on the shared engine that predates the rule
    takes unlabelled objects for its own."""
    sandbox = make_stray(raw, engine, test_uid, SANDBOX_TYPE, "stray-pod", **node)
    raw.start(sandbox)
    app = make_stray(
        raw, engine, test_uid, CONTAINER_TYPE, "stray-app",
        **{CONTAINER_NAME_LABEL: "app", SANDBOX_ID_LABEL: sandbox}, **node,
    )  # fmt: skip
    raw.start(app)
    done = make_stray(
        raw, engine, test_uid, CONTAINER_TYPE, "stray-done",
        **{CONTAINER_NAME_LABEL: "done", SANDBOX_ID_LABEL: sandbox}, **node,
    )  # fmt: skip
    raw.start(done)
    raw.kill(done)
    dead_sandbox = make_stray(raw, engine, test_uid, SANDBOX_TYPE, "stray-dead-pod", **node)
    raw.start(dead_sandbox)
    raw.kill(dead_sandbox)
    return {sandbox, app, done, dead_sandbox}


def spy_on_changes(runtime: ContainerRuntime, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids this runtime (or the agent's wrapper of it) is asked to stop or remove."""
    touched: list[str] = []
    for method in ("stop_container", "remove_container", "stop_sandbox", "remove_sandbox"):
        original = getattr(runtime, method)

        def spy(object_id: str, *args: Any, _original: Any = original) -> Any:
            touched.append(object_id)
            return _original(object_id, *args)

        monkeypatch.setattr(runtime, method, spy)
    return touched


@pytest.mark.parametrize(
    "node",
    [{}, {NODE_LABEL: ""}],
    # An agent on the shared engine that predates the ownership rule takes objects with no
    # node label for its own (and removes them in this test); one with an empty node label it
    # leaves alone, and to this rule the two are the same.
    ids=["no-node-label", "empty-node-label"],
)
def test_containers_without_a_node_label_survive_passes_and_gc_and_are_reported_once(
    node: dict[str, str],
    make_agent: AgentFactory,
    engine: TestEngine,
    namespace: str,
    raw: Any,
    test_uid: str,
    cleanup: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pod = make_pod("web", namespace, [container("app", engine.image)])
    kubelet = make_agent(
        [pod],
        start=False,
        node_name=f"own-{test_uid}",
        container_gc_interval=0.001,  # container GC at every pass
        housekeeping_interval=0.001,
    )
    wait_for(
        lambda: kubelet.sync() and all_running(get_pod(kubelet, namespace, "web")),
        60,
        what="the agent's own pod",
    )
    touched = spy_on_changes(kubelet._rooms.runtime, monkeypatch)
    strays = make_strays(raw, engine, test_uid, **node)
    with caplog.at_level(logging.INFO, logger="kubecore"):
        for _ in range(5):
            kubelet.sync()
    assert not strays & set(touched), "the agent stopped or removed an unlabelled object"
    present = {
        entry["Id"]: entry["State"]
        for entry in raw.containers(all=True, filters={"label": f"{TEST_LABEL}={test_uid}"})
    }
    assert strays <= set(present), "an unlabelled container was removed"
    running = {cid for cid, state in present.items() if state == "running"}
    assert len(strays & running) == 2  # the stray sandbox and its app
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


# --- one agent per node name on the engine -----------------------------------------------------


@pytest.fixture
def node_name(raw: Any, test_uid: str) -> Iterator[str]:
    """A node name of this test's own; its lease marker does not outlive the test."""
    name = f"lease-{test_uid}"
    yield name
    with contextlib.suppress(Exception):
        raw.remove_container(lease_name(name), force=True)


def test_two_agents_with_one_node_name_on_one_engine(
    make_agent: AgentFactory, node_name: str, raw: Any
) -> None:
    first = make_agent(node_name=node_name)
    second = make_agent(node_name=node_name, start=False, root_dir=f"/tmp/second-{node_name}")
    with pytest.raises(NodeNameInUse) as refused:
        second.start()
    assert f"'{node_name}'" in str(refused.value)
    assert f"process {os.getpid()}" in str(refused.value) and "--node-name" in str(refused.value)
    assert not second.running and first.running
    marker = raw.inspect_container(lease_name(node_name))
    assert marker["State"]["Status"] == "created"  # a marker: never run
    assert MANAGED_LABEL not in marker["Config"]["Labels"]  # never listed as a pod's
    first.stop()
    with pytest.raises(docker_errors().NotFound):
        raw.inspect_container(lease_name(node_name))  # given up at a clean stop
    second.start()
    assert second.running


def test_an_agent_killed_on_this_host_does_not_block_its_restart(
    make_agent: AgentFactory, node_name: str, engine: TestEngine
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LEASE, engine.base_url, node_name],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        agent = make_agent(node_name=node_name, start=False)
        with pytest.raises(NodeNameInUse, match=f"process {holder.pid} on host"):
            agent.start()
        holder.kill()  # kill -9: the lease stands, unrenewed
        holder.wait(30)
        agent.start()  # at once, not a TTL later: its holder's process is gone
        assert agent.running
        assert agent._rooms.node_guard.held
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(30)


HOLD_LEASE = """
import sys, time
from kubecore._util.clock import SystemClock
from kubecore._agent.node_lease import NodeNameGuard
from kubecore_docker import DockerOptions, DockerRuntime

runtime = DockerRuntime(DockerOptions(base_url=sys.argv[1]))
NodeNameGuard(runtime, sys.argv[2], SystemClock(), on_lost=lambda lease: None).acquire()
print("held", flush=True)
time.sleep(300)
"""


def docker_errors() -> Any:
    import docker.errors

    return docker.errors


def test_a_second_kubecore_run_with_the_node_name_exits_naming_the_first(
    engine: TestEngine, raw: Any, node_name: str, tmp_path: Path
) -> None:
    def command(root: str) -> list[str]:
        return [
            sys.executable, "-m", "kubecore", "run", "--runtime", "docker",
            "--runtime-option", f"base_url={engine.base_url}",
            "--runtime-option", f"sandbox_image={engine.pause_image}",
            "--root-dir", str(tmp_path / root), "--port", str(free_port()),
            "--node-name", node_name, "--log-level", "warning",
        ]  # fmt: skip

    first = subprocess.Popen(command("first"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: lease_holder_pid(raw, node_name), 30, what="the first agent's lease")
        assert lease_holder_pid(raw, node_name) == first.pid
        second = subprocess.run(
            command("second"), capture_output=True, text=True, timeout=60, check=False
        )
        assert second.returncode == 1, second.stdout + second.stderr
        assert f"node name '{node_name}' is in use" in second.stderr
        assert f"process {first.pid} on host" in second.stderr
        assert "--node-name" in second.stderr
        assert lease_holder_pid(raw, node_name) == first.pid  # the refused one took nothing
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(30)
    assert lease_holder_pid(raw, node_name) is None  # a clean stop gives the lease up


def lease_holder_pid(raw: Any, node_name: str) -> int | None:
    try:
        labels = raw.inspect_container(lease_name(node_name))["Config"]["Labels"]
    except docker_errors().NotFound:
        return None
    return int(labels[f"{LEASE_LABEL}.pid"])
