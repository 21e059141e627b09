"""A container created and started as the plan says, step by step: the crash back-off grown
(a start after a crash), the image made present, the run-as-non-root check, the environment
resolved, the subPaths prepared, the config translated, create, start, then its postStart hook
(a failure kills it: the plan restarts it). Also a running container resized in place."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping

import attrs

from kubecore._contract.capabilities import ResourceUpdater
from kubecore._contract.errors import (
    ContainerNotFound,
    ContainerRuntimeError,
    CreateContainerConfigError,
    InvalidConfig,
    MountFailed,
    SandboxUnusable,
    StillStarting,
)
from kubecore._contract.protocols import ContainerRuntime
from kubecore._contract.values import ContainerConfig, EventType, Image
from kubecore._kuberuntime.cgroups import container_resources
from kubecore._kuberuntime.env import (
    NodeInfo,
    ObjectReader,
    ResolvedContainer,
    container_environment,
    expand_sub_path_expr,
    needs_pod_ip,
)
from kubecore._kuberuntime.ephemeral import ephemeral_config
from kubecore._kuberuntime.hooks import Hooks
from kubecore._kuberuntime.images import Backoff, Images
from kubecore._kuberuntime.kill import Killer
from kubecore._kuberuntime.pod_events import PodEvents
from kubecore._kuberuntime.pod_record import PodRecord
from kubecore._kuberuntime.sandbox import Sandboxes, Target
from kubecore._kuberuntime.security import SECCOMP_DIR, needs_image_user, run_as_non_root_problem
from kubecore._kuberuntime.start_journal import StartJournal
from kubecore._kuberuntime.translate import container_config
from kubecore._model.spec_hash import resources_record
from kubecore._model.v1 import Container, EphemeralContainer, Pod
from kubecore._observability.events import EventReason
from kubecore._observability.metrics import Metrics, container_type
from kubecore._planner.actions import ContainerToResize, ContainerToStart
from kubecore._util.clock import Clock
from kubecore._volumes.pod_dirs import PodVolume, VolumeManager

logger = logging.getLogger(__name__)

_SUB_PATH_EXPR_WARNING = "subPathExpr"
"""The prefix of ``PodRecord.warned`` keys for subPathExpr expansion failures."""


def spec_of(pod: Pod, start: ContainerToStart, *, is_init: bool) -> Container:
    """The spec of the container a start names."""
    spec = pod.spec
    return (spec.init_containers if is_init else spec.containers)[start.index]


def resource_updater(runtime: ContainerRuntime) -> ResourceUpdater | None:
    """The runtime as a ``ResourceUpdater``, if it is one (a wrapper is when what it wraps is)."""
    return runtime if isinstance(runtime, ResourceUpdater) else None


@attrs.frozen
class _Failure:
    """What a failed create or start reports: a metric reason and a Failed event."""

    metric: str
    reason: str


_CREATE_FAILED = _Failure("CreateContainerError", EventReason.FAILED_TO_CREATE_CONTAINER)
_START_FAILED = _Failure("RunContainerError", EventReason.FAILED_TO_START_CONTAINER)


class Containers:
    """Creates, starts and resizes a pod's containers."""

    def __init__(
        self,
        runtime: ContainerRuntime,
        images: Images,
        sandboxes: Sandboxes,
        hooks: Hooks,
        killer: Killer,
        events: PodEvents,
        backoff: Backoff,
        clock: Clock,
        *,
        volumes: VolumeManager,
        objects: ObjectReader,
        node: NodeInfo,
        metrics: Metrics,
        node_name: str = "",
        journal: StartJournal | None = None,
    ) -> None:
        self.runtime = runtime
        self.images = images
        self.sandboxes = sandboxes
        self.hooks = hooks
        self.killer = killer
        self.events = events
        self.backoff = backoff
        self.clock = clock
        self.volumes = volumes
        self.objects = objects
        self.node = node
        self.metrics = metrics
        self.node_name = node_name
        self.journal = journal
        """Where starts are noted while they run (None: nowhere)."""

    def start(
        self,
        pod: Pod,
        start: ContainerToStart,
        *,
        is_init: bool,
        target: Target,
        record: PodRecord,
    ) -> str:
        """Start one container as the plan says; returns its runtime id."""
        container = spec_of(pod, start, is_init=is_init)
        if start.replaces:
            self._remove_interrupted(pod, container.name, start)
        if start.after_crash:
            now = self.clock.now()
            name = container.name
            record.crash_backoff[name] = self.backoff(record.crash_backoff.get(name), now)
        self.images.ensure(pod, container, record, init=is_init)
        container_id = self._create_and_start(
            pod, container, start.restart_count, is_init=is_init, target=target, record=record
        )
        hook = container.lifecycle.post_start if container.lifecycle else None
        if hook is not None and not self.hooks.post_start(
            pod,
            container,
            container_id,
            hook,
            is_init=is_init,
            pod_ip=target.pod_ip,
            sandbox_id=target.sandbox_id,
        ):
            record.post_start_failed.add(container_id)
            self._kill_after_post_start(pod, container.name, container_id)
        return container_id

    def _remove_interrupted(self, pod: Pod, name: str, start: ContainerToStart) -> None:
        """Remove the instance an interrupted start left; one the runtime will not remove may
        still start, and no second instance is made beside it (``StillStarting``)."""
        container_id = start.replaces
        try:
            self.runtime.remove_container(container_id)
        except ContainerNotFound:
            pass
        except ContainerRuntimeError as error:
            raise StillStarting(
                f"the earlier instance {container_id[:13]} cannot be removed yet, it may still"
                f" be starting: {error}"
            ) from error
        if self.journal is not None:
            self.journal.end(container_id)
        logger.warning(
            "pod %s/%s: container %s's instance %s was cut off in its start (%s): replaced,"
            " not counted as a restart",
            pod.metadata.namespace,
            pod.metadata.name,
            name,
            container_id[:13],
            start.replaced_end or "never started",
        )

    def start_ephemeral(
        self, pod: Pod, start: ContainerToStart, *, target: Target, record: PodRecord
    ) -> str:
        """Start an ephemeral container (once: no back-off, no hook), in its target's process
        namespace when it names one; returns its runtime id."""
        container = pod.spec.ephemeral_containers[start.index]
        self.images.ensure(pod, container, record, init=False)
        return self._create_and_start(
            pod, container, 0, is_init=False, target=target, record=record, pid=start.target_id
        )

    def _kill_after_post_start(self, pod: Pod, name: str, container_id: str) -> None:
        message = f"Container {name} postStart hook failed, will be restarted"
        try:
            self.killer.kill_container(pod, container_id, name, None, message)
        except ContainerRuntimeError as exc:
            logger.warning("could not kill %s after its postStart hook failed: %s", name, exc)

    def _create_and_start(
        self,
        pod: Pod,
        container: Container,
        restart_count: int,
        *,
        is_init: bool,
        target: Target,
        record: PodRecord,
        pid: str = "",
    ) -> str:
        image = self._image_allowed(pod, container, is_init=is_init)
        resolved = self._environment(pod, container, target, record, is_init=is_init)
        config = self._config(
            pod, container, restart_count, target, record, resolved, image, is_init=is_init
        )
        if isinstance(container, EphemeralContainer):
            config = ephemeral_config(config, pid, target.sandbox_config)
        kind = container_type(is_init=is_init)
        self.metrics.started_containers.labels(kind).inc()
        name = container.name
        with self._reporting(pod, name, kind, _CREATE_FAILED, is_init=is_init):
            container_id = self.runtime.create_container(
                target.sandbox_id, config, target.sandbox_config
            )
        self._said(pod, EventReason.CREATED_CONTAINER, f"Created container {name}", name, is_init)
        journal = self.journal
        if journal is not None:
            journal.begin(container_id)
        try:
            with self._reporting(pod, name, kind, _START_FAILED, is_init=is_init):
                self.runtime.start_container(container_id)
        except SandboxUnusable:
            self.sandboxes.retire(pod, target.sandbox_id)
            raise
        finally:
            if journal is not None:
                journal.end(container_id)
        self._said(pod, EventReason.STARTED_CONTAINER, f"Started container {name}", name, is_init)
        return container_id

    def _said(self, pod: Pod, reason: str, message: str, name: str, is_init: bool) -> None:
        self.events.record(pod, EventType.NORMAL, reason, message, name, init=is_init)

    @contextlib.contextmanager
    def _reporting(
        self, pod: Pod, name: str, kind: str, failure: _Failure, *, is_init: bool
    ) -> Iterator[None]:
        """A runtime error in the block counts in the start errors metric and is a Warning
        event (then raised again)."""
        try:
            yield
        except ContainerRuntimeError as exc:
            self.metrics.started_containers_errors.labels(kind, failure.metric).inc()
            self.events.record(
                pod, EventType.WARNING, failure.reason, f"Error: {exc}", name, init=is_init
            )
            raise

    def _image_allowed(self, pod: Pod, container: Container, *, is_init: bool) -> Image | None:
        """The container's image (when its user decides whether it may run), refused with
        ``CreateContainerConfigError`` when it would run as root against ``runAsNonRoot``."""
        image = (
            self.images.puller.image_status(container.image)
            if needs_image_user(pod, container)
            else None
        )
        problem = run_as_non_root_problem(pod, container, image)
        if problem is not None:
            self.events.record(
                pod,
                EventType.WARNING,
                EventReason.FAILED_TO_CREATE_CONTAINER,
                f"Error: {problem}",
                container.name,
                init=is_init,
            )
            raise CreateContainerConfigError(problem)
        return image

    def _config(
        self,
        pod: Pod,
        container: Container,
        restart_count: int,
        target: Target,
        record: PodRecord,
        resolved: ResolvedContainer,
        image: Image | None,
        *,
        is_init: bool,
    ) -> ContainerConfig:
        """The runtime's config of the container, with its resolved env, command and args."""
        term_path = ""
        if container.termination_message_path:
            term_path = self.volumes.prepare_termination_log(pod.uid, container.name, restart_count)
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
        return attrs.evolve(config, env=resolved.env, command=resolved.command, args=resolved.args)

    def _environment(
        self, pod: Pod, container: Container, target: Target, record: PodRecord, *, is_init: bool
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
                self.events.record(
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
            self.events.record(
                pod,
                EventType.WARNING,
                EventReason.INVALID_ENVIRONMENT_VARIABLE_NAMES,
                message,
                init=is_init,
            )
        return resolved

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
        for index, mount in enumerate(container.volume_mounts):
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
                resolved[(mount.name, written)] = self.volumes.sub_path_source(
                    pod.uid, mount.name, volume, sub_path, container=container.name, index=index
                )
            except (ValueError, OSError) as exc:
                message = (
                    f"failed to prepare subPath for volumeMount {mount.name!r} of container"
                    f" {container.name!r}: {exc}"
                )
                self.events.record(
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
                self.events.record(
                    pod,
                    EventType.WARNING,
                    EventReason.FAILED_TO_CREATE_CONTAINER,
                    f"Error: {exc}",
                    container.name,
                    init=is_init,
                )
            raise

    def resize(self, pod: Pod, resize: ContainerToResize, record: PodRecord) -> None:
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
