"""A container's lifecycle hooks: postStart after it started, preStop before it is stopped.

A hook is a sleep, a command run in the container, or an HTTP GET or TCP check against the pod
(by the health checker, as a probe would be). Running one never raises: it answers whether it
succeeded and why not, and its failure is a Warning event on the container.
"""

from __future__ import annotations

import logging
import math

from kubecore._contract.errors import ContainerRuntimeError
from kubecore._contract.protocols import ContainerRuntime, HealthChecker
from kubecore._contract.values import EventType, ProbeOutcome, ProbeTarget
from kubecore._kuberuntime.pod_events import PodEvents
from kubecore._model.v1 import Container, LifecycleHandler, Pod, Probe
from kubecore._observability.events import EventReason
from kubecore._util.clock import Clock

logger = logging.getLogger(__name__)

HOOK_TIMEOUT = 30.0
"""What a postStart hook may take."""


class Hooks:
    """Runs lifecycle hooks against a pod's containers."""

    def __init__(
        self,
        runtime: ContainerRuntime,
        health_checker: HealthChecker,
        clock: Clock,
        events: PodEvents,
    ) -> None:
        self.runtime = runtime
        self.health_checker = health_checker
        self.clock = clock
        self.events = events

    def run(
        self,
        hook: LifecycleHandler,
        container: Container,
        container_id: str,
        pod_ip: str,
        sandbox_id: str,
        timeout: float,
    ) -> tuple[bool, str]:
        """Run a lifecycle hook; (succeeded, message). Never raises."""
        seconds = max(1, math.ceil(timeout))
        try:
            if hook.sleep is not None:
                # Bounded by what the hook may take (the grace period left, for preStop).
                self.clock.sleep(min(float(hook.sleep.seconds), timeout))
                return True, ""
            if hook.exec is not None:
                result = self.runtime.exec_sync(container_id, list(hook.exec.command), timeout)
                if result.exit_code == 0:
                    return True, ""
                output = (result.stdout + result.stderr).decode(errors="replace").strip()
                return (
                    False,
                    f"command {list(hook.exec.command)!r} exited with {result.exit_code}: {output}",
                )
            if hook.http_get is None and hook.tcp_socket is None:
                return False, "the hook names no action"
            if not pod_ip and not (hook.http_get and hook.http_get.host):
                try:
                    pod_ip = self.runtime.sandbox_status(sandbox_id).ip
                except ContainerRuntimeError:
                    pod_ip = ""
            probe = Probe(
                http_get=hook.http_get, tcp_socket=hook.tcp_socket, timeout_seconds=seconds
            )
            named = {p.name: p.container_port for p in container.ports if p.name}
            outcome = self.health_checker.check(probe, ProbeTarget(container_id, pod_ip, named))
            return outcome.outcome is ProbeOutcome.SUCCESS, outcome.message
        except ContainerRuntimeError as exc:
            return False, str(exc)
        except Exception as exc:
            logger.exception("lifecycle hook of %s failed unexpectedly", container.name)
            return False, str(exc)

    def post_start(
        self,
        pod: Pod,
        container: Container,
        container_id: str,
        hook: LifecycleHandler,
        *,
        is_init: bool,
        pod_ip: str,
        sandbox_id: str,
    ) -> bool:
        """Run the postStart hook of a container just started; False (with a Warning event)
        when it failed: the container is then to be killed (the plan restarts it)."""
        ok, message = self.run(hook, container, container_id, pod_ip, sandbox_id, HOOK_TIMEOUT)
        if not ok:
            self.events.record(
                pod,
                EventType.WARNING,
                EventReason.FAILED_POST_START_HOOK,
                f"PostStartHook failed: {message}",
                container.name,
                init=is_init,
            )
        return ok

    def pre_stop(
        self,
        pod: Pod,
        container: Container,
        container_id: str,
        hook: LifecycleHandler,
        budget: float,
    ) -> None:
        """Run the preStop hook of a container about to be stopped, within ``budget`` seconds
        (a failure is a Warning event; the stop follows all the same)."""
        ok, message = self.run(hook, container, container_id, "", "", budget)
        if not ok:
            self.events.record(
                pod,
                EventType.WARNING,
                EventReason.FAILED_PRE_STOP_HOOK,
                f"PreStopHook failed: {message}",
                container.name,
            )
