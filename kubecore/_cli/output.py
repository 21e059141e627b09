"""What the command shows: the pod table, image pull progress and the live display of ``run``."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO

import attrs

from kubecore._config.base import SourceProblem
from kubecore._contract.bases import PullerWrapper
from kubecore._contract.protocols import Puller
from kubecore._contract.values import PullProgress, RegistryAuth
from kubecore._model.v1 import Pod
from kubecore._status.compute import pod_status_text
from kubecore._util.tables import text_table
from kubecore._util.timefmt import age

logger = logging.getLogger(__name__)

# --- the pod table ------------------------------------------------------------------------


@attrs.frozen
class PodRow:
    namespace: str
    name: str
    ready: str
    status: str
    restarts: int
    age: str


def pod_row(pod: Pod, now: float) -> PodRow:
    statuses = pod.status.container_statuses if pod.status else ()
    ready = sum(1 for cs in statuses if cs.ready)
    restarts = sum(cs.restart_count for cs in statuses)
    return PodRow(
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        ready=f"{ready}/{len(pod.spec.containers)}",
        status=pod_status_text(pod),
        restarts=restarts,
        age=age(pod.status.start_time if pod.status else "", now),
    )


def format_table(pods: Sequence[Pod], now: float) -> str:
    """``NAME READY STATUS RESTARTS AGE`` (plus NAMESPACE when pods span several)."""
    rows = [pod_row(pod, now) for pod in pods]
    rows.sort(key=lambda r: (r.namespace, r.name))
    with_namespace = len({r.namespace for r in rows}) > 1
    header = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    table = [[r.name, r.ready, r.status, str(r.restarts), r.age] for r in rows]
    if with_namespace:
        header.insert(0, "NAMESPACE")
        for row, r in zip(table, rows, strict=True):
            row.insert(0, r.namespace)
    if not rows:
        return "No pods.\n"
    return text_table(header, table)


# --- image pull progress ------------------------------------------------------------------


@attrs.define
class _Pull:
    image: str
    started: float
    layers: dict[str, tuple[int, int]] = attrs.field(factory=dict)
    status: str = "Pulling"


class PullTracker:
    """Collects pull progress from the runtime for the display (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pulls: dict[str, _Pull] = {}
        self.finished: list[tuple[str, str]] = []

    def begin(self, image: str) -> None:
        with self._lock:
            self._pulls[image] = _Pull(image, time.monotonic())

    def progress(self, event: PullProgress) -> None:
        with self._lock:
            pull = self._pulls.setdefault(event.image, _Pull(event.image, time.monotonic()))
            pull.status = event.status or pull.status
            if event.layer and event.total:
                pull.layers[event.layer] = (event.current or 0, event.total)

    def end(self, image: str, outcome: str) -> None:
        with self._lock:
            self._pulls.pop(image, None)
            self.finished.append((image, outcome))

    def active(self) -> list[tuple[str, str, int, int]]:
        """(image, status, bytes done, bytes total) of each pull in progress."""
        with self._lock:
            return [
                (
                    p.image,
                    p.status,
                    sum(c for c, _ in p.layers.values()),
                    sum(t for _, t in p.layers.values()),
                )
                for p in self._pulls.values()
            ]


def progress_bar(done: int, total: int, width: int = 24) -> str:
    if total <= 0:
        return "[" + "?" * width + "]"
    filled = min(width, int(width * done / total))
    return "[" + "#" * filled + "-" * (width - filled) + f"] {100 * done // total:3d}%"


class TrackingPuller(PullerWrapper):
    """A ``Puller`` that also reports each pull's progress to a ``PullTracker``."""

    def __init__(self, inner: Puller, tracker: PullTracker) -> None:
        super().__init__(inner)
        self._tracker = tracker

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        def report(event: PullProgress) -> None:
            self._tracker.progress(event)
            if progress is not None:
                progress(event)

        self._tracker.begin(image)
        try:
            image_id = self.inner.pull(image, auth, report)
        except BaseException as error:
            self._tracker.end(image, f"failed: {error}")
            raise
        self._tracker.end(image, "pulled")
        return image_id


# --- run ----------------------------------------------------------------------------------


class _TableLog(logging.Handler):
    """Keeps the newest log lines for the live table (a tty cannot show both streams)."""

    def __init__(self, size: int = 8) -> None:
        super().__init__()
        self.lines: list[str] = []
        self._size = size

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record).splitlines()[0]
        except Exception:
            return
        self.lines = [*self.lines, line][-self._size :]


CLEAR_SCREEN = "\x1b[H\x1b[2J"


class Display:
    """The live pod table on a terminal; one log line per change otherwise."""

    def __init__(
        self,
        out: IO[str],
        live: bool,
        header: str,
        tracker: PullTracker,
        *,
        clear_on_close: bool = False,
    ) -> None:
        self._out = out
        self._live = live
        self._clear_on_close = clear_on_close
        self._header = header
        self._tracker = tracker
        self._last_rows: dict[tuple[str, str], tuple[str, str, int]] = {}
        self._reported_pulls = 0
        self.log_handler = _TableLog() if live else None

    def refresh(self, pods: Sequence[Pod], now: float, problems: Sequence[SourceProblem]) -> None:
        if self._live:
            self._draw(pods, now, problems)
        else:
            self._log_changes(pods, now)

    def close(self) -> None:
        """Done: with ``clear_on_close``, clear the screen for what is printed next, keeping the
        log lines the live table held."""
        if not (self._live and self._clear_on_close):
            return
        self._out.write(CLEAR_SCREEN)
        if self.log_handler is not None:
            self._out.writelines(line + "\n" for line in self.log_handler.lines)
        self._out.flush()

    def _draw(self, pods: Sequence[Pod], now: float, problems: Sequence[SourceProblem]) -> None:
        parts = [CLEAR_SCREEN, self._header, "\n\n", format_table(pods, now)]
        pulls = self._tracker.active()
        if pulls:
            parts.append("\n")
            for image, status, done, total in pulls:
                size = f" {done / 1e6:.1f}/{total / 1e6:.1f} MB" if total else ""
                parts.append(f"pulling {image} {progress_bar(done, total)}{size} {status}\n")
        if problems:
            parts.append("\n")
            parts.extend(line + "\n" for p in problems for line in p.lines())
        if self.log_handler is not None and self.log_handler.lines:
            parts.append("\n")
            parts.extend(line + "\n" for line in self.log_handler.lines)
        self._out.write("".join(parts))
        self._out.flush()

    def _log_changes(self, pods: Sequence[Pod], now: float) -> None:
        finished = self._tracker.finished[self._reported_pulls :]
        self._reported_pulls += len(finished)
        for image, outcome in finished:
            logger.info("image %s: %s", image, outcome)
        current: dict[tuple[str, str], tuple[str, str, int]] = {}
        for pod in pods:
            row = pod_row(pod, now)
            key = (row.namespace, row.name)
            current[key] = (row.ready, row.status, row.restarts)
            if self._last_rows.get(key) != current[key]:
                logger.info(
                    "pod %s/%s: %s %s restarts=%d",
                    row.namespace,
                    row.name,
                    row.ready,
                    row.status,
                    row.restarts,
                )
        for gone in self._last_rows.keys() - current.keys():
            logger.info("pod %s/%s: removed", *gone)
        self._last_rows = current
