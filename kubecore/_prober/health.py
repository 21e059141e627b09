"""The default HealthChecker: exec through the runtime, HTTP GET, TCP connect, gRPC health.

gRPC probes need the ``grpc`` extra (``pip install kubecore[grpc]``: grpcio and
grpcio-health-checking), imported only when a gRPC probe runs; without it the agent's admission
refuses pods with gRPC probes (``grpc_unavailable``).
"""

from __future__ import annotations

import http.client
import importlib
import logging
import socket
import ssl

from kubecore._contract.errors import ContainerRuntimeError, RuntimeTimeout
from kubecore._contract.protocols import ContainerRuntime
from kubecore._contract.values import ProbeOutcome, ProbeResult, ProbeTarget
from kubecore._model.v1 import GRPCAction, HTTPGetAction, Probe, TCPSocketAction

logger = logging.getLogger(__name__)

USER_AGENT = "kube-probe/kubecore"
_MAX_BODY = 10 * 1024


def resolve_port(port: int | str, named_ports: dict[str, int] | None) -> int:
    """A probe's port: a number, a numeric string, or the name of one of the container's ports."""
    if isinstance(port, int):
        value = port
    elif port.isdigit():
        value = int(port)
    elif named_ports and port in named_ports:
        value = named_ports[port]
    else:
        raise ValueError(f"port {port!r} is not a number nor a named port of the container")
    if not 0 < value < 65536:
        raise ValueError(f"port {value} is out of range")
    return value


GRPC_EXTRA_HINT = "install kubecore's grpc extra: pip install 'kubecore[grpc]'"


_GRPC_MODULES = ("grpc", "grpc_health.v1.health_pb2", "grpc_health.v1.health_pb2_grpc")


def grpc_unavailable() -> str:
    """Why gRPC probes cannot run here ('' when they can)."""
    for name in _GRPC_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return f"gRPC probes need grpcio and grpcio-health-checking ({exc}); {GRPC_EXTRA_HINT}"
    return ""


def grpc_health_check(host: str, port: int, service: str, timeout: float) -> ProbeResult:
    """One ``grpc.health.v1.Health/Check`` call over plaintext, as the kubelet's gRPC prober:
    SERVING is success, any other answer or error a failure."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    with grpc.insecure_channel(target) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            return ProbeResult(
                ProbeOutcome.FAILURE,
                f"timeout: failed to connect service {target!r} within {timeout:g}s",
            )
        stub = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest(service=service)
        try:
            response = stub.Check(request, timeout=timeout, metadata=(("user-agent", USER_AGENT),))
        except grpc.RpcError as exc:
            code = exc.code() if callable(getattr(exc, "code", None)) else None
            details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
            if code == grpc.StatusCode.UNIMPLEMENTED:
                message = (
                    "this server does not implement the grpc health protocol"
                    f" (grpc.health.v1.Health): {details}"
                )
            elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
                message = f"timeout: health rpc did not complete within {timeout:g}s"
            else:
                message = f"error: health rpc probe failed: {code}: {details}"
            return ProbeResult(ProbeOutcome.FAILURE, message)
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
    if response.status != health_pb2.HealthCheckResponse.SERVING:
        return ProbeResult(ProbeOutcome.FAILURE, f"service unhealthy (responded with {status!r})")
    return ProbeResult(ProbeOutcome.SUCCESS, "")


def _host(host: str, target: ProbeTarget) -> str:
    resolved = host or target.pod_ip
    if not resolved:
        raise ValueError("the probe names no host and the pod has no IP")
    return resolved


class DefaultHealthChecker:
    """Runs one probe once. Never raises: a broken check is FAILURE, one that could not run
    (the container is gone, the runtime is down) is UNKNOWN."""

    def __init__(self, runtime: ContainerRuntime) -> None:
        self._runtime = runtime

    def check(self, probe: Probe, target: ProbeTarget) -> ProbeResult:
        timeout = float(max(probe.timeout_seconds, 1))
        try:
            if probe.exec is not None:
                return self._exec(list(probe.exec.command), target, timeout)
            if probe.http_get is not None:
                return self._http(probe.http_get, target, timeout)
            if probe.tcp_socket is not None:
                return self._tcp(probe.tcp_socket, target, timeout)
            if probe.grpc is not None:
                return self._grpc(probe.grpc, target, timeout)
        except Exception as exc:  # never raise out of a probe
            logger.debug("probe of %s could not run", target.container_id, exc_info=True)
            return ProbeResult(ProbeOutcome.UNKNOWN, f"probe error: {exc}")
        return ProbeResult(
            ProbeOutcome.UNKNOWN, "the probe names no check (exec, httpGet, tcpSocket, grpc)"
        )

    def _grpc(self, action: GRPCAction, target: ProbeTarget, timeout: float) -> ProbeResult:
        missing = grpc_unavailable()
        if missing:
            return ProbeResult(ProbeOutcome.UNKNOWN, missing)
        host = _host("", target)
        return grpc_health_check(host, resolve_port(action.port, None), action.service, timeout)

    def _exec(self, command: list[str], target: ProbeTarget, timeout: float) -> ProbeResult:
        if not command:
            return ProbeResult(ProbeOutcome.FAILURE, "exec probe with an empty command")
        try:
            result = self._runtime.exec_sync(target.container_id, command, timeout)
        except RuntimeTimeout:
            return ProbeResult(
                ProbeOutcome.FAILURE, f"command {command!r} timed out after {timeout:g}s"
            )
        except ContainerRuntimeError as exc:
            return ProbeResult(ProbeOutcome.UNKNOWN, f"exec failed: {exc}")
        if result.exit_code == 0:
            return ProbeResult(
                ProbeOutcome.SUCCESS, result.stdout.decode(errors="replace")[:_MAX_BODY]
            )
        output = (result.stdout + result.stderr).decode(errors="replace").strip()[:_MAX_BODY]
        message = f"command {command!r} exited with {result.exit_code}"
        return ProbeResult(ProbeOutcome.FAILURE, f"{message}: {output}" if output else message)

    def _http(self, action: HTTPGetAction, target: ProbeTarget, timeout: float) -> ProbeResult:
        host = _host(action.host, target)
        port = resolve_port(action.port, dict(target.named_ports))
        path = action.path or "/"
        if not path.startswith("/"):
            path = "/" + path
        headers = {"User-Agent": USER_AGENT, "Accept": "*/*"}
        for header in action.http_headers:
            headers[header.name] = header.value
        url = f"{action.scheme.lower()}://{host}:{port}{path}"
        conn: http.client.HTTPConnection
        if action.scheme == "HTTPS":
            # Like the kubelet: probes do not verify the server's certificate.
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            body = response.read(_MAX_BODY).decode(errors="replace")
            status = response.status
        except TimeoutError:
            return ProbeResult(ProbeOutcome.FAILURE, f"Get {url}: timeout after {timeout:g}s")
        except (OSError, http.client.HTTPException) as exc:
            return ProbeResult(ProbeOutcome.FAILURE, f"Get {url}: {exc}")
        finally:
            conn.close()
        if 200 <= status < 400:
            return ProbeResult(
                ProbeOutcome.SUCCESS, f"HTTP probe succeeded with statuscode: {status}"
            )
        return ProbeResult(
            ProbeOutcome.FAILURE,
            f"HTTP probe failed with statuscode: {status} {body[:200]}".strip(),
        )

    def _tcp(self, action: TCPSocketAction, target: ProbeTarget, timeout: float) -> ProbeResult:
        host = _host(action.host, target)
        port = resolve_port(action.port, dict(target.named_ports))
        try:
            with socket.create_connection((host, port), timeout=timeout):
                pass
        except TimeoutError:
            return ProbeResult(ProbeOutcome.FAILURE, f"dial tcp {host}:{port}: i/o timeout")
        except OSError as exc:
            return ProbeResult(ProbeOutcome.FAILURE, f"dial tcp {host}:{port}: {exc}")
        return ProbeResult(ProbeOutcome.SUCCESS)
