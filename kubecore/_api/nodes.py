"""The agent's own v1 ``Node``: the one document both the node's Kubernetes API serves
(``nodes``: ``kubectl get nodes``, ``kubectl describe node``, ``kubectl cordon``) and an etcd
writer publishes (``kubecore_etcd``), built from what the kubelet reports of itself.

Over the API the Node is read-only but for ``spec.unschedulable`` (``kubectl cordon`` and
``uncordon`` send it as a strategic merge patch; a merge patch or a PUT of the whole object does
the same): it is kept in the node's record (``kubecore._model.node_record``) with the node's
uid and creation time, before the answer, so it survives a restart, and admission honours it. A
cordoned node shows the ``node.kubernetes.io/unschedulable:NoSchedule`` taint, as the node
controller sets it. Any other change is refused with 422 naming the field
(``kubecore._api.node_writes``). The conditions and the Lease's heartbeat are
``kubecore._api.node_status``'s."""

from __future__ import annotations

import copy
import logging
import platform
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any, Protocol

import attrs

from kubecore._agent.admission.node_fit import machine_arch
from kubecore._agent.admission.pod_security import PodSecurityPolicy
from kubecore._agent.node_pressure import host_reader
from kubecore._api.errors import ApiError, not_found
from kubecore._api.leases import Leases
from kubecore._api.node_status import ConditionsFile, Heartbeat, NodeConditions
from kubecore._api.node_writes import NodeChange, node_change
from kubecore._api.patch import merge_for, strategic_merge_patch
from kubecore._api.request import Exchange, Request, content_type, read_body, send_json
from kubecore._api.selectors import field_selector, label_selector
from kubecore._api.tables import NODE_COLUMNS, node_cells, table, wants_table
from kubecore._api.watch import serve_polled
from kubecore._config.updates import SourceName
from kubecore._contract.values import (
    Event,
    EventType,
    Image,
    ImageFsUsage,
    ObjectReference,
    RuntimeVersion,
)
from kubecore._housekeeping.eviction import Filesystem, HostReader, eviction_thresholds
from kubecore._kuberuntime.env import host_capacity
from kubecore._manifest.identity import SOURCE_ANNOTATION
from kubecore._model.node_record import (
    NO_SCHEDULE,
    NODE_UNSCHEDULABLE,
    UNSCHEDULABLE_TAINT,
    NodeRecord,
    NodeRecordFile,
)
from kubecore._model.v1 import Pod
from kubecore._util.host import node_ip
from kubecore._util.timefmt import rfc3339
from kubecore._version import __version__

logger = logging.getLogger(__name__)

OS_RELEASE = "/etc/os-release"
MACHINE_ID = "/etc/machine-id"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
PRODUCT_UUID = "/sys/class/dmi/id/product_uuid"
NODE_FIELDS = ("metadata.name", "spec.unschedulable")
"""What a node's ``fieldSelector`` can select by."""
MAX_IMAGES = 50
"""Images the Node lists at most, the largest first (the kubelet's ``nodeStatusMaxImages``)."""


class NodeConfig(Protocol):
    @property
    def node_name(self) -> str: ...
    @property
    def root_dir(self) -> str: ...
    @property
    def max_pods(self) -> int: ...
    @property
    def host_ip(self) -> str: ...
    def labels(self) -> dict[str, str]: ...


class FactViews(Protocol):
    """What the Node document reads of the node (``kubecore.Kubelet.views`` has it)."""

    def runtime_version(self) -> RuntimeVersion: ...

    def healthz(self) -> tuple[bool, str]: ...


class NodeFacts(Protocol):
    """What the Node document is made of (``kubecore.Kubelet`` has all of it)."""

    @property
    def config(self) -> NodeConfig: ...

    @property
    def views(self) -> FactViews: ...


class _ServedConfig(NodeConfig, Protocol):
    @property
    def eviction_hard(self) -> tuple[str, ...]: ...

    def pod_security_policy(self) -> PodSecurityPolicy: ...


class NodeViews(FactViews, Protocol):
    """What the API's Node reads of the node (``kubecore.Kubelet.views`` has it)."""

    def images(self) -> list[Image]: ...

    def image_fs_usage(self) -> ImageFsUsage | None: ...


class NodeKubelet(Protocol):
    """What the API's Node reads and records beside the document (``kubecore.Kubelet`` has
    all of it)."""

    @property
    def config(self) -> _ServedConfig: ...

    @property
    def running(self) -> bool: ...

    @property
    def views(self) -> NodeViews: ...

    def pods(self) -> list[Pod]: ...

    def record_event(self, event: Event) -> None: ...


def os_image(path: str = OS_RELEASE) -> str:
    """The host's ``PRETTY_NAME`` (``Debian GNU/Linux 13 (trixie)``), as the kubelet reports
    ``nodeInfo.osImage``; ``Unknown`` without an os-release file."""
    try:
        with open(path, encoding="utf-8") as file:
            for line in file:
                key, _, value = line.strip().partition("=")
                if key == "PRETTY_NAME":
                    return value.strip().strip('"') or "Unknown"
    except OSError:
        pass
    return "Unknown"


def _first_line(path: str) -> str:
    """A one-line system file's text ('' when it cannot be read: ``product_uuid`` is root's)."""
    try:
        with open(path, encoding="ascii", errors="replace") as file:
            return file.readline().strip()
    except OSError:
        return ""


def _capacity(kubelet: NodeFacts) -> dict[str, str]:
    host: Mapping[str, Any] = host_capacity(kubelet.config.root_dir)
    capacity = {"cpu": str(host["cpu"]), "pods": str(kubelet.config.max_pods)}
    memory = int(host.get("memory", 0))
    if memory:
        capacity["memory"] = f"{memory // 1024}Ki"
    storage = int(host.get("ephemeral-storage", 0))
    if storage:
        capacity["ephemeral-storage"] = f"{storage // 1024}Ki"
    return capacity


def _runtime(kubelet: NodeFacts) -> str:
    try:
        version = kubelet.views.runtime_version()
    except Exception:  # a runtime that is down: the Ready condition says so
        return ""
    return f"{version.runtime_name}://{version.runtime_version}"


def node_images(images: Iterable[Image], limit: int = MAX_IMAGES) -> list[dict[str, Any]]:
    """The Node's ``status.images``: each image's digests then tags, and its size, the largest
    first, at most ``limit`` (as the kubelet lists them)."""
    ordered = sorted(images, key=lambda image: image.size, reverse=True)
    listed = []
    for image in ordered[:limit]:
        names = [*image.digests, *image.tags] or [image.id]
        listed.append({"names": names, "sizeBytes": image.size})
    return listed


def unschedulable_spec(record: NodeRecord | None) -> dict[str, Any]:
    """The Node's spec: ``unschedulable`` and its taint when cordoned, else empty."""
    if record is None or not record.unschedulable:
        return {}
    taint = {"key": UNSCHEDULABLE_TAINT, "effect": NO_SCHEDULE}
    if record.cordoned_at:
        taint["timeAdded"] = record.cordoned_at
    return {"taints": [taint], "unschedulable": True}


def node_document(
    kubelet: NodeFacts,
    node: str | None = None,
    *,
    ready: bool | None = None,
    reason: str = "",
    created: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
    record: NodeRecord | None = None,
    images: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The v1 Node of ``kubelet`` (named ``node``, else its ``node_name``): labels, addresses,
    capacity (allocatable the same), conditions and nodeInfo. ``conditions`` are the API's
    (``kubecore._api.node_status``); without them, the Ready condition alone (``ready``/
    ``reason``, else what ``kubelet.views.healthz()`` says). ``record`` gives the uid, creation time
    and ``spec.unschedulable``; ``created`` is the ``creationTimestamp`` without one (left out
    when None too). ``images`` is ``status.images`` (left out when None)."""
    if conditions is None:
        if ready is None:
            ready, reason = kubelet.views.healthz()
        conditions = [
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                "reason": "KubeletReady" if ready else "KubeletNotReady",
                "message": reason or ("kubelet is ready" if ready else ""),
            }
        ]
    name = node or kubelet.config.node_name
    # The node's name is its hostname (a kubelet's --hostname-override); its IP the configured
    # one, else the default route's.
    addresses = [
        {"type": "InternalIP", "address": node_ip(kubelet.config.host_ip)},
        {"type": "Hostname", "address": name},
    ]
    capacity = _capacity(kubelet)
    metadata: dict[str, Any] = {
        "name": name,
        "labels": kubelet.config.labels(),
    }
    if record is not None:
        metadata["uid"] = record.uid
        created = record.created
    if created is not None:
        metadata["creationTimestamp"] = created
    status: dict[str, Any] = {
        "addresses": addresses,
        "capacity": capacity,
        "allocatable": dict(capacity),
        "conditions": conditions,
        "nodeInfo": _node_info(kubelet),
    }
    if images is not None:
        status["images"] = images
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": unschedulable_spec(record),
        "status": status,
    }


def _node_info(kubelet: NodeFacts) -> dict[str, str]:
    return {
        "machineID": _first_line(MACHINE_ID),
        "systemUUID": _first_line(PRODUCT_UUID),
        "bootID": _first_line(BOOT_ID),
        "kubeletVersion": f"kubecore/{__version__}",
        "containerRuntimeVersion": _runtime(kubelet),
        "operatingSystem": "linux",
        "architecture": machine_arch(),
        "osImage": os_image(),
        "kernelVersion": platform.release(),
        # Required by the v1 schema (and so by the typed clients' models), deprecated since 1.31:
        # the kubelet reports it empty.
        "kubeProxyVersion": "",
    }


def _image_fs(kubelet: NodeKubelet) -> Callable[[], Filesystem | None]:
    """The runtime's image filesystem as the pressure signals read it (None: it cannot tell,
    and the images are taken to be on the node's filesystem)."""

    def read() -> Filesystem | None:
        try:
            usage = kubelet.views.image_fs_usage()
        except Exception:  # a runtime that is down: the Ready condition says so
            return None
        if usage is None or usage.capacity_bytes <= 0:
            return None
        return Filesystem(max(0, usage.capacity_bytes - usage.used_bytes), usage.capacity_bytes)

    return read


class NodeReads:
    """``nodes``: the one node, the agent's own (list, get, watch, and the one write: patch or
    replace of ``spec.unschedulable``), and its Lease (``leases``). ``now`` is when the API
    started: the node's creation time on a root directory that never served one. ``host``
    reads the host's pressure signals (``kubecore._agent.node_pressure.host_reader`` of the
    root directory by default)."""

    def __init__(
        self,
        kubelet: NodeKubelet,
        now: float,
        version: Callable[[], str],
        *,
        host: HostReader | None = None,
    ) -> None:
        self._kubelet = kubelet
        self._version = version
        """The resourceVersion of what is shown (the pods')."""
        config = kubelet.config
        self.file = NodeRecordFile(config.root_dir)
        self.record = self._first_record(now)
        self.conditions = NodeConditions(
            host or host_reader(config.root_dir, _image_fs(kubelet)),
            eviction_thresholds(config.eviction_hard),
            kubelet.views.healthz,
            on_status=self.record_event,
            kept=ConditionsFile(config.root_dir),
        )
        self.heartbeat = Heartbeat(now, lambda: kubelet.running)
        self.leases = Leases(self)
        self._lock = threading.Lock()
        """Held by each write, from its checks to its answer."""

    def _first_record(self, now: float) -> NodeRecord:
        try:
            record = self.file.load()
        except ValueError as error:
            logger.error(
                "the node's record cannot be read (%s): the node is shown schedulable, with a"
                " new uid, until kubectl cordon or uncordon writes it again",
                error,
            )
            return NodeRecord(str(uuid.uuid4()), rfc3339(now))
        if record is not None:
            return record
        record = NodeRecord(str(uuid.uuid4()), rfc3339(now))
        try:
            self.file.save(record)
        except OSError as error:
            logger.warning(
                "cannot keep the node's record (%s): its age restarts with the agent", error
            )
        return record

    @property
    def name(self) -> str:
        return self._kubelet.config.node_name

    def record_event(self, reason: str, now: float) -> None:
        """An event about the node, as the kubelet records it: ``Node n status is now: R``."""
        ref = ObjectReference(kind="Node", namespace="", name=self.name, uid=self.name)
        message = f"Node {self.name} status is now: {reason}"
        try:
            self._kubelet.record_event(Event(ref, EventType.NORMAL, reason, message, now))
        except Exception:  # an event must never fail what made it
            logger.exception("recording the node's event %s failed", reason)

    @property
    def created(self) -> str:
        return self.record.created

    def document(self, now: float) -> dict[str, Any]:
        try:
            images = node_images(self._kubelet.views.images())
        except Exception:  # a runtime that is down: the Ready condition says so
            images = []
        node = node_document(
            self._kubelet,
            conditions=self.conditions.conditions(now),
            record=self.record,
            images=images,
        )
        node["metadata"]["resourceVersion"] = self._version()
        return node

    def selected(
        self, request: Request, now: Callable[[], float]
    ) -> Callable[[], dict[str, Any] | None]:
        """What a list or watch with this request's selectors shows: the node, or None when
        its ``labelSelector`` or ``fieldSelector`` leaves it out."""
        labels = label_selector(request.param("labelSelector"))
        fields = field_selector(request.param("fieldSelector"), NODE_FIELDS)

        def look() -> dict[str, Any] | None:
            node = self.document(now())
            values = {
                "metadata.name": node["metadata"]["name"],
                "spec.unschedulable": "true" if node["spec"].get("unschedulable") else "false",
            }
            return node if labels(node["metadata"]["labels"]) and fields(values) else None

        return look

    def list_nodes(self, exchange: Exchange, request: Request, now: float) -> None:
        node = self.selected(request, lambda: now)()
        items = [node] if node is not None else []
        version = self._version()
        if wants_table(request.accept):
            include = request.param("includeObject", "Metadata")
            rows = [(node_cells(n, now), n) for n in items]
            send_json(exchange, table(NODE_COLUMNS, rows, version, include))
            return
        send_json(
            exchange,
            {
                "kind": "NodeList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": version},
                "items": items,
            },
        )

    def watch_nodes(self, exchange: Exchange, request: Request, now: Callable[[], float]) -> None:
        """``?watch=true``: the one node (if selected), ADDED, then MODIFIED when it changes
        (polled)."""
        look = self.selected(request, now)
        if not wants_table(request.accept):
            serve_polled(exchange, request, look, lambda node: node)
            return
        include = request.param("includeObject", "Metadata")

        def render(node: dict[str, Any]) -> dict[str, Any]:
            version = node["metadata"]["resourceVersion"]
            return table(NODE_COLUMNS, [(node_cells(node, now()), node)], version, include)

        serve_polled(exchange, request, look, render)

    def get_node(self, exchange: Exchange, request: Request, name: str, now: float) -> None:
        self._check_name(name)
        node = self.document(now)
        if wants_table(request.accept):
            include = request.param("includeObject", "Metadata")
            version = node["metadata"]["resourceVersion"]
            send_json(
                exchange, table(NODE_COLUMNS, [(node_cells(node, now), node)], version, include)
            )
            return
        send_json(exchange, node)

    def _check_name(self, name: str) -> None:
        if name != self.name:
            raise not_found("nodes", name)

    # --- writes: spec.unschedulable only

    def write_node(self, exchange: Exchange, request: Request, name: str, now: float) -> None:
        """PATCH (merge or strategic merge) or PUT of the node: only ``spec.unschedulable``
        may change; kept before the answer."""
        self._check_name(name)
        if request.method == "PATCH":
            merge = merge_for(content_type(exchange), strategic_merge_patch)
            patch = read_body(exchange)
            with self._lock:
                current = self.document(now)
                wanted = merge(copy.deepcopy(current), patch)
                self._apply(node_change(current, wanted, check_status=True), request, now)
        else:
            wanted = read_body(exchange)
            with self._lock:
                current = self.document(now)
                self._apply(node_change(current, wanted, check_status=False), request, now)
        send_json(exchange, self.document(now))

    def _apply(self, change: NodeChange, request: Request, now: float) -> None:
        record = self.record
        if change.unschedulable == record.unschedulable or request.dry_run():
            return
        pods = self._api_pods()
        present = {pod.uid for pod in pods}
        refused = {uid for uid in record.refused if uid in present}
        if change.unschedulable:
            record = attrs.evolve(
                record,
                unschedulable=True,
                cordoned_at=rfc3339(now),
                kept=tuple(sorted(present - refused)),
                refused=tuple(sorted(refused)),
            )
        else:
            refused |= {
                pod.uid
                for pod in pods
                if pod.status is not None and pod.status.reason == NODE_UNSCHEDULABLE
            }
            record = attrs.evolve(
                record, unschedulable=False, cordoned_at="", kept=(), refused=tuple(sorted(refused))
            )
        try:
            self.file.save(record)
        except OSError as error:
            raise ApiError(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                "InternalError",
                f'Node "{self.name}" was not changed: its record {self.file.path} cannot be'
                f" written: {error.strerror or error}",
                details={"name": self.name, "kind": "Node"},
            ) from None
        self.record = record
        self.record_event("NodeNotSchedulable" if record.unschedulable else "NodeSchedulable", now)
        logger.info(
            "node %s %s over the API",
            self.name,
            "cordoned: new pods are refused" if record.unschedulable else "uncordoned",
        )

    def _api_pods(self) -> list[Pod]:
        """The pods written over the API, as the agent has them now (reading them admits the
        ones not admitted yet: a pod created before the cordon is kept)."""
        api = SourceName.KUBE_APISERVER.value
        return [
            pod
            for pod in self._kubelet.pods()
            if pod.metadata.annotations.get(SOURCE_ANNOTATION) == api
        ]
