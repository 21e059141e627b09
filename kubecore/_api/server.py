"""A node-scoped subset of the Kubernetes API, so that the real ``kubectl`` works against a node.

Served by the kubelet HTTP server (``kubecore._http.server``) under ``/version``, ``/api``,
``/apis``
and ``/openapi``:

* discovery: ``/version``, ``/api``, ``/api/v1`` (pods, pods/log, events, namespaces), ``/apis``
  (no groups), and ``/openapi/v2`` / ``/openapi/v3`` with the schema of what is served (kubectl
  reads them to validate ``apply`` and to learn that ``fieldValidation`` is understood);
* pods: list (all namespaces or one), get, watch, create (POST), replace (PUT), patch (merge,
  strategic merge as kubectl's ``apply`` sends it, and server-side apply), delete with a grace
  period, and ``/log`` with ``container``, ``tailLines``, ``follow``, ``previous``,
  ``sinceSeconds``, ``sinceTime``, ``timestamps`` and ``limitBytes``;
* events (from the agent's in-memory recorder) and namespaces (every namespace exists);
* the ``Table`` form of lists (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``) with
  kubectl's own pod columns, and watch streams (``?watch=true``) of ADDED / MODIFIED / DELETED.

Pods written over the API belong to one in-process source (a ``StaticSource`` named
``kube-apiserver``); pods of other sources (manifest files, a URL) are read-only here and a write
to one is refused with 403, as the API server refuses to change a static pod's mirror pod. Every
change written over the API is on disk (``kubecore._api.store``, under ``<root-dir>/api``) before
it is applied and answered, and ``attach_api`` reads the store back as the source's first state.

Every write, and every read when the server is not bound to a loopback address, needs the bearer
token of ``ApiServerConfig.token_file``: no token or a wrong one answers 401 (v1 ``Status``), as
the API server answers a missing or invalid bearer token (``kubecore._http.rules.require_bearer``).
"""

from __future__ import annotations

import contextlib
import copy
import errno
import hashlib
import ipaddress
import json
import logging
import os
import re
import select
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from email.message import Message
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import attrs

from kubecore._api.store import STORE_DIR, ApiStore, StoredState, StoreProblem, unreadable
from kubecore._config.base import prepare_pods
from kubecore._config.objects import ObjectStore
from kubecore._config.static import StaticSource
from kubecore._config.updates import SOURCE_ANNOTATION, Operation, PodUpdate, SourceName
from kubecore._contract.errors import BadParameter, KubecoreError, ValidationError
from kubecore._contract.runtime import Event
from kubecore._http.rules import (
    Credentials,
    HTTPError,
    check_bearer,
    error_for,
    query_flag,
    query_int,
    query_value,
    require_bearer,
)
from kubecore._http.serving import Admit, BoundedServer, Handle, Limits
from kubecore._manifest import pod_from_dict, pod_to_dict
from kubecore._manifest.documents import parse_yaml_document
from kubecore._model.v1 import KubeObject, Pod
from kubecore._observability.events import MemoryRecorder, v1_event
from kubecore._observability.logs import LogOptions, parse_log_options
from kubecore._status.compute import pod_status_text
from kubecore._util.timefmt import age as time_age
from kubecore._util.timefmt import rfc3339
from kubecore._version import __version__

if TYPE_CHECKING:
    from kubecore._config.base import PodKey

logger = logging.getLogger(__name__)

API_SOURCE_NAME: str = SourceName.KUBE_APISERVER.value
API_HEADS = frozenset({"api", "apis", "version", "openapi"})
"""The first path segments the Kubernetes API answers."""
KUBERNETES_VERSION = (1, 32)
"""The API version this subset follows (kubectl warns past one minor version of skew)."""
JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"
WATCH_TICK = 0.2
"""Seconds between two looks at the pods while a watch waits for a change."""
MAX_WATCH_SECONDS = 1800.0
HISTORY = 1000
"""Watch events kept for a client that resumes from an older resourceVersion."""

_SERVER_FIELDS = (
    "creationTimestamp",
    "resourceVersion",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generateName",
    "ownerReferences",
    "finalizers",
)
"""Metadata the server writes (or kubecore does not keep): dropped from what a client sends."""
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
OBJECT_RESOURCES = {"configmaps": "ConfigMap", "secrets": "Secret"}
"""The resources besides pods served (``kubecore._api.objects``), by their URL name."""
_STREAMING_SUBRESOURCES = frozenset({"exec", "attach", "portforward", "proxy"})


# --- configuration -----------------------------------------------------------------------


@attrs.frozen
class ApiServerConfig:
    """How the Kubernetes API is served (``attach_api``); TLS is ``ServerConfig``'s, as the whole
    port is served over it."""

    token_file: str | None = None
    """A file holding the bearer token that writes (and reads off loopback) must carry."""
    source_name: str = API_SOURCE_NAME
    """The source that owns pods created over the API."""


class ApiError(HTTPError):
    """An ``HTTPError`` given Kubernetes' reason first (``NotFound``, ``AlreadyExists``)."""

    def __init__(
        self,
        code: HTTPStatus,
        reason: str,
        message: str,
        *,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(code, message, headers, reason=reason, details=details)


def _bad_request(message: str) -> ApiError:
    return ApiError(HTTPStatus.BAD_REQUEST, "BadRequest", message)


def _not_found(resource: str, name: str) -> ApiError:
    return ApiError(
        HTTPStatus.NOT_FOUND,
        "NotFound",
        f'{resource} "{name}" not found',
        details={"name": name, "kind": resource},
    )


def read_token_file(path: str) -> str:
    """The token in ``path`` (surrounding whitespace removed); a ``ValueError`` if empty."""
    with open(path, encoding="utf-8") as handle:
        token = handle.read().strip()
    if not token:
        raise ValueError(f"the token file {path} is empty")
    return token


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


# --- TLS on the bounded server --------------------------------------------------------------


class _SelectorFriendlySSLSocket(ssl.SSLSocket):
    """A server-side TLS socket whose non-blocking ``recv`` says "no data yet" the way a plain
    socket does, so the selector thread of ``BoundedServer`` waits for the rest of a record
    (or of the handshake, which the first ``recv`` performs) instead of dropping the client."""

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        try:
            return super().recv(buflen, flags)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise BlockingIOError(errno.EAGAIN, "TLS data incomplete") from None


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    context.sslsocket_class = _SelectorFriendlySSLSocket
    return context


class TLSBoundedServer(BoundedServer):
    """``BoundedServer`` over TLS: connections are accepted with the handshake left to the
    first read, which the selector drives without blocking."""

    def __init__(
        self,
        address: str,
        port: int,
        handle: Handle,
        limits: Limits,
        context: ssl.SSLContext,
        admit: Admit,
    ) -> None:
        super().__init__(address, port, handle, limits, admit)
        listener = context.wrap_socket(
            self._listener, server_side=True, do_handshake_on_connect=False
        )
        listener.setblocking(False)
        self._listener = listener


# --- what the API needs from the agent ------------------------------------------------------


class _Clock(Protocol):
    def now(self) -> float: ...


class _Config(Protocol):
    @property
    def node_name(self) -> str: ...


class ApiKubelet(Protocol):
    """What the API reads from the agent (``kubecore.Kubelet`` has all of it)."""

    @property
    def events(self) -> MemoryRecorder: ...

    @property
    def clock(self) -> _Clock: ...

    @property
    def config(self) -> _Config: ...

    @property
    def objects(self) -> ObjectStore: ...

    @property
    def root_dir(self) -> str: ...

    def pods(self) -> list[Pod]: ...

    def update(self, update: Any) -> None: ...

    def container_logs(
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
    ) -> Iterator[bytes]: ...


class _Slots(Protocol):
    def follow_slot(self, container: tuple[str, str, str]) -> AbstractContextManager[None]: ...


class Exchange(Protocol):
    """The request being answered (``kubecore._http.server._Handler``)."""

    command: str
    path: str
    headers: Message
    connection: socket.socket
    close_connection: bool

    @property
    def server(self) -> _Slots: ...

    def _send_bytes(
        self,
        code: HTTPStatus,
        body: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None: ...

    def _stream(self, first: bytes, rest: Iterator[bytes], content_type: str) -> None: ...

    def _read_body(self) -> bytes: ...

    def _refuse_body(self) -> None: ...


# --- formatting ---------------------------------------------------------------------------


def _column(name: str, description: str, priority: int = 0, fmt: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "type": "string",
        "format": fmt,
        "description": description,
        "priority": priority,
    }


POD_COLUMNS = (
    _column("Name", "Name of the pod.", fmt="name"),
    _column("Ready", "The number of containers ready and of all containers."),
    _column("Status", "The aggregate status of the containers in this pod."),
    _column("Restarts", "The number of times the containers in this pod have been restarted."),
    _column("Age", "Time since the agent first saw the pod."),
    _column("IP", "The pod's IP address.", priority=1),
    _column("Node", "The node the pod runs on.", priority=1),
    _column("Nominated Node", "Always <none>: there is no scheduler.", priority=1),
    _column("Readiness Gates", "Always <none>: readiness gates are not kept.", priority=1),
)
EVENT_COLUMNS = (
    _column("Last Seen", "When the event was last seen."),
    _column("Type", "Normal or Warning."),
    _column("Reason", "Why the event happened."),
    _column("Object", "The object the event is about."),
    _column("Subobject", "The part of the object (a container).", priority=1),
    _column("Source", "The component that reported it.", priority=1),
    _column("Message", "What happened."),
    _column("First Seen", "When the event was first seen.", priority=1),
    _column("Count", "How often it happened.", priority=1),
    _column("Name", "The event's name.", priority=1, fmt="name"),
)
NAMESPACE_COLUMNS = (
    _column("Name", "Name of the namespace.", fmt="name"),
    _column("Status", "Active: every namespace exists on a node."),
    _column("Age", "Time since the agent first saw a pod in it."),
)


def pod_cells(pod: dict[str, Any], now: float, node_name: str) -> list[Any]:
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for cs in statuses if cs.get("ready"))
    restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    created = pod["metadata"].get("creationTimestamp")
    age = time_age(created, now)
    return [
        pod["metadata"]["name"],
        f"{ready}/{len(spec.get('containers') or [])}",
        pod.get("_statusText", ""),
        str(restarts),
        age,
        status.get("podIP") or "<none>",
        spec.get("nodeName") or node_name or "<none>",
        "<none>",
        "<none>",
    ]


def _table(
    columns: Iterable[dict[str, Any]],
    rows: Iterable[tuple[list[Any], dict[str, Any]]],
    resource_version: str,
    include_object: str,
) -> dict[str, Any]:
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": list(columns),
        "rows": [{"cells": cells, **_row_object(obj, include_object)} for cells, obj in rows],
    }


def _row_object(obj: dict[str, Any], include_object: str) -> dict[str, Any]:
    if include_object == "None":
        return {}
    if include_object == "Object":
        return {"object": obj}
    return {
        "object": {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"],
        }
    }


def wants_table(accept: str) -> bool:
    """Does the client ask for the ``Table`` form first (as ``kubectl get`` does)?"""
    for part in accept.split(","):
        params = {
            key.strip(): value.strip()
            for key, _, value in (p.partition("=") for p in part.split(";")[1:])
        }
        if params.get("as") == "Table" and params.get("g", "meta.k8s.io") == "meta.k8s.io":
            return True
        if part.split(";")[0].strip() in ("application/json", "*/*", ""):
            return False
    return False


# --- selectors ------------------------------------------------------------------------------

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")


def _split_selector(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return parts


Requirement = Callable[[Mapping[str, str]], bool]


def label_selector(text: str) -> Requirement:
    """A label selector: ``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``, ``a in (x,y)``,
    ``a notin (x)``."""
    requirements: list[Requirement] = []
    for part in _split_selector(text):
        requirements.append(_label_requirement(part))
    return lambda labels: all(req(labels) for req in requirements)


def _label_requirement(part: str) -> Requirement:
    for op in ("!=", "==", "="):
        if op in part:
            key, _, value = part.partition(op)
            key, value = key.strip(), value.strip()
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    match = _SET_RE.match(part)
    if match is None:
        raise _bad_request(f"labelSelector: cannot parse {part.strip()!r}")
    negate, key, op, values = match.groups()
    if op is None:
        return (lambda labels: key not in labels) if negate else (lambda labels: key in labels)
    choices = {v.strip() for v in values.split(",") if v.strip()}
    if op == "in":
        return lambda labels: labels.get(key) in choices
    return lambda labels: labels.get(key) not in choices


def field_selector(text: str, fields: Iterable[str]) -> Requirement:
    """A field selector over the given field names (``a=b``, ``a==b``, ``a!=b``)."""
    known = set(fields)
    requirements: list[Requirement] = []
    for part in _split_selector(text):
        negate = "!=" in part
        key, _, value = part.partition("!=" if negate else "=")
        key, value = key.strip(), value.strip().removeprefix("=").strip()
        if key not in known:
            raise _bad_request(
                f'field label "{key}" not supported; use one of {", ".join(sorted(known))}'
            )
        requirements.append(_field_requirement(key, value, negate))
    return lambda values: all(req(values) for req in requirements)


def _field_requirement(key: str, value: str, negate: bool) -> Requirement:
    if negate:
        return lambda values: values.get(key, "") != value
    return lambda values: values.get(key, "") == value


def _pod_fields(pod: dict[str, Any]) -> dict[str, str]:
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    return {
        "metadata.name": meta["name"],
        "metadata.namespace": meta.get("namespace", "default"),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.restartPolicy": spec.get("restartPolicy", ""),
        "status.phase": status.get("phase", ""),
        "status.podIP": status.get("podIP", ""),
    }


def _event_fields(event: dict[str, Any]) -> dict[str, str]:
    ref = event["involvedObject"]
    return {
        "metadata.name": event["metadata"]["name"],
        "metadata.namespace": event["metadata"]["namespace"],
        "involvedObject.kind": ref.get("kind", ""),
        "involvedObject.namespace": ref.get("namespace", ""),
        "involvedObject.name": ref.get("name", ""),
        "involvedObject.uid": ref.get("uid", ""),
        "involvedObject.apiVersion": ref.get("apiVersion", ""),
        "involvedObject.fieldPath": ref.get("fieldPath", ""),
        "reason": event.get("reason", ""),
        "type": event.get("type", ""),
        "source": event["source"].get("component", ""),
        "reportingComponent": event.get("reportingComponent", ""),
    }


POD_FIELDS = tuple(_pod_fields({"metadata": {"name": ""}}))
EVENT_FIELDS = (
    "metadata.name",
    "metadata.namespace",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.fieldPath",
    "reason",
    "type",
    "source",
    "reportingComponent",
)


# --- objects --------------------------------------------------------------------------------


def event_object(event: Event, node_name: str) -> dict[str, Any]:
    """A recorded event as a v1 ``Event``."""
    ref = event.involved_object
    when = rfc3339(event.timestamp)
    digest = hashlib.sha256(
        "\0".join(
            (
                ref.namespace,
                ref.name,
                ref.field_path,
                event.reason,
                event.message,
                repr(event.timestamp),
            )
        ).encode()
    ).hexdigest()[:16]
    return v1_event(event, node=node_name, name=f"{ref.name}.{digest}", stamp=when)


def event_cells(event: dict[str, Any], now: float) -> list[Any]:
    ref = event["involvedObject"]
    seen = time_age(event["lastTimestamp"], now)
    source = event["source"]
    return [
        seen,
        event["type"],
        event["reason"],
        f"{ref['kind'].lower()}/{ref['name']}",
        ref.get("fieldPath", ""),
        ", ".join(v for v in (source.get("component"), source.get("host")) if v),
        event["message"],
        seen,
        event["count"],
        event["metadata"]["name"],
    ]


def namespace_object(name: str, created: str) -> dict[str, Any]:
    return {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def clean_manifest(data: object, namespace: str) -> dict[str, Any]:
    """A pod sent by a client, ready for ``pod_from_dict``: server-written metadata dropped, the
    URL's namespace filled in (and checked against the body's)."""
    if not isinstance(data, dict):
        raise _bad_request("the body must be a JSON object (a v1 Pod)")
    if data.get("kind", "Pod") != "Pod" or data.get("apiVersion", "v1") != "v1":
        raise _bad_request(f"expected a v1 Pod, got {data.get('apiVersion')}/{data.get('kind')}")
    body = {key: value for key, value in data.items() if key != "status"}
    meta = body_metadata(body)
    for key in _SERVER_FIELDS:
        meta.pop(key, None)
    given = meta.get("namespace")
    if given and given != namespace:
        raise _bad_request(
            f"the namespace of the provided object ({given}) does not match the namespace "
            f"sent on the request ({namespace})"
        )
    meta["namespace"] = namespace
    if not meta.get("labels"):
        meta.pop("labels", None)
    body["metadata"] = meta
    return body


MAX_BODY_DEPTH = 100
"""How deeply a written body may nest (a pod nests about 10 levels): deeper ones are refused
before anything walks them (patches, decoding, copies all recurse)."""


def parse_body(raw: bytes, content_type: str) -> object:
    """A request's JSON or YAML body (YAML read as manifests are, aliases bounded); a 400 for
    one that does not parse or nests too deeply."""
    syntax = "YAML" if content_type.endswith("yaml") else "JSON"
    try:
        value = parse_yaml_document(raw.decode()) if syntax == "YAML" else json.loads(raw)
    except ValidationError as error:
        problems = "; ".join(p.message for p in error.problems)
        raise _bad_request(f"the body is not valid {content_type}: {problems}") from None
    except ValueError as error:
        raise _bad_request(f"the body is not valid {content_type or 'JSON'}: {error}") from None
    except RecursionError:  # the parser gave up: far deeper than the limit
        value = None
        deep = True
    else:
        deep = nests_deeper(value, MAX_BODY_DEPTH)
    if deep:
        raise _bad_request(
            f"the body is not valid {syntax}: nested more than {MAX_BODY_DEPTH} levels"
        )
    return value


def nests_deeper(value: object, limit: int) -> bool:
    """Whether ``value`` has lists or mappings nested more than ``limit`` levels (no recursion)."""
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def body_metadata(body: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a written object's ``metadata``; a 400 when it is not a mapping."""
    meta = body.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise _bad_request(f"metadata: expected a mapping, got {type(meta).__name__}")
    return dict(meta)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "conditions": "type",
}
"""The lists of a pod that a strategic merge patch merges item by item, and each one's key."""


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A strategic merge patch as Kubernetes applies it to a pod: maps merge (``null`` deletes a
    key), the lists of ``MERGE_KEYS`` merge item by item (``$patch: delete`` removes one, a
    ``$setElementOrder`` directive orders them), other lists are replaced."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        merge_key = MERGE_KEYS.get(key)
        if value is None:
            result.pop(key, None)
        elif merge_key is not None and isinstance(value, list):
            order = patch.get(f"$setElementOrder/{key}")
            result[key] = _merge_list(result.get(key) or [], value, merge_key, order)
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    for key, order in patch.items():
        name = key.removeprefix("$setElementOrder/")
        if name != key and name not in patch and isinstance(result.get(name), list):
            result[name] = _merge_list(result[name], [], MERGE_KEYS.get(name, "name"), order)
    return result


def _merge_list(current: list[Any], patch: list[Any], key: str, order: object) -> list[Any]:
    merged: dict[Any, Any] = {}
    for item in current:
        if isinstance(item, dict):
            merged[item.get(key)] = item
    for item in patch:
        if not isinstance(item, dict):
            raise _bad_request(f"a strategic merge patch list item must be an object: {item!r}")
        if item.get("$patch") == "delete":
            merged.pop(item.get(key), None)
        else:
            merged[item.get(key)] = strategic_merge_patch(merged.get(item.get(key)), item)
    if isinstance(order, list):
        wanted = [entry.get(key) for entry in order if isinstance(entry, dict)]
        rest = [k for k in merged if k not in wanted]
        return [merged[k] for k in wanted + rest if k in merged]
    return list(merged.values())


# --- the change log behind resourceVersion and watches ---------------------------------------


@attrs.frozen
class WatchEvent:
    version: int
    type: str
    object: dict[str, Any]


class Gone(Exception):
    """The resourceVersion a watch asked to resume from is older than the kept history."""


class PodLog:
    """The pods as the API shows them, with a resourceVersion bumped on each change.

    ``refresh(pods)`` compares the agent's pods with the last look and records one watch event per
    added, changed or removed pod; a watch waits on ``wait_past``."""

    def __init__(self, now: Callable[[], float], history: int = HISTORY) -> None:
        self._now = now
        self._cond = threading.Condition()
        self.version = 1
        self._objects: dict[PodKey, dict[str, Any]] = {}
        self._created: dict[str, str] = {}
        self._history: deque[WatchEvent] = deque(maxlen=history)

    def refresh(self, pods: Iterable[Pod], node_name: str) -> list[dict[str, Any]]:
        """Take the agent's current pods; answer them as API objects (in the agent's order)."""
        with self._cond:
            seen: dict[PodKey, dict[str, Any]] = {}
            changed = False
            for pod in pods:
                key = (pod.metadata.namespace, pod.metadata.name)
                fresh = self._object(pod, node_name)
                old = self._objects.get(key)
                if old is not None and _without_version(old) == fresh:
                    seen[key] = old
                    continue
                self.version += 1
                fresh["metadata"]["resourceVersion"] = str(self.version)
                kind = "ADDED" if old is None else "MODIFIED"
                self._history.append(WatchEvent(self.version, kind, fresh))
                seen[key] = fresh
                changed = True
            for key, old in self._objects.items():
                if key not in seen:
                    self.version += 1
                    gone = copy.deepcopy(old)
                    gone["metadata"]["resourceVersion"] = str(self.version)
                    self._history.append(WatchEvent(self.version, "DELETED", gone))
                    self._created.pop(old["metadata"].get("uid", ""), None)
                    changed = True
            self._objects = seen
            if changed:
                self._cond.notify_all()
            return list(seen.values())

    def _object(self, pod: Pod, node_name: str) -> dict[str, Any]:
        body = pod_to_dict(pod)
        meta = body["metadata"]
        uid = meta.get("uid", "")
        created = self._created.get(uid)
        if created is None:
            started = pod.status.start_time if pod.status is not None else ""
            created = self._created[uid] = started or rfc3339(self._now())
        meta.setdefault("creationTimestamp", created)
        body["spec"].setdefault("nodeName", node_name)
        status = body.get("status") or {}
        if status.get("podIP"):
            status["podIPs"] = [{"ip": status["podIP"]}]
        if status.get("hostIP"):
            status["hostIPs"] = [{"ip": status["hostIP"]}]
        body["_statusText"] = pod_status_text(pod)
        return body

    def listed(self, pods: Iterable[Pod], node_name: str) -> tuple[list[dict[str, Any]], int]:
        """``refresh``, with the resourceVersion of exactly that list."""
        with self._cond:
            return self.refresh(pods, node_name), self.version

    def events_after(self, version: int) -> list[WatchEvent]:
        with self._cond:
            if version > self.version:
                # Handed out before a restart of the agent (versions start again at 1): waiting
                # for it would miss every change until then; the client lists again instead.
                raise Gone(
                    f"too large resource version: {version} ({self.version}): the agent "
                    "restarted since"
                )
            if version == self.version:
                return []
            if not self._history or self._history[0].version > version + 1:
                raise Gone(f"too old resource version: {version} ({self.version})")
            return [event for event in self._history if event.version > version]

    def wait_past(self, version: int, timeout: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self.version > version, timeout)


def _without_version(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


def public(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without the fields kept for the Table's use."""
    return {k: v for k, v in obj.items() if not k.startswith("_")}


# --- the API ------------------------------------------------------------------------------


@attrs.frozen
class _Request:
    method: str
    segments: tuple[str, ...]
    query: Mapping[str, list[str]]
    accept: str

    def param(self, name: str, default: str = "") -> str:
        value = query_value(self.query, name)
        return default if value is None else value

    def flag(self, name: str) -> bool:
        return query_flag(self.query, name)

    def number(self, name: str, minimum: int = 0) -> int | None:
        return query_int(self.query, name, minimum)


class KubeApi:
    """The Kubernetes API of one node; ``handle`` answers one request (see the module doc)."""

    heads = API_HEADS

    def __init__(
        self,
        kubelet: ApiKubelet,
        source: StaticSource,
        *,
        token: str | None,
        anonymous_reads: bool,
        store: ApiStore | None = None,
    ) -> None:
        self.kubelet = kubelet
        self.source = source
        self.store = store
        """Where every change written over the API is kept (None: in memory only)."""
        self.store_problems: tuple[StoreProblem, ...] = ()
        """The stored files that cannot be read back: while any is left, the source is not
        ready and writes are refused."""
        self._token = token
        self._anonymous_reads = anonymous_reads
        self._write_lock = threading.Lock()
        self.log = PodLog(kubelet.clock.now)
        from kubecore._api.objects import ObjectApi  # it builds on this module

        self.objects = ObjectApi(kubelet.objects, source, now=kubelet.clock.now, api=self)
        self.started = rfc3339(kubelet.clock.now())

    @property
    def node_name(self) -> str:
        return self.kubelet.config.node_name

    # --- entry

    def handle(self, exchange: Exchange, segments: list[str], query: dict[str, list[str]]) -> None:
        request = _Request(
            exchange.command,
            tuple(s for s in segments if s),
            query,
            exchange.headers.get("Accept") or "",
        )
        try:
            if request.method in ("GET", "HEAD"):
                exchange._refuse_body()
            tls = isinstance(exchange.connection, ssl.SSLSocket)
            self._authenticate(exchange.headers.get("Authorization") or "", request.method, tls)
            self._route(exchange, request)
        except (HTTPError, BadParameter) as failure:
            error = failure if isinstance(failure, HTTPError) else error_for(failure)
            # The request's body may be unread: the connection cannot serve another request.
            exchange.close_connection = True
            exchange._send_bytes(error.code, error.body(), JSON_TYPE, error.headers)

    def authenticated(self, header: str, method: str, tls: bool) -> bool:
        """Whether a request with this ``Authorization`` header passes ``_authenticate``."""
        if method not in _WRITE_METHODS and self._anonymous_reads:
            return True
        return check_bearer(header, self._token) is Credentials.VALID

    def require_token(self, header: str, missing: str) -> None:
        """The 401 unless ``header`` carries the API's token (``missing``: why one is needed)."""
        require_bearer(header, self._token, missing)

    def _authenticate(self, header: str, method: str, tls: bool) -> None:
        if method not in _WRITE_METHODS and self._anonymous_reads:
            return
        self.require_token(header, _unauthorized_message(method, self._token is not None, tls))

    def _route(self, exchange: Exchange, request: _Request) -> None:
        s = request.segments
        if request.method not in ("GET", "HEAD") and not (
            len(s) >= 4
            and s[:2] == ("api", "v1")
            and s[2] == "namespaces"
            and s[4:5] in (("pods",), *((r,) for r in OBJECT_RESOURCES))
        ):
            raise ApiError(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                f"{request.method} is not supported on /{'/'.join(s)}",
            )
        if s in (("version",), ("version", "")):
            self._json(exchange, self.version())
        elif s == ("api",):
            self._json(exchange, self.api_versions(exchange))
        elif s == ("apis",):
            self._json(exchange, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []})
        elif s == ("api", "v1"):
            self._json(exchange, API_RESOURCES)
        elif s[:1] == ("openapi",):
            self._openapi(exchange, s[1:])
        elif s[:2] == ("api", "v1") and len(s) >= 3:
            self._core(exchange, request, s[2:])
        else:
            raise ApiError(
                HTTPStatus.NOT_FOUND, "NotFound", f"the server could not find /{'/'.join(s)}"
            )

    def _core(self, exchange: Exchange, request: _Request, rest: tuple[str, ...]) -> None:
        if rest == ("pods",):
            self._list_pods(exchange, request, None)
        elif rest == ("events",):
            self._list_events(exchange, request, None)
        elif rest == ("namespaces",):
            self._list_namespaces(exchange, request)
        elif len(rest) == 1 and rest[0] in OBJECT_RESOURCES:
            self.objects.handle(exchange, request, rest[0], None, None)
        elif rest[0] == "namespaces" and len(rest) == 2:
            self._json(exchange, namespace_object(rest[1], self.started))
        elif rest[0] == "namespaces" and len(rest) >= 3:
            self._namespaced(exchange, request, rest[1], rest[2:])
        else:
            raise ApiError(
                HTTPStatus.NOT_FOUND,
                "NotFound",
                f"the server could not find /api/v1/{'/'.join(rest)}",
            )

    def _namespaced(
        self, exchange: Exchange, request: _Request, namespace: str, rest: tuple[str, ...]
    ) -> None:
        kind, method = rest[0], request.method
        if kind == "events" and len(rest) == 1:
            self._list_events(exchange, request, namespace)
        elif kind == "events" and len(rest) == 2:
            self._get_event(exchange, namespace, rest[1])
        elif kind in OBJECT_RESOURCES and len(rest) <= 2:
            name = rest[1] if len(rest) == 2 else None
            self.objects.handle(exchange, request, kind, namespace, name)
        elif kind != "pods":
            raise ApiError(
                HTTPStatus.NOT_FOUND,
                "NotFound",
                f"the server could not find the requested resource ({kind} are not served)",
            )
        elif len(rest) == 1 and method == "POST":
            self._create(exchange, request, namespace)
        elif len(rest) == 1 and method in ("GET", "HEAD"):
            self._list_pods(exchange, request, namespace)
        elif len(rest) == 2 and method in ("GET", "HEAD"):
            self._get_pod(exchange, request, namespace, rest[1])
        elif len(rest) == 2 and method == "PUT":
            self._replace(exchange, request, namespace, rest[1])
        elif len(rest) == 2 and method == "PATCH":
            self._patch(exchange, request, namespace, rest[1])
        elif len(rest) == 2 and method == "DELETE":
            self._delete(exchange, request, namespace, rest[1])
        elif len(rest) == 3 and rest[2] == "log" and method in ("GET", "HEAD"):
            self._logs(exchange, request, namespace, rest[1])
        elif len(rest) == 3 and rest[2] == "status" and method in ("GET", "HEAD"):
            self._get_pod(exchange, request, namespace, rest[1])
        elif len(rest) == 3 and rest[2] in _STREAMING_SUBRESOURCES:
            raise ApiError(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                f"pods/{rest[2]} is not served by this node's API (it needs a streaming "
                "upgrade); run commands with the kubelet endpoint /run/{namespace}/{pod}/"
                "{container} instead",
            )
        else:
            raise ApiError(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                f"{method} is not supported on {'/'.join(rest)}",
            )

    # --- responses

    def _json(self, exchange: Exchange, value: object, code: HTTPStatus = HTTPStatus.OK) -> None:
        exchange._send_bytes(code, json.dumps(value).encode() + b"\n", JSON_TYPE)

    # --- discovery

    def version(self) -> dict[str, Any]:
        major, minor = KUBERNETES_VERSION
        return {
            "major": str(major),
            "minor": str(minor),
            "gitVersion": f"v{major}.{minor}.0+kubecore-{__version__}",
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": "1970-01-01T00:00:00Z",
            "goVersion": "python",
            "compiler": "kubecore",
            "platform": "linux/amd64",
        }

    def api_versions(self, exchange: Exchange) -> dict[str, Any]:
        host = exchange.headers.get("Host") or ""
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
        }

    def _openapi(self, exchange: Exchange, rest: tuple[str, ...]) -> None:
        if rest == ("v2",):
            accept = exchange.headers.get("Accept") or ""
            if "protobuf" in accept.split(",")[0]:
                # kubectl before 1.27 reads this document, in protobuf only.
                exchange._send_bytes(HTTPStatus.OK, OPENAPI_V2_PROTOBUF, OPENAPI_V2_PROTOBUF_TYPE)
            else:
                self._json(exchange, OPENAPI_V2)
        elif rest == ("v3",):
            self._json(exchange, {"paths": {"api/v1": {"serverRelativeURL": OPENAPI_V3_URL}}})
        elif rest == ("v3", "api", "v1"):
            self._json(exchange, OPENAPI_V3)
        else:
            raise _not_found("openapi documents", "/".join(rest))

    # --- reads

    def current_pods(self) -> list[dict[str, Any]]:
        return self.log.refresh(self.kubelet.pods(), self.node_name)

    def _pod_filter(self, request: _Request, namespace: str | None) -> Requirement:
        labels = label_selector(request.param("labelSelector"))
        fields = field_selector(request.param("fieldSelector"), POD_FIELDS)

        def match(pod: Mapping[str, Any]) -> bool:
            meta = pod["metadata"]
            return (
                (namespace is None or meta.get("namespace") == namespace)
                and labels(meta.get("labels") or {})
                and fields(_pod_fields(dict(pod)))
            )

        return match

    def _list_pods(self, exchange: Exchange, request: _Request, namespace: str | None) -> None:
        if request.flag("watch"):
            self._watch_pods(exchange, request, namespace)
            return
        match = self._pod_filter(request, namespace)
        listed, number = self.log.listed(self.kubelet.pods(), self.node_name)
        pods, version = [pod for pod in listed if match(pod)], str(number)
        if wants_table(request.accept):
            self._json(exchange, self._pod_table(pods, request, version))
            return
        self._json(
            exchange,
            {
                "kind": "PodList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": version},
                "items": [public(pod) for pod in pods],
            },
        )

    def _pod_table(
        self, pods: list[dict[str, Any]], request: _Request, version: str
    ) -> dict[str, Any]:
        now = self.kubelet.clock.now()
        rows = [(pod_cells(pod, now, self.node_name), public(pod)) for pod in pods]
        return _table(POD_COLUMNS, rows, version, request.param("includeObject", "Metadata"))

    def _find(self, namespace: str, name: str) -> dict[str, Any]:
        for pod in self.current_pods():
            meta = pod["metadata"]
            if meta["namespace"] == namespace and meta["name"] == name:
                return pod
        raise _not_found("pods", name)

    def _get_pod(self, exchange: Exchange, request: _Request, namespace: str, name: str) -> None:
        pod = self._find(namespace, name)
        if wants_table(request.accept):
            self._json(exchange, self._pod_table([pod], request, str(self.log.version)))
        else:
            self._json(exchange, public(pod))

    def _events(self, namespace: str | None) -> list[dict[str, Any]]:
        return [
            event_object(event, self.node_name)
            for event in self.kubelet.events.events(namespace=namespace)
        ]

    def _list_events(self, exchange: Exchange, request: _Request, namespace: str | None) -> None:
        if request.flag("watch"):
            raise _bad_request("watching events is not supported; list them instead")
        fields = field_selector(request.param("fieldSelector"), EVENT_FIELDS)
        events = [e for e in self._events(namespace) if fields(_event_fields(e))]
        version = str(self.log.version)
        if wants_table(request.accept):
            now = self.kubelet.clock.now()
            rows = [(event_cells(e, now), e) for e in events]
            include = request.param("includeObject", "Metadata")
            self._json(exchange, _table(EVENT_COLUMNS, rows, version, include))
            return
        self._json(
            exchange,
            {
                "kind": "EventList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": version},
                "items": events,
            },
        )

    def _get_event(self, exchange: Exchange, namespace: str, name: str) -> None:
        for event in self._events(namespace):
            if event["metadata"]["name"] == name:
                self._json(exchange, event)
                return
        raise _not_found("events", name)

    def _list_namespaces(self, exchange: Exchange, request: _Request) -> None:
        names = sorted({"default"} | {p["metadata"]["namespace"] for p in self.current_pods()})
        items = [namespace_object(name, self.started) for name in names]
        version = str(self.log.version)
        if wants_table(request.accept):
            now = self.kubelet.clock.now()
            age = time_age(self.started, now)
            rows = [([ns["metadata"]["name"], "Active", age], ns) for ns in items]
            include = request.param("includeObject", "Metadata")
            self._json(exchange, _table(NAMESPACE_COLUMNS, rows, version, include))
            return
        self._json(
            exchange,
            {
                "kind": "NamespaceList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": version},
                "items": items,
            },
        )

    # --- watch

    def _watch_pods(self, exchange: Exchange, request: _Request, namespace: str | None) -> None:
        match = self._pod_filter(request, namespace)
        table = wants_table(request.accept)
        timeout = min(
            float(request.number("timeoutSeconds") or MAX_WATCH_SECONDS), MAX_WATCH_SECONDS
        )
        raw_version = request.param("resourceVersion")
        start = int(raw_version) if raw_version.isdigit() and raw_version != "0" else None
        with exchange.server.follow_slot(("", "watch", str(id(exchange)))):
            events = self._watch_events(exchange, request, match, start, timeout, table)
            exchange._stream(b"", events, JSON_TYPE)

    def _watch_events(
        self,
        exchange: Exchange,
        request: _Request,
        match: Requirement,
        start: int | None,
        timeout: float,
        table: bool,
    ) -> Iterator[bytes]:
        deadline = time.monotonic() + timeout
        initial, version = self.log.listed(self.kubelet.pods(), self.node_name)
        shown = {_key(pod) for pod in initial if match(pod)}
        if start is None:
            for pod in initial:
                if _key(pod) in shown:
                    yield self._watch_line("ADDED", pod, request, table)
        else:
            version = start
        while time.monotonic() < deadline and not _client_gone(exchange.connection):
            try:
                pending = self.log.events_after(version)
            except Gone as gone:
                expired = ApiError(HTTPStatus.GONE, "Expired", str(gone))
                yield json.dumps({"type": "ERROR", "object": expired.status()}).encode() + b"\n"
                return
            for event in pending:
                version = event.version
                kind = _seen_as(event, match(event.object), shown)
                if kind:
                    yield self._watch_line(kind, event.object, request, table)
            if not pending:
                yield b""  # lets the stream see a stopping server
                self.log.wait_past(version, WATCH_TICK)
                self.current_pods()

    def _watch_line(self, kind: str, pod: dict[str, Any], request: _Request, table: bool) -> bytes:
        obj = (
            self._pod_table([pod], request, pod["metadata"]["resourceVersion"])
            if table
            else public(pod)
        )
        return json.dumps({"type": kind, "object": obj}).encode() + b"\n"

    # --- logs

    def _logs(self, exchange: Exchange, request: _Request, namespace: str, name: str) -> None:
        pod = self._find(namespace, name)
        container = request.param("container") or _only_container(pod)
        spec = pod.get("spec") or {}
        names = [c["name"] for c in spec.get("containers", []) + spec.get("initContainers", [])]
        if container not in names:
            raise _bad_request(f"container {container} is not valid for pod {name}")
        try:
            options = parse_log_options(request.query)
        except KubecoreError as error:
            raise error_for(error) from None
        if not options.follow:
            self._send_log(exchange, namespace, name, container, options)
            return
        # The slot is taken before the runtime's stream is opened: a refused follow opens none.
        with exchange.server.follow_slot((namespace, name, container)):
            self._send_log(exchange, namespace, name, container, options)

    def _send_log(
        self, exchange: Exchange, namespace: str, name: str, container: str, options: LogOptions
    ) -> None:
        try:
            lines = iter(
                self.kubelet.container_logs(namespace, name, container, **options.kwargs())
            )
            # The first read may fail: fail before the headers go out.
            first = next(lines, b"")
        except KubecoreError as error:
            raise error_for(error) from None
        exchange._stream(first, lines, TEXT_TYPE)

    # --- writes

    def _body(self, exchange: Exchange) -> object:
        content_type = (exchange.headers.get("Content-Type") or "").split(";")[0].strip()
        return parse_body(exchange._read_body(), content_type)

    def _decode(self, data: dict[str, Any]) -> Pod:
        try:
            return pod_from_dict(data)
        except ValidationError as error:
            name = (data.get("metadata") or {}).get("name", "")
            raise error_for(error, kind="Pod", name=name) from None

    def _exists(self, namespace: str, name: str) -> bool:
        return any(_key(pod) == (namespace, name) for pod in self.current_pods())

    def _owned(self, namespace: str, name: str) -> Pod | None:
        for pod in self.source.pods:
            if pod.metadata.namespace == namespace and pod.metadata.name == name:
                return pod
        return None

    def _refuse_foreign(self, namespace: str, name: str) -> NoReturn:
        """A pod of another source (a manifest file) is read-only over the API; a pod not on
        the node is not found."""
        pod = self._find(namespace, name)
        source = pod["metadata"].get("annotations", {}).get(SOURCE_ANNOTATION, "?")
        raise ApiError(
            HTTPStatus.FORBIDDEN,
            "Forbidden",
            f'pods "{name}" is forbidden: it comes from the "{source}" source (a static pod); '
            f"change or remove it there, the API cannot",
            details={"name": name, "kind": "pods"},
        )

    # --- the store: every change is on disk before it is applied and answered

    def restore(self, state: StoredState) -> None:
        """Take ``state`` (what the store holds) as the source's whole state: one SET of its
        pods and objects. Files it could not read keep the source not ready (their pods are
        kept running, nothing is deleted) until they are fixed or removed."""
        self.objects.adopt(state.objects)
        self.source.set(state.pods, state.objects, unknown=unreadable(state.problems))
        self._set_problems(state.problems)

    def _set_problems(self, problems: tuple[StoreProblem, ...]) -> None:
        if problems and problems != self.store_problems:
            for problem in problems:
                logger.error(
                    "API store file %s cannot be read (%s): source %s is not ready; pods are "
                    "kept and nothing is deleted, and writes over the API are refused, until "
                    "the file is fixed or removed",
                    problem.path,
                    problem.reason,
                    self.source.name,
                )
            reason = unreadable(problems)
            self.kubelet.update(PodUpdate(Operation.NOT_READY, (), self.source.name, reason=reason))
        elif self.store_problems and not problems:
            logger.warning("the API store can be read again: source %s is ready", self.source.name)
        self.store_problems = problems

    def _writable(self) -> None:
        """Raise 503 while a stored file cannot be read (reading the store again first: a file
        fixed or removed since lets writes through). Call under the write lock."""
        if not self.store_problems or self.store is None:
            return
        state = self.store.load()
        if not state.problems:
            self.restore(state)
            return
        self._set_problems(state.problems)
        raise ApiError(
            HTTPStatus.SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            "writes are refused while the API's store cannot be read ("
            + "; ".join(str(p) for p in state.problems)
            + "): fix or remove the file; the pods of the API are kept running meanwhile",
        )

    def save(self, item: Pod | KubeObject) -> None:
        """Put ``item`` in the store (before the change is applied); 500 when it cannot be."""
        if self.store is None:
            return
        try:
            self.store.put(item)
        except (OSError, ValueError) as error:
            raise _not_stored(item.kind, item.metadata.name, error) from None

    def forget(self, item: Pod | KubeObject) -> None:
        """Remove ``item`` from the store (before it is removed from the source)."""
        if self.store is None:
            return
        try:
            self.store.delete(item.kind, item.metadata.namespace, item.metadata.name)
        except (OSError, ValueError) as error:
            raise _not_stored(item.kind, item.metadata.name, error) from None

    # --- writes, continued

    def _store(self, pod: Pod, *, owned: Pod | None, dry_run: bool) -> dict[str, Any]:
        # Created once, by the API: a replace or patch keeps the time (and AGE goes on).
        created = owned.metadata.creation_timestamp if owned is not None else ""
        meta = attrs.evolve(
            pod.metadata, creation_timestamp=created or rfc3339(self.kubelet.clock.now())
        )
        (stamped,) = prepare_pods([attrs.evolve(pod, metadata=meta)], self.source.name)
        if not dry_run:
            self.save(stamped)
            if owned is None:
                self.source.add(stamped)
            else:
                self.source.update(stamped)
        body = pod_to_dict(stamped)
        key = (pod.metadata.namespace, pod.metadata.name)
        for obj in self.current_pods():
            meta = obj["metadata"]
            if (meta["namespace"], meta["name"]) != key:
                continue
            if not dry_run:
                return public(obj)
            # What would be stored, with what the node shows of the pod now.
            for field in ("creationTimestamp", "resourceVersion"):
                body["metadata"][field] = meta[field]
            body["spec"].setdefault("nodeName", self.node_name)
            if "status" in obj:
                body["status"] = obj["status"]
            return body
        body["metadata"]["creationTimestamp"] = rfc3339(self.kubelet.clock.now())
        return body

    def _dry_run(self, request: _Request) -> bool:
        value = request.param("dryRun")
        if value not in ("", "All"):
            raise _bad_request(f'dryRun: only "All" is supported, got {value!r}')
        return value == "All"

    def _create(self, exchange: Exchange, request: _Request, namespace: str) -> None:
        data = clean_manifest(self._body(exchange), namespace)
        pod = self._decode(data)
        with self._write_lock:
            self._writable()
            name = pod.metadata.name
            if self._exists(namespace, name) or self._owned(namespace, name) is not None:
                raise ApiError(
                    HTTPStatus.CONFLICT,
                    "AlreadyExists",
                    f'pods "{pod.metadata.name}" already exists',
                    details={"name": pod.metadata.name, "kind": "pods"},
                )
            stored = self._store(pod, owned=None, dry_run=self._dry_run(request))
        self._json(exchange, stored, HTTPStatus.CREATED)

    def _replace(self, exchange: Exchange, request: _Request, namespace: str, name: str) -> None:
        data = clean_manifest(self._body(exchange), namespace)
        self._write(exchange, request, namespace, name, lambda _current: data)

    def _patch(self, exchange: Exchange, request: _Request, namespace: str, name: str) -> None:
        content_type = (exchange.headers.get("Content-Type") or "").split(";")[0].strip()
        patch = self._body(exchange)
        if content_type == "application/apply-patch+yaml":
            data = clean_manifest(patch, namespace)
            self._write(exchange, request, namespace, name, lambda _current: data, upsert=True)
            return
        if content_type not in (
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
        ):
            raise ApiError(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                "UnsupportedMediaType",
                f"the patch type {content_type!r} is not supported; use a merge patch, a "
                "strategic merge patch or server-side apply",
            )
        merge = (
            strategic_merge_patch
            if content_type == "application/strategic-merge-patch+json"
            else merge_patch
        )

        def patched(current: dict[str, Any]) -> dict[str, Any]:
            return clean_manifest(merge(current, patch), namespace)

        self._write(exchange, request, namespace, name, patched)

    def _write(
        self,
        exchange: Exchange,
        request: _Request,
        namespace: str,
        name: str,
        make: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        upsert: bool = False,
    ) -> None:
        with self._write_lock:
            self._writable()
            owned = self._owned(namespace, name)
            # Server-side apply may create; nothing may overwrite another source's pod.
            if owned is None and (not upsert or self._exists(namespace, name)):
                self._refuse_foreign(namespace, name)
            current = pod_to_dict(owned) if owned is not None else {}
            data = make(current)
            if (data.get("metadata") or {}).get("name", name) != name:
                raise _bad_request("the name of the object does not match the name on the URL")
            data["metadata"]["name"] = name
            if owned is not None:
                data["metadata"]["uid"] = owned.metadata.uid
            pod = self._decode(data)
            stored = self._store(pod, owned=owned, dry_run=self._dry_run(request))
        self._json(exchange, stored, HTTPStatus.OK if owned is not None else HTTPStatus.CREATED)

    def _delete(self, exchange: Exchange, request: _Request, namespace: str, name: str) -> None:
        options = self._body(exchange) if _has_body(exchange) else {}
        grace = _grace_period(options, request)
        dry_run = self._dry_run(request)
        with self._write_lock:
            self._writable()
            owned = self._owned(namespace, name)
            if owned is None:
                self._refuse_foreign(namespace, name)
            last = self._find(namespace, name)
            if not dry_run:
                self.forget(owned)
                if grace is not None and grace != owned.spec.termination_grace_period_seconds:
                    # The agent stops a removed pod with the grace period it last saw.
                    spec = attrs.evolve(owned.spec, termination_grace_period_seconds=grace)
                    self.source.update(attrs.evolve(owned, spec=spec))
                    self.kubelet.pods()
                self.source.remove(owned)
                self.current_pods()
        self._json(exchange, public(last))


def _not_stored(kind: str, name: str, error: OSError | ValueError) -> ApiError:
    why = (error.strerror if isinstance(error, OSError) else None) or str(error)
    return ApiError(
        HTTPStatus.INTERNAL_SERVER_ERROR,
        "InternalError",
        f'{kind} "{name}" was not changed: the API\'s store {why}',
        details={"name": name, "kind": kind},
    )


def _unauthorized_message(method: str, has_token: bool, tls: bool) -> str:
    what = "writes" if method in _WRITE_METHODS else "reads on a non-loopback address"
    message = f"Unauthorized: {what} need a bearer token"
    if not has_token:
        return message + "; start the agent with --api-token-file"
    if not tls:
        # client-go sends no bearer token over plain HTTP: the node must serve HTTPS.
        return message + (
            "; kubectl sends its token only over HTTPS: start the agent with --tls-cert-file "
            "and --tls-private-key-file and use a kubeconfig with the CA and the token"
        )
    return message


def _key(obj: Mapping[str, Any]) -> PodKey:
    return (obj["metadata"]["namespace"], obj["metadata"]["name"])


def _seen_as(event: WatchEvent, matches: bool, shown: set[PodKey]) -> str:
    """The event as one watch with a selector sees it ('' for none): a pod that comes into the
    selection is ADDED, one that leaves it DELETED, as Kubernetes' watch cache answers."""
    key = _key(event.object)
    was_shown = key in shown
    if event.type == "DELETED" or not matches:
        shown.discard(key)
        return "DELETED" if was_shown else ""
    shown.add(key)
    return "MODIFIED" if was_shown else "ADDED"


def _has_body(exchange: Exchange) -> bool:
    length = exchange.headers.get("Content-Length")
    return length not in (None, "0")


def _grace_period(options: object, request: _Request) -> int | None:
    given = request.number("gracePeriodSeconds")
    if given is None and isinstance(options, dict):
        value = options.get("gracePeriodSeconds")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            given = value
    if given is not None and given < 0:
        return None
    return given


def _only_container(pod: dict[str, Any]) -> str:
    containers: list[str] = [c["name"] for c in (pod.get("spec") or {}).get("containers", [])]
    if len(containers) == 1:
        return containers[0]
    name = pod["metadata"]["name"]
    raise _bad_request(
        f"a container name must be specified for pod {name}, choose one of: "
        f"[{' '.join(containers)}]"
    )


def _client_gone(sock: socket.socket) -> bool:
    """A watch client sends nothing: input (or end of input) means it went away."""
    with contextlib.suppress(OSError, ValueError):
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)
    return True


# --- attaching the API to an agent ----------------------------------------------------------


def attach_api(
    kubelet: ApiKubelet, config: ApiServerConfig, *, address: str, tls: bool = False
) -> KubeApi:
    """The Kubernetes API for ``kubelet``, served on ``address``: its in-process source delivers
    straight to the agent, and reports at once what the API's store under
    ``<root-dir>/api`` holds (nothing on a new root directory): the pods, ConfigMaps and Secrets
    written over the API before a restart, with their uids and creation times, so their
    containers are adopted, not replaced. Call it before ``kubelet.start()``. Pass the result to
    ``KubeletServer(..., api=...)``; ``tls`` says whether that server has a certificate.
    Raises ``ValueError`` for a non-loopback address without a token file or without TLS, and
    ``OSError`` for an unreadable token file."""
    token = read_token_file(config.token_file) if config.token_file else None
    loopback = is_loopback(address)
    if not loopback and token is None:
        raise ValueError(
            f"serving the Kubernetes API on {address} needs --api-token-file "
            "(only 127.0.0.1 / ::1 may be read without a token)"
        )
    if not loopback and not tls:
        raise ValueError(
            f"serving the Kubernetes API on {address} needs --tls-cert-file and "
            "--tls-private-key-file (a token must not cross the network in clear text)"
        )
    store = ApiStore(os.path.join(kubelet.root_dir, STORE_DIR))
    source = StaticSource(name=config.source_name, sink=kubelet.update)  # silent until restored
    api = KubeApi(kubelet, source, token=token, anonymous_reads=loopback, store=store)
    api.restore(store.load())
    return api


# --- static documents -------------------------------------------------------------------------


def _resource(
    name: str,
    kind: str,
    verbs: list[str],
    *,
    namespaced: bool = True,
    short: list[str] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "singularName": "" if "/" in name else name.removesuffix("s"),
        "namespaced": namespaced,
        "kind": kind,
        "verbs": verbs,
    }
    if short:
        body["shortNames"] = short
    if "/" not in name:
        body["categories"] = ["all"] if name == "pods" else []
    return body


API_RESOURCES: dict[str, Any] = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        _resource(
            "pods",
            "Pod",
            ["create", "delete", "get", "list", "patch", "update", "watch"],
            short=["po"],
        ),
        _resource("pods/log", "Pod", ["get"]),
        _resource("pods/status", "Pod", ["get"]),
        _resource("events", "Event", ["get", "list"], short=["ev"]),
        _resource(
            "configmaps",
            "ConfigMap",
            ["create", "delete", "get", "list", "patch", "update"],
            short=["cm"],
        ),
        _resource("secrets", "Secret", ["create", "delete", "get", "list", "patch", "update"]),
        _resource("namespaces", "Namespace", ["get", "list"], namespaced=False, short=["ns"]),
    ],
}

OPENAPI_V3_URL = "/openapi/v3/api/v1?hash=kubecore1"

_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_POD_GVK = [{"group": "", "version": "v1", "kind": "Pod"}]
_FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "description": "Strict: unknown fields are refused (kubecore always refuses them).",
    "schema": {"type": "string", "uniqueItems": True},
}


def _pod_schema() -> dict[str, Any]:
    return {
        "description": "A v1 Pod (kubecore checks the spec itself and names every problem).",
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {**_OBJECT, "description": "ObjectMeta"},
            "spec": {**_OBJECT, "description": "PodSpec"},
            "status": {**_OBJECT, "description": "PodStatus"},
        },
        "x-kubernetes-group-version-kind": _POD_GVK,
    }


OPENAPI_V3: dict[str, Any] = {
    "openapi": "3.0.0",
    "info": {"title": "kubecore node API", "version": "v1"},
    "paths": {
        "/api/v1/namespaces/{namespace}/pods": {
            "post": {
                "operationId": "createCoreV1NamespacedPod",
                "parameters": [_FIELD_VALIDATION],
                "responses": {"201": {"description": "Created"}},
                "x-kubernetes-action": "post",
                "x-kubernetes-group-version-kind": _POD_GVK[0],
            }
        },
        "/api/v1/namespaces/{namespace}/pods/{name}": {
            "put": {
                "operationId": "replaceCoreV1NamespacedPod",
                "parameters": [_FIELD_VALIDATION],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "put",
                "x-kubernetes-group-version-kind": _POD_GVK[0],
            },
            "patch": {
                "operationId": "patchCoreV1NamespacedPod",
                "parameters": [_FIELD_VALIDATION],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": _POD_GVK[0],
            },
        },
    },
    "components": {"schemas": {"io.k8s.api.core.v1.Pod": _pod_schema()}},
}

OPENAPI_V2: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "kubecore node API", "version": "v1"},
    "paths": {
        "/api/v1/namespaces/{namespace}/pods": {
            "post": {
                "operationId": "createCoreV1NamespacedPod",
                "parameters": [{"name": "fieldValidation", "in": "query", "type": "string"}],
                "responses": {"201": {"description": "Created"}},
                "x-kubernetes-action": "post",
                "x-kubernetes-group-version-kind": _POD_GVK[0],
            }
        },
        "/api/v1/namespaces/{namespace}/pods/{name}": {
            "patch": {
                "operationId": "patchCoreV1NamespacedPod",
                "parameters": [{"name": "fieldValidation", "in": "query", "type": "string"}],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": _POD_GVK[0],
            }
        },
    },
    "definitions": {"io.k8s.api.core.v1.Pod": _pod_schema()},
}


# --- the OpenAPI v2 document in protobuf (gnostic's openapi.v2.Document), as old kubectl reads it

OPENAPI_V2_PROTOBUF_TYPE = "application/octet-stream"
"""What the API server answers a request for the protobuf form with (its media type has an
``@``, which is not valid in a Content-Type)."""


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _message(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a string, bytes or a nested message)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _text(number: int, value: str) -> bytes:
    return _message(number, value.encode())


def _openapi_v2_protobuf() -> bytes:
    # No schema names Pod's kind on purpose: kubectl then skips its client-side validation (the
    # agent validates every field itself and refuses unknown ones) and computes apply's patch
    # from its own built-in Pod type, with the merge keys of the pod's lists.
    info = _text(1, "kubecore node API") + _text(2, "v1")
    return _text(1, "2.0") + _message(2, info) + _message(8, b"")


OPENAPI_V2_PROTOBUF = _openapi_v2_protobuf()
