"""The manifest URL source: pods from a URL, polled, kept through outages and bad bodies."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from kubecore._config.base import (
    HTTP_SOURCE,
    SourceProblem,
    last_known_state,
    parse_documents,
    prepare_pods,
    problem_from_exception,
    sha256_hex,
)
from kubecore._config.last_good import (
    DEFAULT_SETTLE,
    IN_PLACE_SETTLE_FACTOR,
    cut_mid_line,
    in_place_change,
)
from kubecore._config.memory import SourceMemory
from kubecore._config.updates import Operation, PodUpdate
from kubecore._contract.errors import FieldError
from kubecore._manifest import MAX_MANIFEST_BYTES
from kubecore._model.v1 import KubeObject, Pod
from kubecore._planner.backoff import backoff_delay

logger = logging.getLogger(__name__)


Fetcher = Callable[[str, dict[str, str], float], "FetchResult"]


@attrs.frozen
class FetchResult:
    status: int
    body: bytes = b""
    etag: str = ""
    last_modified: str = ""


def urllib_fetch(url: str, headers: dict[str, str], timeout: float) -> FetchResult:
    """GET ``url`` with urllib; a 304 is a result, any other non-2xx status raises. ``timeout``
    bounds the whole fetch, not each read: a server that trickles its body (a byte a second)
    raises ``TimeoutError`` once it has passed, as one that does not answer does."""
    import urllib.error  # imported here: ``kubecore validate`` needs no HTTP client
    import urllib.request

    deadline = time.monotonic() + timeout
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = _read_body(response, deadline, timeout)
            return FetchResult(
                response.status,
                body,
                response.headers.get("ETag", ""),
                response.headers.get("Last-Modified", ""),
            )
    except urllib.error.HTTPError as error:
        if error.code == 304:
            return FetchResult(304)
        raise


def _read_body(response: Any, deadline: float, timeout: float) -> bytes:
    """The body of ``response``, read in the chunks that arrive, until ``deadline``."""
    chunks: list[bytes] = []
    size = 0
    late = f"the manifest took longer than {timeout:g}s to arrive (a blink: its pods are kept)"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(late)
        _wait_at_most(response, left)
        try:
            chunk = response.read1(MAX_MANIFEST_BYTES + 1 - size)
        except TimeoutError:  # the socket waits only what is left: the deadline has passed
            raise TimeoutError(late) from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_MANIFEST_BYTES:
            raise ValueError(f"manifest is larger than {MAX_MANIFEST_BYTES} bytes")


def _wait_at_most(response: Any, seconds: float) -> None:
    """The next read of ``response`` waits at most ``seconds`` (its socket's timeout)."""
    sock = getattr(getattr(getattr(response, "fp", None), "raw", None), "_sock", None)
    if sock is not None:
        sock.settimeout(seconds)


class HTTPSource:
    """Pods from a manifest URL (YAML or JSON, one or several documents), polled.

    Every ``interval`` seconds the URL is fetched (with ``If-None-Match`` / ``If-Modified-Since``
    when the server gave an ETag / Last-Modified); a 304 or a body with the same hash as the last
    one is skipped. A failed fetch (refused, timed out, a non-2xx status) or a body with problems
    is reported (logged and in ``problems``) and retried after a backoff (``backoff`` seconds
    doubling up to ``max_backoff``); the last good pods are kept meanwhile and the source says
    ``NOT_READY``, so the agent deletes nothing until the URL answers well again.

    As for files (``FileSource``), an unknown state is never read as "these pods are gone": a body
    with no pod and no object is refused (an outage) unless ``allow_empty``, or the last good
    body was empty too, or none is known and ``new_node`` says nothing ran before; a body that
    takes pods or objects away, is cut short (a strict prefix of the last good body) or changes a
    pod it had (the file behind the URL may be being written in place) is applied only once the
    URL has served it unchanged for ``loss_settle`` seconds (30 s by default; it is fetched again
    then). A fetch is bounded by ``timeout`` as a whole (a server trickling its body fails).
    With ``state_dir`` the last good body is remembered there (``SourceMemory``): a
    URL that is down or bad when the agent starts offers the remembered pods as the source's last
    known state (a ``SET`` with a reason: still not ready), and the rules above compare with it.

    Emits ``SET`` for source ``name`` (default ``"http"``) after the first good fetch and whenever
    the pods change.
    """

    def __init__(
        self,
        url: str,
        *,
        interval: float = 20.0,
        timeout: float = 10.0,
        backoff: float = 1.0,
        max_backoff: float = 300.0,
        name: str = HTTP_SOURCE,
        fetch: Fetcher = urllib_fetch,
        allow_empty: bool = False,
        loss_settle: float = DEFAULT_SETTLE * IN_PLACE_SETTLE_FACTOR,
        state_dir: str | os.PathLike[str] | None = None,
        new_node: bool = False,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"manifest URL must be http:// or https://, got {url!r}")
        self._url = url
        self._interval = interval
        self._timeout = timeout
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._name = name
        self._fetch = fetch
        self._allow_empty = allow_empty
        self._new_node = new_node
        self._loss_settle = loss_settle
        self._memory = SourceMemory(state_dir, name) if state_dir is not None else None
        self._loaded = False
        self._etag = ""
        self._last_modified = ""
        self._body_hash = ""
        self._text: str | None = None
        """The last good body (None: none known, not even from memory)."""
        self._known: tuple[tuple[Pod, ...], tuple[KubeObject, ...]] | None = None
        """The last good body's pods and objects."""
        self._losing: tuple[str, float] | None = None
        """A body that takes pods away: its hash and when it was first served."""
        self._sent: tuple[Pod, ...] | None = None
        self._sent_objects: tuple[KubeObject, ...] = ()
        self._reported = False
        """A good body has been sent (a ``SET`` without a reason)."""
        self._problem: SourceProblem | None = None
        self._failures = 0
        self._not_ready = False
        self._next_due: float | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The source's name (``http`` unless given): what its pods' source annotation says."""
        return self._name

    @property
    def url(self) -> str:
        """The manifest URL it fetches."""
        return self._url

    @property
    def problems(self) -> tuple[SourceProblem, ...]:
        """What was wrong with the last fetch (unreachable, an error status, a manifest that does
        not validate); empty when it read."""
        with self._lock:
            return () if self._problem is None else (self._problem,)

    @property
    def pods(self) -> tuple[Pod, ...]:
        """The pods of the last good fetch (empty before the first)."""
        with self._lock:
            return self._sent or ()

    @property
    def failures(self) -> int:
        """Consecutive failed polls (0 after a good one)."""
        with self._lock:
            return self._failures

    def poll(self, now: float) -> PodUpdate | None:
        with self._lock:
            if self._next_due is not None and now < self._next_due:
                return None
            self._load_memory()
            try:
                update = self._fetch_and_parse(now)
            except Exception as error:
                update = problem_from_exception(self._url, error)
            if isinstance(update, SourceProblem):
                self._fail(now, update)
                return self._not_ready_update(update)
            if self._failures:
                logger.info("manifest URL %s is good again", self._url)
            self._failures = 0
            self._problem = None
            if self._losing is None:
                self._next_due = now + self._interval
            if update is None and not self._reported and self._losing is not None:
                waiting = FieldError(
                    "", "it serves less than its remembered state: waiting for it to stay so"
                )
                return self._not_ready_update(SourceProblem(self._url, (waiting,)))
            if update is None and self._not_ready and self._sent is not None and self._reported:
                update = PodUpdate(Operation.SET, self._sent, self._name, self._sent_objects)
            if update is not None:
                self._not_ready = False
                self._reported = True
            return update

    def _load_memory(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        record = self._memory.get("url", self._url) if self._memory is not None else None
        text = record.get("body") if record is not None else None
        if isinstance(text, str):
            pods, objects, _errors = parse_documents(text, self._url)
            self._text = text
            self._known = (prepare_pods(pods, self._name), objects)

    def _not_ready_update(self, problem: SourceProblem) -> PodUpdate | None:
        if self._not_ready:
            return None
        self._not_ready = True
        reason = "; ".join(problem.lines())
        if self._sent is None and self._known is not None:
            # The URL is down or bad at start: its remembered pods are its last known state.
            self._sent, self._sent_objects = self._known
            return last_known_state(self._name, self._sent, self._sent_objects, reason)
        # Its pods stay; the agent deletes nothing until the URL answers again.
        return PodUpdate(Operation.NOT_READY, (), self._name, reason=reason)

    def _fail(self, now: float, problem: SourceProblem) -> None:
        self._failures += 1
        self._problem = problem
        self._losing = None
        delay = backoff_delay(self._failures, self._backoff, self._max_backoff)
        self._next_due = now + delay
        # A bad body must be parsed again after the backoff so the problem stays visible.
        self._body_hash = ""
        self._etag = self._last_modified = ""
        logger.warning(
            "manifest URL %s failed (%d in a row), retrying in %.0fs: %s",
            self._url,
            self._failures,
            delay,
            "; ".join(str(e) for e in problem.errors),
            extra={"url": self._url, "failures": self._failures},
        )

    def _fetch_and_parse(self, now: float) -> PodUpdate | SourceProblem | None:
        headers = {"Accept": "application/yaml, application/json;q=0.9, */*;q=0.5"}
        if self._etag:
            headers["If-None-Match"] = self._etag
        if self._last_modified:
            headers["If-Modified-Since"] = self._last_modified
        result = self._fetch(self._url, headers, self._timeout)
        if result.status == 304:
            return None
        if not 200 <= result.status < 300:
            return SourceProblem(self._url, (FieldError("", f"HTTP status {result.status}"),))
        digest = sha256_hex(result.body)
        if digest == self._body_hash:
            return None
        try:
            text = result.body.decode("utf-8")
        except UnicodeDecodeError as error:
            return SourceProblem(self._url, (FieldError("", f"not UTF-8 text: {error}"),))
        pods, objects, errors = parse_documents(text, self._url)
        if errors:
            return SourceProblem(self._url, errors)
        prepared = prepare_pods(pods, self._name)
        if not prepared and not objects and not self._empty_allowed():
            return SourceProblem(
                self._url,
                (
                    FieldError(
                        "",
                        "the URL serves no pods; its pods are kept (pass --manifest-allow-empty"
                        " if no pods is meant)",
                    ),
                ),
            )
        if self._text is not None and (cut := cut_mid_line(self._text, text)):
            return SourceProblem(self._url, cut)
        if self._known is not None and self._text is not None:
            before = (*self._known, self._text)
            change = in_place_change(before, prepared, objects, text)
            if change and self._confirming(digest, change, now):
                return None
        self._losing = None
        self._body_hash = digest
        self._etag = result.etag
        self._last_modified = result.last_modified
        if text != self._text and self._memory is not None:
            self._memory.put("url", self._url, body=text)
        self._text = text
        self._known = (prepared, objects)
        if prepared == self._sent and objects == self._sent_objects and self._reported:
            return None
        self._sent = prepared
        self._sent_objects = objects
        return PodUpdate(Operation.SET, prepared, self._name, objects)

    def _empty_allowed(self) -> bool:
        known = self._known
        if known is None:
            return self._allow_empty or self._new_node
        return self._allow_empty or (not known[0] and not known[1])

    def _confirming(self, digest: str, change: str, now: float) -> bool:
        """True while a body that takes pods away or changes a pod (a file behind the URL
        maybe written in place, not whole yet) has not been served for ``loss_settle``."""
        if self._losing is None or self._losing[0] != digest:
            self._losing = (digest, now)
            logger.info(
                "manifest URL %s now %s: acted on once it has served it for %gs",
                self._url,
                change.replace("holds", "serves"),
                self._loss_settle,
            )
        since = self._losing[1]
        if now - since >= self._loss_settle:
            return False
        self._next_due = min(since + self._loss_settle, now + self._interval)
        return True
