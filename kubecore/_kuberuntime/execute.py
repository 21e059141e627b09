"""Carries a pod's ``PodActions`` out through the runtime, in a fixed order.

kill pod -> kill containers -> resize containers -> remove old sandboxes -> set up volumes ->
create sandbox -> sidecars and the next init container -> app containers. The first failure stops
the pass (its error is returned and an event recorded); the next sync plans again from what the
runtime then shows. Backoff bookkeeping (CrashLoopBackOff and ImagePullBackOff) lives in the
``PodRecord`` the pod's worker keeps: the executor carries a copy through the pass and returns it
(``SyncResult.record``), the worker's own is never changed.

Mechanism only: the plan decides what starts, with which restart count, and whether a start
follows a crash (and so grows the crash back-off); admission decides which pods may run at all.
Each step is done by its own part: ``sandbox``, ``containers``, ``images``, ``hooks``, ``kill``.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Callable, Mapping

import attrs

from kubecore._config.objects import ObjectStore
from kubecore._contract.errors import (
    ContainerRuntimeError,
    CreateContainerConfigError,
    ImageNeverPull,
    ImagePullError,
    KubecoreError,
    MountFailed,
    StillStarting,
)
from kubecore._contract.observed import ObservedPod
from kubecore._contract.protocols import ContainerRuntime, EventRecorder, HealthChecker, Puller
from kubecore._contract.values import DNSConfig, EventType
from kubecore._kuberuntime.containers import Containers, spec_of
from kubecore._kuberuntime.credentials import Keyring, PullSecrets
from kubecore._kuberuntime.env import NodeInfo, ObjectReader
from kubecore._kuberuntime.hooks import Hooks
from kubecore._kuberuntime.images import Images
from kubecore._kuberuntime.kill import Killer, kill_message
from kubecore._kuberuntime.pod_events import PodEvents
from kubecore._kuberuntime.pod_record import PodRecord
from kubecore._kuberuntime.sandbox import Sandboxes
from kubecore._kuberuntime.start_journal import StartJournal
from kubecore._model.v1 import Pod
from kubecore._observability.events import EventReason
from kubecore._observability.metrics import Metrics
from kubecore._planner.actions import PodActions, Waiting
from kubecore._planner.backoff import next_backoff
from kubecore._util.clock import Clock
from kubecore._util.ratelimit import TokenBucket
from kubecore._volumes.pod_dirs import VolumeManager

logger = logging.getLogger(__name__)


@attrs.frozen
class SyncResult:
    """What one pass over a pod's actions did, and where it stopped."""

    actions: PodActions
    error: str = ""
    started: tuple[str, ...] = ()
    killed: tuple[str, ...] = ()
    failure: Waiting | None = None
    """The container whose start failed, with the reason its status shows until the next try
    (``ErrImagePull``, ``ErrImageNeverPull``, ``CreateContainerConfigError``, ...)."""
    preempted: str = ""
    """The step the sync stopped before because its work was no longer current ('' if it ran
    to the end)."""
    record: PodRecord = attrs.field(factory=PodRecord)
    """The pod's record after the pass (back-offs, refusals reported, ...): the worker keeps it
    in place of the one it gave."""

    @property
    def ok(self) -> bool:
        return not self.error


def _start_failure_reason(exc: Exception) -> str:
    """The waiting reason Kubernetes shows for a container whose start failed this way."""
    if isinstance(exc, CreateContainerConfigError):
        return "CreateContainerConfigError"
    if isinstance(exc, ImageNeverPull):
        return "ErrImageNeverPull"
    if isinstance(exc, ImagePullError):
        return "ErrImagePull"
    if isinstance(exc, MountFailed):
        return "CreateContainerConfigError"  # a subPath the kubelet could not prepare
    if isinstance(exc, StillStarting):
        return "ContainerCreating"  # the runtime's start of the earlier instance goes on
    return "CreateContainerError"


def _starts_anything(actions: PodActions) -> bool:
    return bool(
        actions.create_sandbox
        or actions.next_init_container is not None
        or actions.sidecars_to_start
        or actions.containers_to_start
        or actions.ephemeral_containers_to_start
    )


@attrs.define
class _Progress:
    """How far one pass went: its step, what it killed and started."""

    actions: PodActions
    current: Callable[[], bool] | None
    record: PodRecord
    step: str = "start"
    starting: str | None = None
    started: list[str] = attrs.Factory(list)
    killed: list[str] = attrs.Factory(list)

    def still_current(self, step: str) -> bool:
        """Enter ``step`` if its work is still wanted (``current``); False: stop here."""
        self.step = step
        return self.current is None or self.current()

    def result(self, error: str = "", failure: Waiting | None = None) -> SyncResult:
        return SyncResult(
            self.actions,
            error,
            tuple(self.started),
            tuple(self.killed),
            failure,
            record=self.record,
        )

    def preempted(self) -> SyncResult:
        return SyncResult(
            self.actions,
            "",
            tuple(self.started),
            tuple(self.killed),
            preempted=self.step,
            record=self.record,
        )


class Executor:
    """Carries pods' plans out through the runtime, each step by the part that does it."""

    def __init__(
        self,
        runtime: ContainerRuntime,
        puller: Puller,
        recorder: EventRecorder,
        clock: Clock,
        volumes: VolumeManager,
        health_checker: HealthChecker,
        *,
        sandbox_image: str = "",
        pull_limiter: TokenBucket | None = None,
        image_lock: threading.Lock | None = None,
        pull_secrets: Mapping[tuple[str, str], Keyring] | None = None,
        backoff_initial: float = 10.0,
        backoff_max: float = 300.0,
        node_name: str = "",
        cluster_domain: str = "",
        node_hosts_file: str = "/etc/hosts",
        objects: ObjectReader | None = None,
        node: NodeInfo | None = None,
        metrics: Metrics | None = None,
        start_journal: StartJournal | None = None,
    ) -> None:
        self.runtime = runtime
        objects = objects if objects is not None else ObjectStore()
        self.events = PodEvents(recorder, clock)
        backoff = functools.partial(next_backoff, initial=backoff_initial, cap=backoff_max)
        self.images = Images(
            puller,
            self.events,
            clock,
            backoff,
            pull_secrets=PullSecrets(objects, pull_secrets),
            pull_limiter=pull_limiter,
            image_lock=image_lock,
        )
        self.sandboxes = Sandboxes(
            runtime,
            self.images,
            volumes,
            self.events,
            sandbox_image=sandbox_image,
            node_name=node_name,
            cluster_domain=cluster_domain,
            node_hosts_file=node_hosts_file,
        )
        hooks = Hooks(runtime, health_checker, clock, self.events)
        self.killer = Killer(runtime, hooks, self.events, clock)
        self.containers = Containers(
            runtime,
            self.images,
            self.sandboxes,
            hooks,
            self.killer,
            self.events,
            backoff,
            clock,
            volumes=volumes,
            objects=objects,
            node=node if node is not None else NodeInfo(name=node_name),
            metrics=metrics or Metrics(),
            node_name=node_name,
            journal=start_journal,
        )

    def execute(
        self,
        pod: Pod,
        actions: PodActions,
        observed: ObservedPod,
        record: PodRecord,
        dns: DNSConfig | None,
        *,
        current: Callable[[], bool] | None = None,
    ) -> SyncResult:
        """Carry ``actions`` out. ``current`` (cheap, asked before each kill, the volumes and
        sandbox, and each container start) says whether this work is still wanted: once it
        answers False (the pod was deleted meanwhile) nothing more is done, and the result
        names the step not taken in ``preempted``. ``record`` is left as it is: the result
        holds the record after the pass (an unexpected error is logged and returned, so what
        the pass did before it is kept)."""
        record = record.copy()
        progress = _Progress(actions, current, record)
        try:
            self._backoff_events(pod, actions, record)
            if actions.failure_reason and actions.failure_reason not in record.warned:
                record.warned.add(actions.failure_reason)
                self.events.record(
                    pod, EventType.NORMAL, actions.failure_reason, actions.failure_message
                )
            if not self._stop(pod, actions, observed, record, progress):
                return progress.preempted()
            if actions.pod_failed or not _starts_anything(actions):
                return progress.result()
            if not self._start(pod, actions, observed, record, dns, progress):
                return progress.preempted()
        except (ContainerRuntimeError, KubecoreError, OSError) as exc:
            logger.warning(
                "sync of pod %s/%s stopped at %s: %s",
                pod.metadata.namespace,
                pod.metadata.name,
                progress.step,
                exc,
                extra={"pod": pod.full_name},
            )
            failure = None
            if progress.starting is not None:
                failure = Waiting(progress.starting, _start_failure_reason(exc), str(exc))
            return progress.result(f"{progress.step}: {exc}", failure)
        except Exception as exc:
            logger.exception(
                "sync of pod %s/%s failed",
                pod.metadata.namespace,
                pod.metadata.name,
                extra={"pod": pod.full_name},
            )
            return progress.result(f"unexpected error: {exc!r}")
        return progress.result()

    def _stop(
        self,
        pod: Pod,
        actions: PodActions,
        observed: ObservedPod,
        record: PodRecord,
        progress: _Progress,
    ) -> bool:
        """The pass's first half: kill what the plan says, resize in place, remove the old
        sandboxes. False: stopped before a kill (the work is no longer current)."""
        if actions.kill_pod:
            progress.step = "kill pod"
            progress.killed.extend(self.killer.kill_pod(pod, observed))
        for kill in actions.containers_to_kill:
            if not progress.still_current(f"kill container {kill.name}"):
                return False
            rc = next((c for c in observed.containers if c.id == kill.container_id), None)
            self.killer.kill_container(
                pod, kill.container_id, kill.name, rc, kill_message(kill), grace=kill.grace_period
            )
            progress.killed.append(kill.name)
        for resize in actions.containers_to_resize:
            progress.step = f"resize container {resize.name}"
            self.containers.resize(pod, resize, record)
        for sandbox_id in actions.sandboxes_to_remove:
            progress.step = "remove sandbox"
            self.runtime.remove_sandbox(sandbox_id)
        return True

    def _start(
        self,
        pod: Pod,
        actions: PodActions,
        observed: ObservedPod,
        record: PodRecord,
        dns: DNSConfig | None,
        progress: _Progress,
    ) -> bool:
        """The pass's second half: the volumes, the sandbox, then the containers to start in
        order. False: stopped before a step (the work is no longer current)."""
        if not progress.still_current("set up volumes"):
            return False
        volumes = self.sandboxes.set_up_volumes(pod, record)
        progress.step = "create sandbox" if actions.create_sandbox else "start"
        target = self.sandboxes.target(pod, actions, observed, dns, volumes)
        for start in actions.ephemeral_containers_to_start:
            name = pod.spec.ephemeral_containers[start.index].name
            if not progress.still_current(f"start ephemeral container {name}"):
                return False
            progress.starting = name
            self.containers.start_ephemeral(pod, start, target=target, record=record)
            progress.started.append(name)
        init = actions.next_init_container
        starts = [(start, True) for start in actions.sidecars_to_start]
        starts += [(init, True)] if init is not None else []
        starts += [(start, False) for start in actions.containers_to_start]
        for start, is_init in starts:
            container = spec_of(pod, start, is_init=is_init)
            kind = "init container" if is_init else "container"
            if not progress.still_current(f"start {kind} {container.name}"):
                return False
            progress.starting = container.name
            self.containers.start(pod, start, is_init=is_init, target=target, record=record)
            progress.started.append(container.name)
        return True

    def _backoff_events(self, pod: Pod, actions: PodActions, record: PodRecord) -> None:
        """A back-off event for each container that waits in one, once per back-off."""
        for waiting in actions.waiting:
            if waiting.reason == "CrashLoopBackOff":
                entry = record.crash_backoff.get(waiting.name)
                key = f"crash/{waiting.name}"
                message = (
                    f"Back-off restarting failed container {waiting.name}"
                    f" in pod {pod.metadata.name}"
                )
                type_ = EventType.WARNING
                reason = EventReason.BACK_OFF_START_CONTAINER
            elif waiting.reason == "ImagePullBackOff":
                entry = record.image_backoff.get(waiting.name)
                key = f"image/{waiting.name}"
                image = next(
                    (
                        c.image
                        for c in (
                            *pod.spec.init_containers,
                            *pod.spec.containers,
                            *pod.spec.ephemeral_containers,
                        )
                        if c.name == waiting.name
                    ),
                    "",
                )
                message = f'Back-off pulling image "{image}"'
                type_ = EventType.NORMAL
                reason = EventReason.BACK_OFF_PULL_IMAGE
            else:
                continue
            until = entry.until if entry is not None else math.inf
            if record.backoff_events.get(key) == until:
                continue
            record.backoff_events[key] = until
            init = any(c.name == waiting.name for c in pod.spec.init_containers)
            self.events.record(pod, type_, reason, message, waiting.name, init=init)

    def kill_pod(
        self,
        pod: Pod | None,
        observed: ObservedPod,
        left: Callable[[], float] | None = None,
    ) -> list[str]:
        """Stop every container and sandbox of a pod (``Killer.kill_pod``)."""
        return self.killer.kill_pod(pod, observed, left)

    def remove_pod(self, observed: ObservedPod) -> None:
        """Remove every container and sandbox of a pod, already stopped."""
        self.killer.remove_pod(observed)
