"""A pod's sandbox: its volumes set up first, then the sandbox created (its image pulled when
missing) or the current one joined, with the pod's managed ``/etc/hosts``; and a sandbox that
containers can no longer join retired so that the next sync creates a new one."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping

import attrs

from kubecore._contract.errors import ContainerRuntimeError, InvalidConfig, MountFailed
from kubecore._contract.observed import ObservedPod
from kubecore._contract.protocols import ContainerRuntime
from kubecore._contract.values import DNSConfig, EventType, SandboxConfig
from kubecore._kuberuntime.hosts import managed_hosts_file
from kubecore._kuberuntime.images import Images
from kubecore._kuberuntime.pod_events import PodEvents
from kubecore._kuberuntime.pod_record import PodRecord
from kubecore._kuberuntime.translate import sandbox_config, sandbox_held_mounts
from kubecore._model.v1 import Pod
from kubecore._observability.events import EventReason
from kubecore._planner.actions import PodActions
from kubecore._volumes.pod_dirs import PodVolume, VolumeManager, read_volume_file

logger = logging.getLogger(__name__)


@attrs.frozen
class Target:
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


class Sandboxes:
    """Prepares the sandbox a pod's containers join."""

    def __init__(
        self,
        runtime: ContainerRuntime,
        images: Images,
        volumes: VolumeManager,
        events: PodEvents,
        *,
        sandbox_image: str = "",
        node_name: str = "",
        cluster_domain: str = "",
        node_hosts_file: str = "/etc/hosts",
    ) -> None:
        self.runtime = runtime
        self.images = images
        self.volumes = volumes
        self.events = events
        self.sandbox_image = sandbox_image
        self.node_name = node_name
        self.cluster_domain = cluster_domain
        self.node_hosts_file = node_hosts_file

    def set_up_volumes(self, pod: Pod, record: PodRecord) -> dict[str, PodVolume]:
        """The pod's volumes, set up before its sandbox (as the kubelet waits for its mounts);
        a failure is a ``FailedMount`` event (once per distinct message) and is retried at the
        next sync while the pod waits in ContainerCreating."""
        try:
            volumes = self.volumes.setup(pod)
        except MountFailed as exc:
            if record.failed_mount != str(exc):
                record.failed_mount = str(exc)
                self.events.record(
                    pod, EventType.WARNING, EventReason.FAILED_MOUNT_VOLUME, str(exc)
                )
            raise
        record.failed_mount = ""
        return volumes

    def target(
        self,
        pod: Pod,
        actions: PodActions,
        observed: ObservedPod,
        dns: DNSConfig | None,
        volumes: Mapping[str, PodVolume],
    ) -> Target:
        """The sandbox the plan's containers join (created now if the plan says so)."""
        if actions.create_sandbox:
            sandbox_id, config = self.create(pod, actions.attempt, dns, volumes)
            pod_ip = ""
        else:
            sandbox_id = actions.sandbox_id
            current = next((s for s in observed.sandboxes if s.id == sandbox_id), None)
            attempt = current.attempt if current is not None else actions.attempt
            config = self._config(pod, attempt, dns)
            pod_ip = current.ip if current is not None else ""
        if not pod_ip and not pod.spec.host_network:
            pod_ip = self.runtime.sandbox_status(sandbox_id).ip
        hosts = self._hosts_file(pod, pod_ip)
        return Target(sandbox_id, config, pod_ip, volumes, hosts)

    def _config(self, pod: Pod, attempt: int, dns: DNSConfig | None) -> SandboxConfig:
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

    def create(
        self,
        pod: Pod,
        attempt: int,
        dns: DNSConfig | None,
        volumes: Mapping[str, PodVolume] | None = None,
    ) -> tuple[str, SandboxConfig]:
        """Create the pod's sandbox (pulling the sandbox image when missing); its id and
        config."""
        try:
            config = self._config(pod, attempt, dns)
            held = sandbox_held_mounts(volumes or {})
            if held:
                config = attrs.evolve(config, mounts=held)
            if self.sandbox_image and self.images.puller.image_status(self.sandbox_image) is None:
                self.images.pull(pod, self.sandbox_image, "")
            sandbox_id = self.runtime.run_sandbox(config)
        except ContainerRuntimeError as exc:
            self.events.record(
                pod,
                EventType.WARNING,
                EventReason.FAILED_CREATE_POD_SANDBOX,
                f"Failed to create pod sandbox: {exc}",
            )
            raise
        if attempt > 0:
            self.events.record(
                pod,
                EventType.NORMAL,
                EventReason.SANDBOX_CHANGED,
                "Pod sandbox changed, it will be killed and re-created.",
            )
        return sandbox_id, config

    def retire(self, pod: Pod, sandbox_id: str) -> None:
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
