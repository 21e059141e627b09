"""Stopping containers and pods within a grace period: the one home of that rule.

A kill has a deadline on the monotonic clock: the end of the pod's grace period (or of a failed
probe's own), or of a terminating pod's, which can come closer while the kill runs. The time left
is read from that deadline at each step: "Killing", the preStop hook (if the spec has one)
bounded by the time left, then a stop with the time left after the hook. A stop is never given
under ``MIN_GRACE_PERIOD`` (the kubelet's two-second floor). A pod's containers stop at once,
group after group (``stop_groups``: sidecars after the others), then its sandboxes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import attrs

from kubecore._contract.labels import grace_period, pod_identity
from kubecore._contract.observed import ObservedPod, container_name
from kubecore._contract.protocols import ContainerRuntime
from kubecore._contract.values import EventType, RuntimeContainer, RuntimeState, SandboxState
from kubecore._kuberuntime.hooks import Hooks
from kubecore._kuberuntime.pod_events import PodEvents
from kubecore._model.v1 import Pod
from kubecore._observability.events import EventReason, pod_reference
from kubecore._planner.actions import ContainerToKill, KillReason
from kubecore._util.clock import Clock

MIN_GRACE_PERIOD = 2.0
DEFAULT_GRACE_PERIOD = 30.0
STOP_CONCURRENCY = 16
"""Containers of one pod stopped at once (the kubelet stops all of them concurrently)."""


class Deadline(Protocol):
    """The end of a grace period, which may come closer (a terminating pod's)."""

    def remaining(self, now: float) -> float:
        """Seconds left of the grace period at ``now`` (monotonic)."""
        ...


@attrs.frozen
class FixedDeadline:
    """A grace period that ends at ``end`` (monotonic), whatever happens meanwhile."""

    end: float

    def remaining(self, now: float) -> float:
        return self.end - now


def grace_of(pod: Pod | None, c: RuntimeContainer | None = None) -> float:
    """A kill's grace period: the pod's, else (a pod the agent never knew) the one its
    container's annotation carries, else the default."""
    if pod is not None:
        return float(pod.spec.termination_grace_period_seconds)
    if c is None:
        return DEFAULT_GRACE_PERIOD
    return grace_period(c.annotations, DEFAULT_GRACE_PERIOD)


def time_left(clock: Clock, deadline: Deadline) -> Callable[[], float]:
    """The time left until ``deadline``, read from ``clock`` each time it is asked."""
    return functools.partial(_seconds_left, clock, deadline)


def _seconds_left(clock: Clock, deadline: Deadline) -> float:
    return deadline.remaining(clock.monotonic())


def stop_within(runtime: ContainerRuntime, container_id: str, left: float) -> None:
    """Stop a container with ``left`` seconds of its grace period, never under
    ``MIN_GRACE_PERIOD`` (the kubelet's two-second floor)."""
    runtime.stop_container(container_id, max(MIN_GRACE_PERIOD, left))


def kill_message(kill: ContainerToKill) -> str:
    """What the "Killing" event of a planned kill says."""
    if kill.reason is KillReason.LIVENESS_FAILED:
        return f"Container {kill.name} failed liveness probe, will be restarted"
    if kill.reason is KillReason.STARTUP_FAILED:
        return f"Container {kill.name} failed startup probe, will be restarted"
    if kill.reason is KillReason.SPEC_CHANGED:
        return f"Container {kill.name} definition changed, will be restarted"
    text = f"Stopping container {kill.name}: {kill.reason.value}"
    return f"{text} ({kill.message})" if kill.message else text


def stop_groups(
    pod: Pod | None, containers: Iterable[RuntimeContainer]
) -> list[list[RuntimeContainer]]:
    """How a pod's containers stop, as the kubelet: group after group, the containers of a group
    at once; first every container but the sidecars, then the sidecars one at a time, the last
    started first (the reverse of their order in ``initContainers``)."""
    containers = list(containers)
    sidecars: dict[str, int] = {}
    if pod is not None:
        sidecars = {c.name: i for i, c in enumerate(pod.spec.init_containers) if c.is_sidecar}
    if pod is None or not sidecars:
        return [containers] if containers else []
    last = len(pod.spec.init_containers)
    groups: dict[int, list[RuntimeContainer]] = {}
    for c in containers:
        index = sidecars.get(container_name(c))
        groups.setdefault(0 if index is None else last - index, []).append(c)
    return [groups[rank] for rank in sorted(groups)]


def run_at_once(tasks: Sequence[Callable[[], object]], name: str = "kubecore-stop") -> None:
    """Run ``tasks`` concurrently, on up to ``STOP_CONCURRENCY`` threads (a single task in this
    thread), and wait for all of them; the first error raised is raised again once all ended."""
    if len(tasks) <= 1:
        for task in tasks:
            task()
        return
    workers = min(len(tasks), STOP_CONCURRENCY)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name) as pool:
        futures = [pool.submit(task) for task in tasks]
    for future in futures:
        error = future.exception()
        if error is not None:
            raise error


class Killer:
    """Kills containers and pods through the runtime, each within its grace period."""

    def __init__(
        self, runtime: ContainerRuntime, hooks: Hooks, events: PodEvents, clock: Clock
    ) -> None:
        self.runtime = runtime
        self.hooks = hooks
        self.events = events
        self.clock = clock

    def kill_container(
        self,
        pod: Pod | None,
        container_id: str,
        name: str,
        rc: RuntimeContainer | None,
        message: str,
        *,
        orphan_ref: tuple[str, str, str] | None = None,
        grace: float | None = None,
        left: Callable[[], float] | None = None,
    ) -> None:
        """The one way a container is killed within a grace period: "Killing", its preStop hook
        (if the spec has one) bounded by the time left, then a stop with the time left after the
        hook (``stop_within``: never under two seconds). The time left is ``left()`` when given
        (a terminating pod's deadline, which can shorten during the hook), else what remains of
        ``grace`` (a failed probe's own) or of the pod's grace period from now."""
        if left is None:
            end = self.clock.monotonic() + (grace if grace is not None else grace_of(pod, rc))
            left = time_left(self.clock, FixedDeadline(end))
        if pod is not None:
            self.events.record(pod, EventType.NORMAL, EventReason.KILLING_CONTAINER, message, name)
        elif orphan_ref is not None:
            ns, pod_name, uid = orphan_ref
            ref = pod_reference(ns, pod_name, uid, name)
            self.events.record_about(ref, EventType.NORMAL, EventReason.KILLING_CONTAINER, message)
        spec = None
        if pod is not None:
            spec = next(
                (c for c in (*pod.spec.containers, *pod.spec.init_containers) if c.name == name),
                None,
            )
        hook = spec.lifecycle.pre_stop if spec is not None and spec.lifecycle else None
        running = rc is None or rc.state is RuntimeState.RUNNING
        if hook is not None and pod is not None and spec is not None and running:
            # bounded by the time left (never 0: an exec timeout of 0 means none)
            self.hooks.pre_stop(pod, spec, container_id, hook, max(MIN_GRACE_PERIOD, left()))
        stop_within(self.runtime, container_id, left())

    def kill_pod(
        self,
        pod: Pod | None,
        observed: ObservedPod,
        left: Callable[[], float] | None = None,
    ) -> list[str]:
        """Stop every container of the pod, at once (``stop_groups``: sidecars after the
        others), each by ``kill_container`` (``left``: the time left of the pod's termination,
        else each container's grace period), then its sandboxes; the names of those killed
        running. A container created but not running gets the two-second floor."""
        killed: list[str] = []
        for group in stop_groups(pod, observed.containers):
            stops: list[Callable[[], object]] = []
            for c in group:
                if c.state is RuntimeState.EXITED:
                    continue
                if c.state is not RuntimeState.RUNNING:
                    stops.append(functools.partial(stop_within, self.runtime, c.id, 0.0))
                    continue
                name = container_name(c)
                message = f"Stopping container {name}"
                ref = pod_identity(c.labels)
                stops.append(
                    functools.partial(
                        self.kill_container, pod, c.id, name, c, message, orphan_ref=ref, left=left
                    )
                )
                killed.append(name)
            run_at_once(stops)
        for s in observed.sandboxes:
            if s.state is SandboxState.READY:
                self.runtime.stop_sandbox(s.id)
        return killed

    def remove_pod(self, observed: ObservedPod) -> None:
        """Remove every container and sandbox of a pod (already stopped)."""
        for c in observed.containers:
            self.runtime.remove_container(c.id)
        for s in observed.sandboxes:
            self.runtime.remove_sandbox(s.id)
