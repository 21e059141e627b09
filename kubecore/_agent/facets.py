"""The two small objects ``Kubelet`` groups its readers behind, as httpx's ``Client`` keeps its
surface: ``Kubelet.streams`` (a container's live I/O: logs, exec, attach, port-forward) and
``Kubelet.views`` (what the node reports: events, stats, health, images, the runtime). Each
method forwards to the agent's reads (``kubecore._agent.reads``) or rooms."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from kubecore._agent.desired import PodReport
from kubecore._agent.reads import Reads
from kubecore._agent.wiring import Rooms
from kubecore._config.objects import ObjectStore
from kubecore._contract.streaming import StreamSession, TerminalSize
from kubecore._contract.values import Event, ExecResult, RuntimeVersion
from kubecore._observability.event_log import EventLog

if TYPE_CHECKING:
    from kubecore._contract.values import Image, ImageFsUsage


class KubeletStreams:
    """A container's live I/O on this node (``Kubelet.streams``): what ``kubectl logs``,
    ``exec``, ``attach`` and ``port-forward`` reach."""

    def __init__(self, reads: Reads) -> None:
        self._reads = reads

    def logs(
        self,
        namespace: str,
        pod_name: str,
        container: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        timestamps: bool = False,
        previous: bool = False,
        since_seconds: int | None = None,
        since_time: float | None = None,
        limit_bytes: int | None = None,
    ) -> Iterator[bytes]:
        """A container's output, as the kubelet answers a log query
        (``kubecore._observability.logs``): the current instance (or with ``previous`` the last
        terminated one), the last ``tail`` lines, from ``since_seconds`` ago or ``since_time``
        (seconds since the epoch) on, cut after ``limit_bytes``. Raises NotFound /
        ContainerNotFound for a pod or container that is not there, ``LogRequestError`` when
        the instance asked for has no log (yet)."""
        return self._reads.container_logs(
            namespace,
            pod_name,
            container,
            tail=tail,
            follow=follow,
            timestamps=timestamps,
            previous=previous,
            since_seconds=since_seconds,
            since_time=since_time,
            limit_bytes=limit_bytes,
        )

    def exec(
        self,
        namespace: str,
        pod_name: str,
        container: str,
        command: list[str],
        *,
        timeout: float = 10.0,
    ) -> ExecResult:
        """Run ``command`` in the pod's running container ``container`` and wait (at most
        ``timeout`` seconds) for its exit code and output."""
        return self._reads.exec(namespace, pod_name, container, command, timeout)

    def exec_stream(
        self,
        namespace: str,
        pod_name: str,
        container: str,
        command: list[str],
        *,
        stdin: bool,
        tty: bool,
        size: TerminalSize | None = None,
    ) -> StreamSession:
        """Start ``command`` interactively in the pod's running container ``container``
        (``kubectl exec``): the live ``StreamSession``. Raises NotFound / ContainerNotFound
        (no such pod, or the container is not running), ``StreamingUnsupported`` when the
        runtime cannot stream."""
        target = (namespace, pod_name, container)
        return self._reads.exec_stream(target, command, stdin=stdin, tty=tty, size=size)

    def attach(
        self, namespace: str, pod_name: str, container: str, *, stdin: bool, tty: bool
    ) -> StreamSession:
        """Attach to the main process of the pod's running container ``container``
        (``kubectl attach``); raises as ``exec_stream``."""
        return self._reads.attach((namespace, pod_name, container), stdin=stdin, tty=tty)

    def port_forwarder(
        self, namespace: str, pod_name: str
    ) -> Callable[[int, float], socket.socket]:
        """What ``kubectl port-forward`` reaches: ``connect(port, timeout)`` answers a connected
        socket to ``port`` in the pod's network namespace (its ready sandbox, found now). Raises
        NotFound for a pod not on this node, SandboxNotFound when it has no ready sandbox,
        StreamingUnsupported when the runtime is not a ``PortForwarder``."""
        return self._reads.port_forwarder(namespace, pod_name)


class KubeletViews:
    """What the node reports, read-only (``Kubelet.views``): its events, the Summary API's
    stats, its health checks, its images, its runtime, the ConfigMaps and Secrets it holds."""

    def __init__(
        self, rooms: Rooms, reads: Reads, runs_containers_of: Callable[[str], bool]
    ) -> None:
        self._rooms = rooms
        self._reads = reads
        self._runs_containers_of = runs_containers_of

    def pod_terminating(self, uid: str) -> bool:
        """Whether the pod ``uid``, no longer desired, may still have containers on the
        runtime: its termination has not finished (or, for a pod the agent found there after a
        restart, its last relist shows a running container of it)."""
        rooms = self._rooms
        rooms.refresh_desired()
        if uid in rooms.desired.states:
            return False
        ongoing = rooms.terminations.ongoing(uid)
        return ongoing if ongoing is not None else self._runs_containers_of(uid)

    def pod_containers_stopped(self, uid: str) -> bool:
        """Whether the pod ``uid``, being terminated, has no running container left (its
        last relist shows none), while its sandboxes may still be going: the API then shows
        its containers not ready (``0/1 Terminating``), as a kubelet posts them."""
        return not self._runs_containers_of(uid)

    @property
    def objects(self) -> ObjectStore:
        """The ConfigMaps and Secrets from every source (``get_config_map``, ``get_secret``)."""
        return self._rooms.objects

    @property
    def event_log(self) -> EventLog:
        """The events aggregated as the kubelet's recorder aggregates them (one event with a
        count for repeats), with resourceVersions for watches: what the API serves."""
        return self._rooms.event_log

    def recent_events(
        self,
        limit: int | None = None,
        *,
        namespace: str | None = None,
        name: str | None = None,
        reason: str | None = None,
    ) -> list[Event]:
        """The events kept in memory (the newest ``max_events``), oldest first: the last
        ``limit``, optionally only those of one namespace, pod (``name``) and/or reason. Each
        occurrence is one event here, as recorded (not aggregated: a probe failing five times
        is five events); ``event_log`` has them aggregated, as the API serves them."""
        return self._reads.recent_events(limit, namespace=namespace, name=name, reason=reason)

    def pod_reports(self) -> list[PodReport]:
        """What ``Kubelet.pods`` lists, unrendered: each pod with its status object as
        published (the same objects until that pod changes, so a reader tells a change by
        identity, cheaply; ``report.as_pod()`` is the pod ``pods`` shows)."""
        return self._reads.pod_reports()

    def stats_summary(self) -> dict[str, Any]:
        """The kubelet's ``/stats/summary`` (Summary API): the node and each pod with its
        containers and volumes."""
        return self._reads.stats_summary()

    def resource_summary(self) -> dict[str, Any]:
        """The Summary API's CPU and memory figures only (``/metrics/resource``, the
        ``metrics.k8s.io`` API): node, pods and containers, without filesystems."""
        return self._reads.resource_summary()

    def health_checks(self) -> list[tuple[str, str]]:
        """The kubelet's ``/healthz`` checks as (name, why it fails; "" when it passes):
        ``ping``, ``syncloop`` (the loop, when started, passed within twice the resync
        interval, at least 5 min), ``runtime`` (the runtime answers) and one ``source <name>``
        per pod source (it has reported, and can be read now)."""
        return self._reads.health_checks()

    def healthz(self) -> tuple[bool, str]:
        """(healthy, reason): the runtime answers, and the loop (when started) keeps passing.
        (Pod sources are not part of it: see ``health_checks``.)"""
        return self._reads.healthz()

    def images(self) -> list[Image]:
        """The images in the runtime's store (the Node's ``status.images``)."""
        return self._rooms.puller.list_images()

    def image_fs_usage(self) -> ImageFsUsage | None:
        """The disk use of the runtime's image store; None when it cannot tell."""
        return self._rooms.puller.image_fs_usage()

    def runtime_version(self) -> RuntimeVersion:
        """The runtime's name and version; raises the runtime's error when it does not answer."""
        return self._rooms.runtime.version()


MOVED: dict[str, tuple[str, str]] = {
    "container_logs": ("streams", "logs"),
    "exec": ("streams", "exec"),
    "exec_stream": ("streams", "exec_stream"),
    "attach": ("streams", "attach"),
    "port_forwarder": ("streams", "port_forwarder"),
    "objects": ("views", "objects"),
    "event_log": ("views", "event_log"),
    "recent_events": ("views", "recent_events"),
    "pod_reports": ("views", "pod_reports"),
    "stats_summary": ("views", "stats_summary"),
    "resource_summary": ("views", "resource_summary"),
    "health_checks": ("views", "health_checks"),
    "healthz": ("views", "healthz"),
    "images": ("views", "images"),
    "image_fs_usage": ("views", "image_fs_usage"),
    "runtime_version": ("views", "runtime_version"),
    "pod_terminating": ("views", "pod_terminating"),
}
"""Each attribute ``Kubelet`` had before 0.2 grouped them: (the group, its name there)."""
