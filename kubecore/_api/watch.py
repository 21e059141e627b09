"""The change logs behind the ``resourceVersion`` of the objects the node stores (pods, ConfigMaps,
Secrets) and their watches (``?watch=true``): each look at a kind's objects that finds one added,
changed or removed records a watch event, and a watch streams them as ADDED / MODIFIED / DELETED
lines, from now or from a version a client kept."""

from __future__ import annotations

import contextlib
import copy
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from kubecore._api.errors import ApiError
from kubecore._api.request import JSON_TYPE, Exchange, Request
from kubecore._manifest import pod_to_dict
from kubecore._model.v1 import Pod
from kubecore._status.compute import pod_status_text
from kubecore._util.timefmt import rfc3339

if TYPE_CHECKING:
    from kubecore._config.base import PodKey

WATCH_TICK = 0.2
"""Seconds a watch waits for a change before it looks whether its client or the server went."""
LOOK_AGAIN = 1.0
"""Seconds after which a watch with nothing pushed to it looks at the objects anyway (what no
subscription tells: a termination that ended, an object a source changed)."""
POLL_TICK = 1.0
"""How often a polled watch (``serve_polled``) looks again."""
"""Seconds between two looks at the pods while a watch waits for a change."""
MAX_WATCH_SECONDS = 1800.0
BOOKMARK_SECONDS = 60.0
"""How long a watch that allows bookmarks (``allowWatchBookmarks``) goes without an event before
it is sent a BOOKMARK of the version it has reached (the API server's: about a minute), so that
a client resumes from there, not from an older version the history may no longer hold."""
HISTORY = 1000
"""Watch events kept for a client that resumes from an older resourceVersion."""


@attrs.frozen
class WatchEvent:
    version: int
    type: str
    object: dict[str, Any]
    previous: dict[str, Any] | None = None
    """The object before the change (None for ADDED)."""


class Gone(Exception):
    """The resourceVersion a watch asked to resume from is older than the kept history."""


class ChangeLog:
    """The objects of one kind as the API shows them, with a resourceVersion bumped on each
    change: ``take`` compares what is there now with the last look and records one watch event
    per object added, changed or removed; a watch reads ``events_after`` and waits on
    ``wait_past``. Objects are JSON documents keyed by namespace and name; a key starting with
    ``_`` is the API's own (``public`` drops it)."""

    def __init__(self, history: int = HISTORY) -> None:
        self._cond = threading.Condition()
        self.version = 1
        self._objects: dict[PodKey, dict[str, Any]] = {}
        self._history: deque[WatchEvent] = deque(maxlen=history)
        self.pushed = False
        """Changes are pushed (``nudge``): a watch looks when told, and once a ``LOOK_AGAIN``
        otherwise. A log not pushed is looked at every ``WATCH_TICK``."""
        self._nudges = 0
        self._looked_at = 0

    def take(self, fresh: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        """Take the objects there now (without their resourceVersion); answer them with theirs
        (in the order given), and the resourceVersion of exactly that list."""
        with self._cond:
            seen: dict[PodKey, dict[str, Any]] = {}
            changed = False
            for obj in fresh:
                key = _key(obj)
                old = self._objects.get(key)
                if old is not None and _without_version(old) == obj:
                    seen[key] = old
                    continue
                self._record("ADDED" if old is None else "MODIFIED", obj, old)
                seen[key] = obj
                changed = True
            for key, old in self._objects.items():
                if key not in seen:
                    self._record("DELETED", copy.deepcopy(old), old)
                    self._forget(old)
                    changed = True
            self._objects = seen
            if changed:
                self._cond.notify_all()
            return list(seen.values()), self.version

    def _forget(self, obj: dict[str, Any]) -> None:
        """What a subclass keeps of an object that is gone, dropped."""

    def _record(self, kind: str, obj: dict[str, Any], previous: dict[str, Any] | None) -> None:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        self._history.append(WatchEvent(self.version, kind, obj, previous))

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
        """Wait up to ``timeout`` seconds for a version past ``version``, or a ``nudge``."""
        with self._cond:
            self._cond.wait_for(lambda: self.version > version or self.stale, timeout)

    @property
    def stale(self) -> bool:
        """Whether a ``nudge`` came since the last look began (``looking``)."""
        return self._nudges != self._looked_at

    def nudge(self) -> None:
        """The objects changed (pushed by the agent's change subscription): the watches waiting
        look again now."""
        with self._cond:
            self._nudges += 1
            self._cond.notify_all()

    def looking(self) -> None:
        """A look at the objects begins (before they are read): the nudges until now are
        answered by it; one that comes while it reads makes the log stale again."""
        self._looked_at = self._nudges


class PodLog(ChangeLog):
    """The pods as the API shows them (``ChangeLog``), from the agent's pods."""

    def __init__(self, now: Callable[[], float], history: int = HISTORY) -> None:
        super().__init__(history)
        self._now = now
        self._created: dict[str, str] = {}

    def refresh(
        self,
        pods: Iterable[Pod],
        node_name: str,
        marks: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """Take the agent's current pods; answer them as API objects (in the agent's order),
        with the metadata ``marks`` gives a pod's uid (a deletion's fields)."""
        return self.listed(pods, node_name, marks)[0]

    def _forget(self, obj: dict[str, Any]) -> None:
        self._created.pop(obj["metadata"].get("uid", ""), None)

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
        # The API server's default (kubectl debug reads the pod's securityContext as set).
        body["spec"].setdefault("securityContext", {})
        status = body.get("status") or {}
        if status.get("podIP"):
            status["podIPs"] = [{"ip": status["podIP"]}]
        if status.get("hostIP"):
            status["hostIPs"] = [{"ip": status["hostIP"]}]
        body["_statusText"] = pod_status_text(pod)
        return body

    def listed(
        self,
        pods: Iterable[Pod],
        node_name: str,
        marks: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        """``refresh``, with the resourceVersion of exactly that list."""
        with self._cond:
            fresh = []
            for pod in pods:
                body = self._object(pod, node_name)
                if marks and pod.uid in marks:
                    body["metadata"].update(marks[pod.uid])
                fresh.append(body)
            return self.take(fresh)


def _without_version(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


def public(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without the fields kept for the Table's use."""
    return {k: v for k, v in obj.items() if not k.startswith("_")}


# --- watch streams --------------------------------------------------------------------------


class Watched(Protocol):
    """The objects a watch follows (``kubecore._api.pods.PodResource``, ``kubecore._api.objects.
    ObjectResource``): ``look`` brings their ``log`` up to date."""

    @property
    def log(self) -> ChangeLog: ...

    def look(self) -> tuple[list[dict[str, Any]], int]: ...


Match = Callable[[dict[str, Any]], bool]
"""Whether a watch shows an object (its selectors)."""
Render = Callable[[dict[str, Any]], dict[str, Any]]
"""What a watch line shows of an object (the object, or its one-row ``Table``)."""


INITIAL_EVENTS_END = "k8s.io/initial-events-end"
"""The annotation of the bookmark that ends a watch's initial events (``sendInitialEvents``)."""


def initial_events_end(kind: str, version: int) -> bytes:
    """The BOOKMARK line that tells a client asking for ``sendInitialEvents`` (kubectl 1.35 and
    later, through client-go's watch-list) that the state it has been sent is whole, as of
    ``version``: without it such a client waits for it, then gives up."""
    return bookmark(kind, version, {INITIAL_EVENTS_END: "true"})


def bookmark(kind: str, version: int, annotations: dict[str, str] | None = None) -> bytes:
    """A BOOKMARK line: the watch has seen every change of ``kind`` up to ``version``."""
    meta: dict[str, Any] = {"resourceVersion": str(version)}
    if annotations:
        meta["annotations"] = annotations
    return _line("BOOKMARK", {"kind": kind, "apiVersion": "v1", "metadata": meta})


def serve_watch(
    exchange: Exchange,
    request: Request,
    match: Match,
    pods: Watched,
    render: Render,
    kind: str = "Pod",
) -> None:
    """Stream the watch events of the objects (of ``kind``) that ``match`` selects, until
    ``timeoutSeconds``, the client goes away or the server stops. With ``sendInitialEvents``
    the current state comes first, whatever ``resourceVersion`` says, and a bookmark ends it;
    with ``allowWatchBookmarks`` a quiet watch gets a bookmark each ``BOOKMARK_SECONDS``."""
    timeout = min(float(request.number("timeoutSeconds") or MAX_WATCH_SECONDS), MAX_WATCH_SECONDS)
    start = request.resource_version()
    initial_end = kind if request.flag("sendInitialEvents") else None
    if initial_end is not None:
        start = None
    bookmarks = kind if request.flag("allowWatchBookmarks") else None
    with exchange.server.watch_slot(exchange.headers.get("Authorization") or ""):
        lines = _watch_lines(exchange, match, start, timeout, pods, render, initial_end, bookmarks)
        exchange._stream(b"", lines, JSON_TYPE)


Look = Callable[[], dict[str, Any] | None]
"""One object as a polled watch reads it now (None: not there, or not selected)."""


def serve_polled(exchange: Exchange, request: Request, look: Look, render: Render) -> None:
    """Stream a watch of one object read by polling ``look`` (a kind without a change log, as
    the agent's Node): ADDED, then MODIFIED each time what it shows changes (DELETED when
    ``look`` stops showing it), until ``timeoutSeconds``, the client goes away or the server
    stops. From the ``resourceVersion`` a list handed out, the object as it stands at that
    version is not sent again (``kubectl get -w`` lists first)."""
    timeout = min(float(request.number("timeoutSeconds") or MAX_WATCH_SECONDS), MAX_WATCH_SECONDS)
    initial_end = request.flag("sendInitialEvents")
    raw_version = request.param("resourceVersion")
    listed = raw_version if raw_version not in ("", "0") and not initial_end else None
    with exchange.server.watch_slot(exchange.headers.get("Authorization") or ""):
        lines = _polled_lines(exchange, look, timeout, render, initial_end, listed)
        exchange._stream(b"", lines, JSON_TYPE)


def _polled_lines(
    exchange: Exchange,
    look: Look,
    timeout: float,
    render: Render,
    initial_end: bool,
    listed: str | None,
) -> Iterator[bytes]:
    deadline = time.monotonic() + timeout
    seen: dict[str, Any] | None = None
    first = True
    while first or (time.monotonic() < deadline and not _client_gone(exchange.connection)):
        if not first:
            time.sleep(POLL_TICK)
        now = look()
        if first and now is not None and listed is not None:
            # The client listed it at ``listed``: as it stands then, it has it already.
            same = str(now.get("metadata", {}).get("resourceVersion")) == listed
            seen = now if same else {"metadata": {}}
        if now is None and seen is not None:
            yield _line("DELETED", render(seen))
        elif now is not None and seen is None:
            yield _line("ADDED", render(now))
            if first and initial_end:
                version = int(now.get("metadata", {}).get("resourceVersion") or 0)
                yield initial_events_end(str(now.get("kind") or ""), version)
        elif (
            now is not None and seen is not None and _without_version(now) != _without_version(seen)
        ):
            yield _line("MODIFIED", render(now))
        else:
            yield b""  # lets the stream see a stopping server
        first = False
        seen = now


def _watch_lines(
    exchange: Exchange,
    match: Match,
    start: int | None,
    timeout: float,
    pods: Watched,
    render: Render,
    initial_end: str | None,
    bookmarks: str | None,
) -> Iterator[bytes]:
    deadline = time.monotonic() + timeout
    marked = looked = time.monotonic()
    initial, version = pods.look()
    shown = {_key(pod) for pod in initial if match(pod)}
    if start is not None:
        with contextlib.suppress(Gone):  # answered below, as the first events are read
            shown = _shown_at(pods.log.events_after(start), initial, match)
    if start is None:
        for pod in initial:
            if _key(pod) in shown:
                yield _line("ADDED", render(pod))
        if initial_end is not None:
            yield initial_events_end(initial_end, version)
    else:
        version = start
    while time.monotonic() < deadline and not _client_gone(exchange.connection):
        try:
            pending = pods.log.events_after(version)
        except Gone as gone:
            expired = ApiError(HTTPStatus.GONE, "Expired", str(gone))
            yield _line("ERROR", expired.status())
            return
        for event in pending:
            version = event.version
            kind = _seen_as(event, match(event.object), shown)
            if kind:
                marked = time.monotonic()
                yield _line(kind, render(event.object))
        if not pending and bookmarks is not None and time.monotonic() - marked >= BOOKMARK_SECONDS:
            marked = time.monotonic()
            yield bookmark(bookmarks, version)
        elif not pending:
            yield b""  # lets the stream see a stopping server
            pods.log.wait_past(version, WATCH_TICK)
            log = pods.log
            if not log.pushed or log.stale or time.monotonic() - looked >= LOOK_AGAIN:
                looked = time.monotonic()
                pods.look()


def _shown_at(events: list[WatchEvent], now: list[dict[str, Any]], match: Match) -> set[PodKey]:
    """The objects a watch selecting ``match`` showed at the version ``events`` follow: an
    object's first event since tells what it was then (ADDED: not there); one without any is
    as it is ``now``."""
    first: dict[PodKey, WatchEvent] = {}
    for event in events:
        first.setdefault(_key(event.object), event)
    shown = {_key(obj) for obj in now if _key(obj) not in first and match(obj)}
    return shown | {
        key for key, event in first.items() if event.previous is not None and match(event.previous)
    }


def _line(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


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


def _client_gone(sock: socket.socket) -> bool:
    """A watch client sends nothing: input (or end of input, or an error) means it went away.
    ``poll``, not ``select``, which cannot watch a descriptor above 1023."""
    with contextlib.suppress(OSError, ValueError):
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
    return True
