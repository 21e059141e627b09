"""Runtime-facing fields on the real Docker engine: stdin/stdinOnce/tty (``docker inspect`` and
from inside the container), the stop signal, an in-place CPU resize, and a gRPC probe through the
sandbox's IP. (A native sidecar pod end to end, on every engine:
tests/engines/scenarios/test_pod_lifecycle_scenarios.py.)"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kubecore._model.v1 import Pod
from kubecore.runtime import NODE_LABEL
from kubecore_docker import DockerRuntime
from tests.engines.docker.conftest import ContainerFactory, SandboxFactory, TestEngine
from tests.engines.docker.e2e_helpers import AgentFactory, container, get_pod, make_pod, wait_pod
from tests.engines.docker.helpers import bridge_gateway, wait_for

pytestmark = pytest.mark.docker

# Agents of other tests on the shared engine treat objects without a node label, or with their
# node's, as theirs (and kill what they do not want): these tests use a node of their own.
OWN_NODE = {NODE_LABEL: f"sidecars-tests-{uuid.uuid4().hex[:8]}"}  # each process its own


def test_stdin_stdin_once_and_tty_reach_the_engine(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory, raw: Any
) -> None:
    config = make_sandbox(labels=OWN_NODE)
    sandbox_id = runtime.run_sandbox(config)
    cases = {
        "plain": {},
        "tty": {"tty": True},
        "stdin": {"stdin": True},
        "once": {"stdin": True, "stdin_once": True, "tty": True},
    }
    ids = {}
    for name, fields in cases.items():
        container = make_container(name, labels=OWN_NODE, **fields)
        cid = runtime.create_container(sandbox_id, container, config)
        runtime.start_container(cid)
        ids[name] = cid
    for name, fields in cases.items():
        engine_config = raw.inspect_container(ids[name])["Config"]
        seen = (engine_config["OpenStdin"], engine_config["StdinOnce"], engine_config["Tty"])
        wanted = (
            fields.get("stdin", False),
            fields.get("stdin_once", False),
            fields.get("tty", False),
        )
        assert seen == wanted, name
    # Inside: with a tty the container's stdout is a terminal.
    for name, terminal in (("plain", False), ("tty", True)):
        result = runtime.exec_sync(ids[name], ["sh", "-c", "readlink /proc/1/fd/1"], 10)
        assert result.stdout.decode().strip().startswith("/dev/pts/") is terminal, name


def test_the_stop_signal_reaches_the_engine_and_stops_the_container(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory, raw: Any
) -> None:
    config = make_sandbox(labels=OWN_NODE)
    sandbox_id = runtime.run_sandbox(config)
    # Exits 7 on USR1 only: TERM would leave it to be killed (137) after the timeout.
    script = "trap 'exit 7' USR1; trap '' TERM; while :; do sleep 1 & wait $!; done"
    container = make_container(
        "usr1", command=("sh", "-c", script), stop_signal="SIGUSR1", labels=OWN_NODE
    )
    cid = runtime.create_container(sandbox_id, container, config)
    runtime.start_container(cid)
    assert raw.inspect_container(cid)["Config"]["StopSignal"] == "SIGUSR1"
    runtime.stop_container(cid, 10)
    assert raw.inspect_container(cid)["State"]["ExitCode"] == 7


def test_a_cpu_resize_is_applied_in_place_on_docker(
    make_agent: AgentFactory,
    engine: TestEngine,
    namespace: str,
    raw: Any,
) -> None:
    def pod(cpu: str) -> Pod:
        return make_pod(
            "web",
            namespace,
            [
                container(
                    "app",
                    engine.image,
                    resources={"limits": {"cpu": cpu, "memory": "64Mi"}},
                    resizePolicy=[{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                )
            ],
        )

    kubelet = make_agent([pod("500m")], node_name=OWN_NODE[NODE_LABEL])

    def running_id(found: Pod) -> str:
        statuses = found.status.container_statuses if found.status is not None else ()
        if statuses and statuses[0].state.running is not None:
            return statuses[0].container_id.split("://", 1)[1]
        return ""

    first = running_id(wait_pod(kubelet, namespace, "web", lambda p: bool(running_id(p))))
    assert raw.inspect_container(first)["HostConfig"]["CpuQuota"] == 50_000
    kubelet.set_pods([pod("250m")])

    def quota() -> int | None:
        value = raw.inspect_container(first)["HostConfig"]["CpuQuota"]
        return value if value == 25_000 else None

    wait_for(quota, timeout=20, interval=0.2, what="the new CPU quota")
    assert raw.inspect_container(first)["State"]["Running"]
    found = wait_pod(kubelet, namespace, "web", lambda p: bool(running_id(p)))
    assert running_id(found) == first  # the same container: not restarted


def test_a_grpc_probe_reaches_the_pod_through_its_sandbox_ip(
    make_agent: AgentFactory,
    engine: TestEngine,
    namespace: str,
    raw: Any,
) -> None:
    """The test image has no gRPC server: the pod's container relays its port 9000 (busybox
    ``nc -ll -e``) to a grpcio health server the test runs on the engine's bridge gateway, so
    the probe goes to the sandbox IP as the kubelet's does."""
    grpc = pytest.importorskip("grpc")
    health = pytest.importorskip("grpc_health.v1.health")
    health_pb2 = pytest.importorskip("grpc_health.v1.health_pb2")
    health_pb2_grpc = pytest.importorskip("grpc_health.v1.health_pb2_grpc")
    from concurrent import futures

    gateway = bridge_gateway(raw)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port(f"{gateway}:0")
    server.start()
    try:
        servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        relay = ["nc", "-ll", "-p", "9000", "-e", "nc", gateway, str(port)]
        pod = make_pod(
            "grpc",
            namespace,
            [
                container(
                    "relay",
                    engine.image,
                    relay,
                    readinessProbe={"grpc": {"port": 9000}, "periodSeconds": 1},
                )
            ],
        )
        kubelet = make_agent([pod], node_name=OWN_NODE[NODE_LABEL])

        def ready(found: Pod) -> bool:
            statuses = found.status.container_statuses if found.status is not None else ()
            return bool(statuses) and statuses[0].ready

        def running_unready(found: Pod) -> bool:
            statuses = found.status.container_statuses if found.status is not None else ()
            return bool(statuses) and statuses[0].state.running is not None and not ready(found)

        wait_pod(kubelet, namespace, "grpc", running_unready, what="running, not ready")

        def not_serving() -> str | None:
            events = kubelet.views.recent_events(
                namespace=namespace, name="grpc", reason="Unhealthy"
            )
            return next((e.message for e in events if "NOT_SERVING" in e.message), None)

        wait_for(not_serving, timeout=20, interval=0.2, what="an Unhealthy NOT_SERVING event")
        assert not ready(get_pod(kubelet, namespace, "grpc"))
        servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        wait_pod(kubelet, namespace, "grpc", ready, what="ready once SERVING")
    finally:
        server.stop(None)
