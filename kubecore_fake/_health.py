"""``FakeHealthChecker``: probes answered by the fake runtime, never by a network."""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Iterable
from typing import Literal

from kubecore import ContainerRuntimeError
from kubecore.runtime import (
    CONTAINER_NAME_LABEL,
    Conflict,
    NotFound,
    ProbeOutcome,
    ProbeResult,
    ProbeTarget,
    RuntimeContainer,
    RuntimeState,
    RuntimeTimeout,
)
from kubecore.v1 import Probe
from kubecore_fake._runtime import FakeRuntime

logger = logging.getLogger(__name__)

ProbeKind = Literal["exec", "http", "tcp", "grpc", "any"]
OutcomeLike = ProbeOutcome | ProbeResult | bool


def _as_result(outcome: OutcomeLike) -> ProbeResult:
    if isinstance(outcome, ProbeResult):
        return outcome
    if isinstance(outcome, bool):
        return ProbeResult(ProbeOutcome.SUCCESS if outcome else ProbeOutcome.FAILURE, "scripted")
    return ProbeResult(outcome, "scripted")


class FakeHealthChecker:
    """A ``HealthChecker`` over a ``FakeRuntime``.

    * exec probes run through the runtime's ``exec_sync`` (its ``on_exec`` rules or its reading
      of the command): exit 0 is SUCCESS, anything else FAILURE, a timeout FAILURE.
    * HTTP, TCP and gRPC probes answer a scripted outcome (``set_probe``) if there is one; else,
      when containers of the pod declare listening ports, SUCCESS only for a port one of them
      listens on; else SUCCESS while the container runs and FAILURE otherwise.

    ``set_probe(container, kind, outcome)``: ``container`` is an id or a container name, ``kind``
    one of exec/http/tcp/grpc/any; ``outcome`` a ``ProbeOutcome``, ``ProbeResult``, bool, or a
    sequence of them answered in turn (the last one repeats).
    """

    def __init__(self, runtime: FakeRuntime) -> None:
        self._runtime = runtime
        self._lock = threading.Lock()
        self._scripted: dict[tuple[str, str], collections.deque[ProbeResult]] = {}
        self._checks: list[tuple[str, str, ProbeResult]] = []

    def set_probe(
        self,
        container: str,
        kind: ProbeKind,
        outcome: OutcomeLike | Iterable[OutcomeLike],
    ) -> None:
        """Script the outcomes of one container's probes of ``kind`` (``exec``, ``http``, ``tcp``,
        ``grpc`` or ``any``): one outcome for every check, or several, one a check, the last
        repeated. Raises ``ValueError`` for an unknown kind or no outcome."""
        if kind not in ("exec", "http", "tcp", "grpc", "any"):
            raise ValueError(f"unknown probe kind {kind!r}")
        if isinstance(outcome, ProbeOutcome | ProbeResult | bool):
            results = [_as_result(outcome)]
        else:
            results = [_as_result(o) for o in outcome]
        if not results:
            raise ValueError("set_probe needs at least one outcome")
        with self._lock:
            self._scripted[(container, kind)] = collections.deque(results)

    def clear_probe(self, container: str, kind: ProbeKind = "any") -> None:
        """Forget what ``set_probe`` scripted for the container's probes of ``kind``."""
        with self._lock:
            self._scripted.pop((container, kind), None)

    @property
    def checks(self) -> list[tuple[str, str, ProbeResult]]:
        """Every check so far: (container id, kind, result)."""
        with self._lock:
            return list(self._checks)

    def check(self, probe: Probe, target: ProbeTarget) -> ProbeResult:
        kind = (
            "exec"
            if probe.exec
            else "http"
            if probe.http_get
            else "tcp"
            if probe.tcp_socket
            else "grpc"
            if probe.grpc
            else ""
        )
        try:
            result = self._check(probe, target, kind)
        except Exception as exc:  # a checker never raises
            logger.exception("fake probe failed", extra={"container_id": target.container_id})
            result = ProbeResult(ProbeOutcome.UNKNOWN, f"probe error: {exc}")
        with self._lock:
            self._checks.append((target.container_id, kind, result))
        return result

    def _check(self, probe: Probe, target: ProbeTarget, kind: str) -> ProbeResult:
        if not kind:
            return ProbeResult(
                ProbeOutcome.UNKNOWN, "the probe has no exec, httpGet, tcpSocket or grpc"
            )
        try:
            container = self._runtime.container_status(target.container_id)
        except NotFound:
            return ProbeResult(ProbeOutcome.UNKNOWN, f"container {target.container_id} not found")
        scripted = self._scripted_result(container, kind)
        if scripted is not None:
            return scripted
        if probe.exec is not None:
            return self._exec(probe, container)
        action = probe.http_get or probe.tcp_socket or probe.grpc
        assert action is not None
        port = action.port
        if isinstance(port, str):
            if port.isdigit():
                port = int(port)
            elif port in target.named_ports:
                port = target.named_ports[port]
            else:
                return ProbeResult(ProbeOutcome.FAILURE, f"unknown named port {port!r}")
        if container.state is not RuntimeState.RUNNING:
            return ProbeResult(ProbeOutcome.FAILURE, "connection refused: container not running")
        listening = (
            self._runtime.listening_ports(container.sandbox_id)
            if container.sandbox_id
            else frozenset()
        )
        if listening and port not in listening:
            return ProbeResult(
                ProbeOutcome.FAILURE, f"dial tcp {target.pod_ip}:{port}: connection refused"
            )
        if kind == "http":
            return ProbeResult(ProbeOutcome.SUCCESS, "HTTP 200")
        return ProbeResult(ProbeOutcome.SUCCESS)

    def _exec(self, probe: Probe, container: RuntimeContainer) -> ProbeResult:
        assert probe.exec is not None
        try:
            result = self._runtime.exec_sync(
                container.id, list(probe.exec.command), float(probe.timeout_seconds)
            )
        except RuntimeTimeout:
            return ProbeResult(
                ProbeOutcome.FAILURE, f"command timed out after {probe.timeout_seconds}s"
            )
        except Conflict as exc:
            return ProbeResult(ProbeOutcome.FAILURE, str(exc))
        except ContainerRuntimeError as exc:
            return ProbeResult(ProbeOutcome.UNKNOWN, str(exc))
        output = (result.stdout + result.stderr).decode(errors="replace").strip()
        if result.exit_code == 0:
            return ProbeResult(ProbeOutcome.SUCCESS, output)
        return ProbeResult(
            ProbeOutcome.FAILURE, output or f"command exited with code {result.exit_code}"
        )

    def _scripted_result(self, container: RuntimeContainer, kind: str) -> ProbeResult | None:
        names = (
            container.id,
            container.labels.get(CONTAINER_NAME_LABEL, container.name),
            container.name,
        )
        with self._lock:
            for name in names:
                for k in (kind, "any"):
                    queue = self._scripted.get((name, k))
                    if queue:
                        return queue.popleft() if len(queue) > 1 else queue[0]
        return None
