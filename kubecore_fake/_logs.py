"""Container logs of the in-memory runtime: tail, ``since``, timestamps, and ``follow``, which
blocks (in real time, on the runtime's condition) for new lines while the container runs."""

from __future__ import annotations

from collections.abc import Iterator

from kubecore.runtime import RuntimeState, epoch_nanos, format_timestamp
from kubecore_fake._engine import Engine
from kubecore_fake._records import ContainerRecord


def read_logs(
    engine: Engine,
    container_id: str,
    *,
    tail: int | None,
    follow: bool,
    since: float | None,
    timestamps: bool,
) -> Iterator[bytes]:
    """The container's log as it stands (raising at once for a missing container), then, with
    ``follow``, what it prints until it stops."""
    with engine.lock:
        rec = engine.get_container(container_id)
        lines = list(rec.logs)
    return _follow(engine, rec, lines, tail, follow, since, timestamps)


def _follow(
    engine: Engine,
    rec: ContainerRecord,
    lines: list[tuple[float, str]],
    tail: int | None,
    follow: bool,
    since: float | None,
    timestamps: bool,
) -> Iterator[bytes]:
    seen = len(lines)
    selected = [entry for entry in lines if since is None or entry[0] >= since]
    if tail is not None:
        selected = selected[-tail:] if tail > 0 else []
    for entry in selected:
        yield _log_line(entry, timestamps)
    while follow:
        with engine.cond:
            while (
                len(rec.logs) <= seen
                and rec.state is RuntimeState.RUNNING
                and not engine.closed
                and engine.containers.get(rec.id) is rec
            ):
                engine.cond.wait(0.5)
            new = rec.logs[seen:]
            seen = len(rec.logs)
            follow = (
                rec.state is RuntimeState.RUNNING
                and not engine.closed
                and engine.containers.get(rec.id) is rec
            )
        for entry in new:
            if since is None or entry[0] >= since:
                yield _log_line(entry, timestamps)


def _log_line(entry: tuple[float, str], timestamps: bool) -> bytes:
    timestamp, line = entry
    text = f"{format_timestamp(epoch_nanos(timestamp))} {line}\n" if timestamps else f"{line}\n"
    return text.encode()
