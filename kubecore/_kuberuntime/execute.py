"""Carries a pod's ``PodActions`` out through the runtime, in a fixed order.

kill pod -> kill containers -> remove old sandboxes -> create sandbox -> init container -> app
containers. The first failure stops the pass (its error is returned and an event recorded); the
next sync plans again from what the runtime then shows. Backoff bookkeeping (CrashLoopBackOff and
ImagePullBackOff) lives in the ``PodRecord`` the agent keeps per pod.

Mechanism only: the plan decides what starts, with which restart count, and whether a start
follows a crash (and so grows the crash back-off); admission decides which pods may run at all.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import attrs

from kubecore._config.objects import ObjectStore
from kubecore._contract.capabilities import ResourceUpdater
from kubecore._contract.errors import (
    ContainerNotFound,
    ContainerRuntimeError,
    CreateContainerConfigError,
    ImagePullError,
    InvalidConfig,
    KubecoreError,
    MountFailed,
    SandboxUnusable,
)
from kubecore._contract.errors import ImageNeverPull as ImageNeverPull
from kubecore._contract.labels import grace_period, pod_identity
from kubecore._contract.observed import container_name, restart_count
from kubecore._contract.observed import newest_sandbox as _newest_sandbox
from kubecore._contract.protocols import ContainerRuntime, EventRecorder, HealthChecker, Puller
from kubecore._contract.values import (
    DNSConfig,
    Event,
    EventType,
    ProbeOutcome,
    ProbeTarget,
    RuntimeContainer,
    RuntimeSandbox,
    RuntimeState,
    SandboxConfig,
    SandboxState,
)
from kubecore._kuberuntime.credentials import Keyring, PullSecrets, pod_registry_auth
from kubecore._kuberuntime.env import (
    NodeInfo,
    ObjectReader,
    ResolvedContainer,
    container_environment,
    expand_sub_path_expr,
    needs_pod_ip,
)
from kubecore._kuberuntime.security import SECCOMP_DIR, needs_image_user, run_as_non_root_problem
from kubecore._kuberuntime.translate import (
    container_config,
    container_resources,
    managed_hosts_file,
    resources_record,
    sandbox_config,
    sandbox_held_mounts,
)
from kubecore._model.v1 import Container, LifecycleHandler, Pod, Probe
from kubecore._observability.events import EventReason, pod_reference
from kubecore._observability.metrics import Metrics, container_type
from kubecore._planner.actions import (
    BackoffEntry,
    ContainerToKill,
    ContainerToResize,
    ContainerToStart,
    KillReason,
    ObservedPod,
    PodActions,
    Waiting,
)
from kubecore._planner.backoff import next_backoff
from kubecore._util.clock import Clock
from kubecore._util.ratelimit import TokenBucket
from kubecore._volumes.pod_dirs import PodVolume, VolumeManager, read_volume_file

logger = logging.getLogger(__name__)

MIN_GRACE_PERIOD = 2.0
DEFAULT_GRACE_PERIOD = 30.0
HOOK_TIMEOUT = 30.0
STOP_CONCURRENCY = 16
"""Containers of one pod stopped at once (the kubelet stops all of them concurrently)."""
_SUB_PATH_EXPR_WARNING = "subPathExpr"
"""The prefix of ``PodRecord.warned`` keys for subPathExpr expansion failures."""


@attrs.define
class PodRecord:
    """What the agent remembers about one pod between syncs (besides probes)."""

    crash_backoff: dict[str, BackoffEntry] = attrs.field(factory=dict)
    image_backoff: dict[str, BackoffEntry] = attrs.field(factory=dict)
    post_start_failed: set[str] = attrs.field(factory=set)
    resized: dict[str, str] = attrs.field(factory=dict)
    """Container id -> the resources record it was resized to in place."""
    backoff_events: dict[str, float] = attrs.field(factory=dict)
    """(kind, container) -> the backoff deadline an event was already recorded for."""
    warned: set[str] = attrs.field(factory=set)
    """Refusals already reported by an event (not repeated at every sync)."""
    failed_mount: str = ""
    """The last FailedMount reported (an event is recorded when it changes)."""
    pull_seconds: float = 0.0
    """Time spent pulling this pod's images (left out of its start SLI)."""
    worker_started: bool = False
    """Its worker's first sync was timed (``kubelet_pod_worker_start_duration_seconds``)."""


@attrs.frozen
class _Target:
    """Where a pod's new containers go: its sandbox, and what they mount."""

    sandbox_id: str
    sandbox_config: SandboxConfig
    pod_ip: str
    volume_paths: Mapping[str, PodVolume]
    hosts_file: str = ""
    """The pod's managed ``/etc/hosts`` ('' when the pod keeps the runtime's)."""

    def read_volume_file(self, volume: str, path: str) -> str | None:
        """A file a container wrote into one of the pod's volumes (``fileKeyRef``)."""
        found = self.volume_paths.get(volume)
        return None if found is None else read_volume_file(found.host_path, path)


@attrs.frozen
class SyncResult:
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
    return "CreateContainerError"


# The agent's names for the ``_observed`` definitions.
container_name_of = container_name
restart_count_of = restart_count


def grace_of(pod: Pod | None, c: RuntimeContainer | None = None) -> float:
    """A kill's grace period: the pod's, else (a pod the agent never knew) the one its
    container's annotation carries, else the default."""
    if pod is not None:
        return float(pod.spec.termination_grace_period_seconds)
    if c is None:
        return DEFAULT_GRACE_PERIOD
    return grace_period(c.annotations, DEFAULT_GRACE_PERIOD)


def _kill_message(kill: ContainerToKill) -> str:
    if kill.reason is KillReason.LIVENESS_FAILED:
        return f"Container {kill.name} failed liveness probe, will be restarted"
    if kill.reason is KillReason.STARTUP_FAILED:
        return f"Container {kill.name} failed startup probe, will be restarted"
    if kill.reason is KillReason.SPEC_CHANGED:
        return f"Container {kill.name} definition changed, will be restarted"
    text = f"Stopping container {kill.name}: {kill.reason.value}"
    return f"{text} ({kill.message})" if kill.message else text


def _format_duration(seconds: float) -> str:
    return f"{seconds:.3g}s"


class Executor:
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
    ) -> None:
        self.runtime = runtime
        self.metrics = metrics or Metrics()
        self.objects: ObjectReader = objects if objects is not None else ObjectStore()
        self.node = node if node is not None else NodeInfo(name=node_name)
        self.puller = puller
        self.recorder = recorder
        self.clock = clock
        self.volumes = volumes
        self.health_checker = health_checker
        self.sandbox_image = sandbox_image
        self.pull_limiter = pull_limiter
        self.image_lock = image_lock or threading.Lock()
        self.pull_secrets = PullSecrets(self.objects, pull_secrets)
        self.backoff_initial = backoff_initial
        self.node_name = node_name
        self.backoff_max = backoff_max
        self.cluster_domain = cluster_domain
        self.node_hosts_file = node_hosts_file

    def _next_backoff(self, previous: BackoffEntry | None, now: float) -> BackoffEntry:
        return next_backoff(previous, now, initial=self.backoff_initial, cap=self.backoff_max)

    # --- events -----------------------------------------------------------------------------

    def event(
        self,
        pod: Pod,
        type_: EventType,
        reason: str,
        message: str,
        container: str = "",
        *,
        init: bool = False,
    ) -> None:
        meta = pod.metadata
        ref = pod_reference(meta.namespace, meta.name, meta.uid, container, init=init)
        try:
            # The same few messages recur for every pod (kept in the event ring): held once.
            self.recorder.record(Event(ref, type_, reason, sys.intern(message), self.clock.now()))
        except Exception:
            logger.exception("event recorder failed")

    # --- the pass ---------------------------------------------------------------------------

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
        names the step not taken in ``preempted``."""
        started: list[str] = []
        killed: list[str] = []
        step = "start"
        starting: str | None = None

        def preempted(at: str) -> SyncResult | None:
            if current is None or current():
                return None
            return SyncResult(actions, "", tuple(started), tuple(killed), preempted=at)

        try:
            self._backoff_events(pod, actions, record)
            if actions.failure_reason and actions.failure_reason not in record.warned:
                record.warned.add(actions.failure_reason)
                self.event(pod, EventType.NORMAL, actions.failure_reason, actions.failure_message)
            if actions.kill_pod:
                step = "kill pod"
                killed.extend(self.kill_pod(pod, observed))
            for kill in actions.containers_to_kill:
                step = f"kill container {kill.name}"
                if stopped := preempted(step):
                    return stopped
                rc = next((c for c in observed.containers if c.id == kill.container_id), None)
                message = _kill_message(kill)
                grace = kill.grace_period
                self.kill_container(pod, kill.container_id, kill.name, rc, message, grace=grace)
                killed.append(kill.name)
            for resize in actions.containers_to_resize:
                step = f"resize container {resize.name}"
                self.resize_container(pod, resize, record)
            for sandbox_id in actions.sandboxes_to_remove:
                step = "remove sandbox"
                self.runtime.remove_sandbox(sandbox_id)
            if actions.pod_failed or not (
                actions.create_sandbox
                or actions.next_init_container is not None
                or actions.sidecars_to_start
                or actions.containers_to_start
            ):
                return SyncResult(actions, "", tuple(started), tuple(killed))

            step = "set up volumes"
            if stopped := preempted(step):
                return stopped
            volumes = self._set_up_volumes(pod, record)
            step = "create sandbox" if actions.create_sandbox else "start"
            target = self._target(pod, actions, observed, dns, volumes)
            init = actions.next_init_container
            starts = [(start, True) for start in actions.sidecars_to_start]
            starts += [(init, True)] if init is not None else []
            starts += [(start, False) for start in actions.containers_to_start]
            for start, is_init in starts:
                container = _spec_of(pod, start, is_init=is_init)
                step = f"start {'init container' if is_init else 'container'} {container.name}"
                if stopped := preempted(step):
                    return stopped
                starting = container.name
                self.start_container(pod, start, is_init=is_init, target=target, record=record)
                started.append(container.name)
        except (ContainerRuntimeError, KubecoreError, OSError) as exc:
            logger.warning(
                "sync of pod %s/%s stopped at %s: %s",
                pod.metadata.namespace,
                pod.metadata.name,
                step,
                exc,
                extra={"pod": pod.full_name},
            )
            failure = None
            if starting is not None:
                failure = Waiting(starting, _start_failure_reason(exc), str(exc))
            return SyncResult(actions, f"{step}: {exc}", tuple(started), tuple(killed), failure)
        return SyncResult(actions, "", tuple(started), tuple(killed))

    def _backoff_events(self, pod: Pod, actions: PodActions, record: PodRecord) -> None:
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
                        for c in (*pod.spec.init_containers, *pod.spec.containers)
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
            self.event(pod, type_, reason, message, waiting.name, init=init)

    # --- sandbox ----------------------------------------------------------------------------

    def _set_up_volumes(self, pod: Pod, record: PodRecord) -> dict[str, PodVolume]:
        """The pod's volumes, set up before its sandbox (as the kubelet waits for its mounts);
        a failure is a ``FailedMount`` event (once per distinct message) and is retried at the
        next sync while the pod waits in ContainerCreating."""
        try:
            volumes = self.volumes.setup(pod)
        except MountFailed as exc:
            if record.failed_mount != str(exc):
                record.failed_mount = str(exc)
                self.event(pod, EventType.WARNING, EventReason.FAILED_MOUNT_VOLUME, str(exc))
            raise
        record.failed_mount = ""
        return volumes

    def _target(
        self,
        pod: Pod,
        actions: PodActions,
        observed: ObservedPod,
        dns: DNSConfig | None,
        volumes: Mapping[str, PodVolume],
    ) -> _Target:
        """The sandbox the plan's containers join (created now if the plan says so)."""
        if actions.create_sandbox:
            sandbox_id, config = self.create_sandbox(pod, actions.attempt, dns, volumes)
            pod_ip = ""
        else:
            sandbox_id = actions.sandbox_id
            current = next((s for s in observed.sandboxes if s.id == sandbox_id), None)
            attempt = current.attempt if current is not None else actions.attempt
            config = self._sandbox_config(pod, attempt, dns)
            pod_ip = current.ip if current is not None else ""
        if not pod_ip and not pod.spec.host_network:
            pod_ip = self.runtime.sandbox_status(sandbox_id).ip
        hosts = self._hosts_file(pod, pod_ip)
        return _Target(sandbox_id, config, pod_ip, volumes, hosts)

    def _sandbox_config(self, pod: Pod, attempt: int, dns: DNSConfig | None) -> SandboxConfig:
        try:
            return sandbox_config(
                pod,
                attempt,
                dns=dns,
                sandbox_image=self.sandbox_image,
                node_name=self.node_name,
                cluster_domain=self.cluster_domain,
            )
        except ValueError as exc:
            raise InvalidConfig(str(exc)) from exc

    def _hosts_file(self, pod: Pod, pod_ip: str) -> str:
        """Write the pod's managed hosts file as the kubelet does; its path ('' for none)."""
        node_hosts = ""
        if pod.spec.host_network and pod.spec.host_aliases:
            try:
                with open(self.node_hosts_file, encoding="utf-8", errors="replace") as f:
                    node_hosts = f.read()
            except OSError:
                node_hosts = ""
        content = managed_hosts_file(
            pod, pod_ip=pod_ip, cluster_domain=self.cluster_domain, node_hosts=node_hosts
        )
        return "" if content is None else self.volumes.write_etc_hosts(pod.uid, content)

    def create_sandbox(
        self,
        pod: Pod,
        attempt: int,
        dns: DNSConfig | None,
        volumes: Mapping[str, PodVolume] | None = None,
    ) -> tuple[str, SandboxConfig]:
        try:
            config = self._sandbox_config(pod, attempt, dns)
            held = sandbox_held_mounts(volumes or {})
            if held:
                config = attrs.evolve(config, mounts=held)
            if self.sandbox_image and self.puller.image_status(self.sandbox_image) is None:
                self._pull(pod, self.sandbox_image, "")
            sandbox_id = self.runtime.run_sandbox(config)
        except ContainerRuntimeError as exc:
            self.event(
                pod,
                EventType.WARNING,
                EventReason.FAILED_CREATE_POD_SANDBOX,
                f"Failed to create pod sandbox: {exc}",
            )
            raise
        if attempt > 0:
            self.event(
                pod,
                EventType.NORMAL,
                EventReason.SANDBOX_CHANGED,
                "Pod sandbox changed, it will be killed and re-created.",
            )
        return sandbox_id, config

    # --- images -----------------------------------------------------------------------------

    def _pull(self, pod: Pod, image: str, container: str, *, init: bool = False) -> float:
        """Pull ``image`` for ``pod``; returns the seconds the pull took."""
        self.event(
            pod,
            EventType.NORMAL,
            EventReason.PULLING_IMAGE,
            f'Pulling image "{image}"',
            container,
            init=init,
        )
        with self.image_lock:
            if self.pull_limiter is not None:
                self.pull_limiter.acquire()
            start = self.clock.monotonic()
            try:
                auth = (
                    pod_registry_auth(pod, image, self.pull_secrets)
                    if pod.spec.image_pull_secrets
                    else None
                )
                self.puller.pull(image, auth)
            except ContainerRuntimeError as exc:
                self.event(
                    pod,
                    EventType.WARNING,
                    EventReason.FAILED_TO_PULL_IMAGE,
                    f'Failed to pull image "{image}": {exc}',
                    container,
                    init=init,
                )
                raise ImagePullError(f'failed to pull image "{image}": {exc}') from exc
            took = self.clock.monotonic() - start
        self.event(
            pod,
            EventType.NORMAL,
            EventReason.PULLED_IMAGE,
            f'Successfully pulled image "{image}" in {_format_duration(took)}',
            container,
            init=init,
        )
        return took

    def ensure_image(
        self, pod: Pod, container: Container, record: PodRecord, *, init: bool
    ) -> None:
        policy = container.image_pull_policy
        image = container.image
        try:
            if policy == "Always":
                record.pull_seconds += self._pull(pod, image, container.name, init=init)
            else:
                present = self.puller.image_status(image) is not None
                if not present and policy == "Never":
                    message = f'Container image "{image}" is not present with pull policy of Never'
                    reason = EventReason.ERR_IMAGE_NEVER_PULL_POLICY
                    self.event(pod, EventType.WARNING, reason, message, container.name, init=init)
                    raise ImageNeverPull(message)
                if present:
                    self.event(
                        pod,
                        EventType.NORMAL,
                        EventReason.PULLED_IMAGE,
                        f'Container image "{image}" already present on machine',
                        container.name,
                        init=init,
                    )
                else:
                    record.pull_seconds += self._pull(pod, image, container.name, init=init)
        except ImagePullError:
            now = self.clock.now()
            record.image_backoff[container.name] = self._next_backoff(
                record.image_backoff.get(container.name), now
            )
            raise
        record.image_backoff.pop(container.name, None)

    # --- containers -------------------------------------------------------------------------

    def start_container(
        self,
        pod: Pod,
        start: ContainerToStart,
        *,
        is_init: bool,
        target: _Target,
        record: PodRecord,
    ) -> str:
        """Start one container as the plan says; returns its runtime id."""
        container = _spec_of(pod, start, is_init=is_init)
        if start.after_crash:
            self._grow_crash_backoff(record, container.name)
        if start.replaces:
            self._remove_unstarted(start.replaces)
        self.ensure_image(pod, container, record, init=is_init)
        container_id = self._create_and_start(
            pod, container, start.restart_count, is_init=is_init, target=target, record=record
        )
        hook = container.lifecycle.post_start if container.lifecycle else None
        if hook is not None:
            self._post_start(
                pod, container, container_id, hook, is_init=is_init, target=target, record=record
            )
        return container_id

    def _sub_paths(
        self,
        pod: Pod,
        container: Container,
        volumes: Mapping[str, PodVolume],
        env: Mapping[str, str],
        record: PodRecord,
        *,
        is_init: bool,
    ) -> dict[tuple[str, str], str]:
        """The host path of each ``subPath`` and ``subPathExpr`` mount, keyed by the volume and
        the path as written, made when missing. A subPathExpr is expanded with the container's
        resolved ``env``; one that does not expand, or a subPath that cannot be prepared, fails
        the start (CreateContainerConfigError) with a Failed event."""
        resolved: dict[tuple[str, str], str] = {}
        for mount in container.volume_mounts:
            written = mount.sub_path or mount.sub_path_expr
            if not written or mount.name not in volumes:
                continue
            sub_path = mount.sub_path or self._expand_sub_path(
                pod, container, mount.sub_path_expr, env, record, is_init=is_init
            )
            volume = volumes[mount.name]
            try:
                if volume.memory_backed:
                    raise ValueError("a subPath of an emptyDir of medium Memory is not supported")
                resolved[(mount.name, written)] = self.volumes.sub_path_source(volume, sub_path)
            except (ValueError, OSError) as exc:
                message = (
                    f"failed to prepare subPath for volumeMount {mount.name!r} of container"
                    f" {container.name!r}: {exc}"
                )
                self.event(
                    pod,
                    EventType.WARNING,
                    EventReason.FAILED_TO_CREATE_CONTAINER,
                    f"Error: {message}",
                    container.name,
                )
                raise MountFailed(mount.name, message) from exc
        warned_key = f"{_SUB_PATH_EXPR_WARNING}/{container.name}/"
        record.warned = {w for w in record.warned if not w.startswith(warned_key)}
        return resolved

    def _expand_sub_path(
        self,
        pod: Pod,
        container: Container,
        expression: str,
        env: Mapping[str, str],
        record: PodRecord,
        *,
        is_init: bool,
    ) -> str:
        """A subPathExpr expanded (``CreateContainerConfigError`` when it cannot be, with a
        Warning event once per message until the container starts, as for its env)."""
        try:
            return expand_sub_path_expr(expression, env)
        except CreateContainerConfigError as exc:
            warned = f"{_SUB_PATH_EXPR_WARNING}/{container.name}/{exc}"
            if warned not in record.warned:
                record.warned.add(warned)
                self.event(
                    pod,
                    EventType.WARNING,
                    EventReason.FAILED_TO_CREATE_CONTAINER,
                    f"Error: {exc}",
                    container.name,
                    init=is_init,
                )
            raise

    def _remove_unstarted(self, container_id: str) -> None:
        with contextlib.suppress(ContainerNotFound):
            self.runtime.remove_container(container_id)

    def _grow_crash_backoff(self, record: PodRecord, name: str) -> None:
        now = self.clock.now()
        record.crash_backoff[name] = self._next_backoff(record.crash_backoff.get(name), now)

    def _create_and_start(
        self,
        pod: Pod,
        container: Container,
        restart_count: int,
        *,
        is_init: bool,
        target: _Target,
        record: PodRecord,
    ) -> str:
        name = container.name
        image = (
            self.puller.image_status(container.image) if needs_image_user(pod, container) else None
        )
        problem = run_as_non_root_problem(pod, container, image)
        if problem is not None:
            self.event(
                pod,
                EventType.WARNING,
                EventReason.FAILED_TO_CREATE_CONTAINER,
                f"Error: {problem}",
                name,
                init=is_init,
            )
            raise CreateContainerConfigError(problem)
        resolved = self._environment(pod, container, target, record, is_init=is_init)
        term_path = ""
        if container.termination_message_path:
            term_path = self.volumes.prepare_termination_log(pod.uid, name, restart_count)
        config = container_config(
            pod,
            container,
            restart_count=restart_count,
            volume_paths=target.volume_paths,
            termination_message_host_path=term_path,
            is_init=is_init,
            node_name=self.node_name,
            sub_paths=self._sub_paths(
                pod, container, target.volume_paths, dict(resolved.env), record, is_init=is_init
            ),
            hosts_file=target.hosts_file,
            seccomp_root=os.path.join(self.volumes.root_dir, SECCOMP_DIR),
            image=image,
        )
        config = attrs.evolve(
            config, env=resolved.env, command=resolved.command, args=resolved.args
        )
        kind = container_type(is_init=is_init)
        self.metrics.started_containers.labels(kind).inc()
        try:
            container_id = self.runtime.create_container(
                target.sandbox_id, config, target.sandbox_config
            )
        except ContainerRuntimeError as exc:
            self.metrics.started_containers_errors.labels(kind, "CreateContainerError").inc()
            self.event(
                pod,
                EventType.WARNING,
                EventReason.FAILED_TO_CREATE_CONTAINER,
                f"Error: {exc}",
                name,
                init=is_init,
            )
            raise
        self.event(
            pod,
            EventType.NORMAL,
            EventReason.CREATED_CONTAINER,
            f"Created container {name}",
            name,
            init=is_init,
        )
        try:
            self.runtime.start_container(container_id)
        except ContainerRuntimeError as exc:
            self.metrics.started_containers_errors.labels(kind, "RunContainerError").inc()
            self.event(
                pod,
                EventType.WARNING,
                EventReason.FAILED_TO_START_CONTAINER,
                f"Error: {exc}",
                name,
                init=is_init,
            )
            if isinstance(exc, SandboxUnusable):
                self._retire_sandbox(pod, target.sandbox_id)
            raise
        self.event(
            pod,
            EventType.NORMAL,
            EventReason.STARTED_CONTAINER,
            f"Started container {name}",
            name,
            init=is_init,
        )
        return container_id

    def _retire_sandbox(self, pod: Pod, sandbox_id: str) -> None:
        """Stop a sandbox that containers can no longer join: the next sync sees it not ready
        and creates a new one (with ``SandboxChanged``)."""
        logger.warning(
            "sandbox %s of pod %s can no longer be joined; stopping it so that it is re-created",
            sandbox_id[:12],
            pod.full_name,
            extra={"pod": pod.full_name},
        )
        with contextlib.suppress(ContainerRuntimeError):
            self.runtime.stop_sandbox(sandbox_id)

    def _environment(
        self, pod: Pod, container: Container, target: _Target, record: PodRecord, *, is_init: bool
    ) -> ResolvedContainer:
        """The container's env, command and args, resolved now (``CreateContainerConfigError`` when
        an object or key it needs is missing; a Warning event says so once per message)."""
        pod_ips: tuple[str, ...] = ()
        if pod.spec.host_network and self.node.host_ip:
            pod_ips = (self.node.host_ip,)
        elif target.pod_ip:
            pod_ips = (target.pod_ip,)
        elif needs_pod_ip(container):
            ip = self.runtime.sandbox_status(target.sandbox_id).ip
            pod_ips = (ip,) if ip else ()
        config_key = f"config/{container.name}"
        try:
            resolved = container_environment(
                pod, container, self.objects, self.node, pod_ips, target.read_volume_file
            )
        except CreateContainerConfigError as exc:
            # A sync retries every pass: say it once per message, until the container starts.
            if f"{config_key}/{exc}" not in record.warned:
                record.warned.add(f"{config_key}/{exc}")
                self.event(
                    pod,
                    EventType.WARNING,
                    EventReason.FAILED_TO_CREATE_CONTAINER,
                    f"Error: {exc}",
                    container.name,
                    init=is_init,
                )
            raise
        record.warned = {w for w in record.warned if not w.startswith(config_key + "/")}
        for message in resolved.skipped:
            self.event(
                pod,
                EventType.WARNING,
                EventReason.INVALID_ENVIRONMENT_VARIABLE_NAMES,
                message,
                init=is_init,
            )
        return resolved

    def _post_start(
        self,
        pod: Pod,
        container: Container,
        container_id: str,
        hook: LifecycleHandler,
        *,
        is_init: bool,
        target: _Target,
        record: PodRecord,
    ) -> None:
        """Run the postStart hook; a failure kills the container (the plan restarts it)."""
        name = container.name
        ok, message = self.run_hook(
            hook, container, container_id, target.pod_ip, target.sandbox_id, HOOK_TIMEOUT
        )
        if ok:
            return
        record.post_start_failed.add(container_id)
        self.event(
            pod,
            EventType.WARNING,
            EventReason.FAILED_POST_START_HOOK,
            f"PostStartHook failed: {message}",
            name,
            init=is_init,
        )
        try:
            self.kill_container(
                pod,
                container_id,
                name,
                None,
                f"Container {name} postStart hook failed, will be restarted",
            )
        except ContainerRuntimeError as exc:
            logger.warning("could not kill %s after its postStart hook failed: %s", name, exc)

    def run_hook(
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
            left = functools.partial(_seconds_until, self.clock, end)
        if pod is not None:
            self.event(pod, EventType.NORMAL, EventReason.KILLING_CONTAINER, message, name)
        elif orphan_ref is not None:
            ns, pod_name, uid = orphan_ref
            ref = pod_reference(ns, pod_name, uid, name)
            try:
                self.recorder.record(
                    Event(
                        ref,
                        EventType.NORMAL,
                        EventReason.KILLING_CONTAINER,
                        message,
                        self.clock.now(),
                    )
                )
            except Exception:
                logger.exception("event recorder failed")
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
            budget = max(MIN_GRACE_PERIOD, left())
            ok, hook_message = self.run_hook(hook, spec, container_id, "", "", budget)
            if not ok:
                self.event(
                    pod,
                    EventType.WARNING,
                    EventReason.FAILED_PRE_STOP_HOOK,
                    f"PreStopHook failed: {hook_message}",
                    name,
                )
        stop_within(self.runtime, container_id, left())

    def resize_container(self, pod: Pod, resize: ContainerToResize, record: PodRecord) -> None:
        """Change a running container's resources in place (the plan checked the runtime can)."""
        spec = next(
            c for c in (*pod.spec.containers, *pod.spec.init_containers) if c.name == resize.name
        )
        updater = resource_updater(self.runtime)
        if updater is None:
            raise InvalidConfig(f"the runtime cannot resize container {resize.name} in place")
        updater.update_container_resources(resize.container_id, container_resources(spec, pod))
        record.resized[resize.container_id] = resources_record(spec)
        logger.info(
            "resized container %s of pod %s in place",
            resize.name,
            pod.full_name,
            extra={"pod": pod.full_name},
        )

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


def stop_within(runtime: ContainerRuntime, container_id: str, left: float) -> None:
    """Stop a container with ``left`` seconds of its grace period, never under
    ``MIN_GRACE_PERIOD`` (the kubelet's two-second floor)."""
    runtime.stop_container(container_id, max(MIN_GRACE_PERIOD, left))


def _seconds_until(clock: Clock, end: float) -> float:
    return end - clock.monotonic()


def resource_updater(runtime: ContainerRuntime) -> ResourceUpdater | None:
    """The runtime as a ``ResourceUpdater``, if it is one (a wrapper is when what it wraps is)."""
    return runtime if isinstance(runtime, ResourceUpdater) else None


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


def _spec_of(pod: Pod, start: ContainerToStart, *, is_init: bool) -> Container:
    spec = pod.spec
    return (spec.init_containers if is_init else spec.containers)[start.index]


def newest_sandbox(observed: ObservedPod) -> RuntimeSandbox | None:
    """The newest of a pod's sandboxes, in any state (``_observed.newest_sandbox``)."""
    return _newest_sandbox(observed.sandboxes)
