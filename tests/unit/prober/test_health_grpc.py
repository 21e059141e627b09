"""gRPC probes against a real ``grpc.health.v1`` server on 127.0.0.1 (grpcio's health servicer),
and their refusal at admission where the gRPC client is not installed."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.admission.admit import Admission
from kubecore._agent.admission.features import GRPC_PROBES_UNAVAILABLE, grpc_rejection
from kubecore._contract.values import ProbeOutcome, ProbeTarget
from kubecore._manifest import load_pods_from_dict
from kubecore._model.v1 import Container, GRPCAction, ObjectMeta, Pod, PodSpec, Probe
from kubecore._prober.health import DefaultHealthChecker

grpc = pytest.importorskip("grpc")
health = pytest.importorskip("grpc_health.v1.health")
health_pb2 = pytest.importorskip("grpc_health.v1.health_pb2")
health_pb2_grpc = pytest.importorskip("grpc_health.v1.health_pb2_grpc")


@pytest.fixture
def server() -> Iterator[tuple[Any, int]]:
    """A gRPC server with the standard health servicer; yields (servicer, port)."""
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, srv)
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    yield servicer, port
    srv.stop(None)


def grpc_probe(port: int, service: str = "") -> Probe:
    return Probe(grpc=GRPCAction(port=port, service=service), timeout_seconds=2)


def check(probe: Probe) -> Any:
    return DefaultHealthChecker(None).check(probe, ProbeTarget("c1", "127.0.0.1"))  # type: ignore[arg-type]


def test_serving_is_success(server: tuple[Any, int]) -> None:
    servicer, port = server
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    assert check(grpc_probe(port)).outcome is ProbeOutcome.SUCCESS


def test_not_serving_is_failure_with_the_status(server: tuple[Any, int]) -> None:
    servicer, port = server
    servicer.set("db", health_pb2.HealthCheckResponse.NOT_SERVING)
    result = check(grpc_probe(port, "db"))
    assert result.outcome is ProbeOutcome.FAILURE
    assert result.message == "service unhealthy (responded with 'NOT_SERVING')"


def test_the_service_is_asked_for(server: tuple[Any, int]) -> None:
    servicer, port = server
    servicer.set("db", health_pb2.HealthCheckResponse.SERVING)
    assert check(grpc_probe(port, "db")).outcome is ProbeOutcome.SUCCESS
    unknown = check(grpc_probe(port, "cache"))
    assert unknown.outcome is ProbeOutcome.FAILURE
    assert "NOT_FOUND" in unknown.message


def test_a_server_without_the_health_service_fails() -> None:
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    try:
        result = check(grpc_probe(port))
    finally:
        srv.stop(None)
    assert result.outcome is ProbeOutcome.FAILURE
    assert "does not implement the grpc health protocol" in result.message


def test_nothing_listening_fails_within_the_timeout() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = check(Probe(grpc=GRPCAction(port=port), timeout_seconds=1))
    assert result.outcome is ProbeOutcome.FAILURE
    assert result.message.startswith("timeout: failed to connect service")


def test_a_grpc_probe_loads_from_a_manifest() -> None:
    data = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "etcd"},
        "spec": {
            "containers": [
                {
                    "name": "etcd",
                    "image": "registry.k8s.io/etcd:3.5.1-0",
                    "ports": [{"containerPort": 2379}],
                    "livenessProbe": {"grpc": {"port": 2379}, "initialDelaySeconds": 10},
                }
            ]
        },
    }
    (pod,) = load_pods_from_dict(data, source_name="etcd")
    probe = pod.spec.containers[0].liveness_probe
    assert probe is not None and probe.grpc == GRPCAction(port=2379)


def pod_with_grpc_probe() -> Pod:
    probe = Probe(grpc=GRPCAction(port=9000))
    return Pod(
        ObjectMeta(name="web", uid="u1"),
        PodSpec(containers=(Container("app", "busybox:1.35", readiness_probe=probe),)),
    )


def test_admitted_where_the_grpc_client_is_installed() -> None:
    assert grpc_rejection(pod_with_grpc_probe()) is None


def test_refused_at_admission_without_the_grpc_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "grpc_health.v1.health_pb2", None)
    admitted, rejected = Admission().admit([pod_with_grpc_probe()])
    assert not admitted
    ((_, rejection),) = rejected
    assert rejection.reason == GRPC_PROBES_UNAVAILABLE
    assert "spec.containers[0].readinessProbe.grpc" in rejection.message
    assert "kubecore[grpc]" in rejection.message


def test_a_grpc_probe_drives_readiness_on_the_agent(tmp_path: Path, server: Any) -> None:
    from kubecore._agent.kubelet import Kubelet, KubeletConfig
    from kubecore._util.clock import ManualClock
    from kubecore_fake import FakeRuntime

    servicer, port = server
    clock = ManualClock()
    runtime = FakeRuntime(clock=clock)
    (tmp_path / "resolv.conf").write_text("nameserver 192.0.2.53\n")
    kubelet = Kubelet(
        runtime,
        runtime,
        config=KubeletConfig(
            root_dir=str(tmp_path / "root"), resolv_conf=str(tmp_path / "resolv.conf")
        ),
        health_checker=_Loopback(DefaultHealthChecker(runtime)),
        clock=clock,
    )
    probe = Probe(grpc=GRPCAction(port=port), period_seconds=1, timeout_seconds=2)
    pod = Pod(
        ObjectMeta(name="web", uid="u1"),
        PodSpec(containers=(Container("app", "busybox:1.35", readiness_probe=probe),)),
    )
    kubelet.set_pods([pod])

    def ready() -> bool:
        found = kubelet.get_pod("default", "web")
        return bool(found and found.status and found.status.container_statuses[0].ready)

    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    for _ in range(5):
        kubelet.sync()
        clock.advance(1)
    assert not ready()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    for _ in range(5):
        kubelet.sync()
        clock.advance(1)
    assert ready()


class _Loopback:
    """The fake's sandboxes have made-up IPs: probe 127.0.0.1 instead."""

    def __init__(self, inner: DefaultHealthChecker) -> None:
        self.inner = inner

    def check(self, probe: Probe, target: ProbeTarget) -> Any:
        return self.inner.check(probe, ProbeTarget(target.container_id, "127.0.0.1"))
