"""How kubecore writes and reads times: RFC 3339 as the v1 API writes it, and durations as
kubectl prints them. One formatter and one parser for every document and table (the node's API,
etcd, the CLI, pod status, log queries), so the same time reads the same everywhere."""

from __future__ import annotations

import calendar
import datetime
import functools
import math
import re
import time


def rfc3339(ts: float) -> str:
    """Seconds since the epoch as the v1 API writes times: ``2024-05-01T12:00:00Z`` (UTC,
    whole seconds)."""
    return _rfc3339_seconds(math.floor(ts))


@functools.lru_cache(maxsize=8192)  # the same start/finish times come back on every sync
def _rfc3339_seconds(seconds: int) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(ts: float) -> str:
    """Seconds since the epoch as the v1 API writes a ``MicroTime``:
    ``2024-05-01T12:00:00.250000Z``."""
    moment = datetime.datetime.fromtimestamp(ts, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def format_timestamp(nanos: int) -> str:
    """Nanoseconds since the epoch as Go's ``time.RFC3339Nano`` writes them in UTC (trailing
    zeros of the fraction dropped): ``2026-12-01T15:04:05.12Z``. The format of a log line's
    time (CRI log files, ``timestamps=True``)."""
    seconds, fraction = divmod(nanos, 1_000_000_000)
    moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    digits = f"{fraction:09d}".rstrip("0")
    return f"{moment}.{digits}Z" if digits else f"{moment}Z"


def epoch_nanos(ts: float) -> int:
    """Seconds since the epoch as whole nanoseconds (for ``format_timestamp``)."""
    seconds = math.floor(ts)
    return seconds * 1_000_000_000 + round((ts - seconds) * 1e9)


_RFC3339 = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?([Zz]|[+-]\d\d:\d\d)?\Z",
    re.ASCII,
)


def parse_rfc3339(text: str | bytes) -> float:
    """An RFC 3339 time in seconds since the epoch, to the nanosecond (one to nine fraction
    digits, as Go's ``time.RFC3339Nano``); a time without a zone is UTC. Raises
    ``ValueError`` saying the text is not one. The one reader of times for every document,
    log line and engine answer."""
    raw = text.decode("ascii", "replace") if isinstance(text, bytes) else text
    match = _RFC3339.match(raw) if isinstance(raw, str) else None
    if match is None:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7), match.group(8)
    offset = 0
    if zone and zone not in "Zz":
        zone_hours, zone_minutes = int(zone[1:3]), int(zone[4:6])
        if zone_hours > 23 or zone_minutes > 59:
            raise ValueError(f"not an RFC 3339 time: {text!r}")
        offset = (zone_hours * 60 + zone_minutes) * 60 * (1 if zone[0] == "+" else -1)
    try:
        datetime.datetime(year, month, day, hour, minute, min(second, 59))
    except ValueError:
        raise ValueError(f"not an RFC 3339 time: {text!r}") from None
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    return seconds - offset + nanos / 1e9


def parse_time(value: str | bytes | None) -> float | None:
    """``parse_rfc3339``, or None for an empty or unreadable value (a time a document may
    lack)."""
    if not value:
        return None
    try:
        return parse_rfc3339(value)
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """An age as kubectl prints it (apimachinery's ``HumanDuration``): ``45s``, ``3m20s``,
    ``12m``, ``5h10m``, ``20h``, ``3d4h``, ``12d``, ``2y70d``, ``9y``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    s = max(0, s)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{days // 365}y"


def age(since: str, now: float) -> str:
    """How long ago the RFC 3339 time ``since`` was, as kubectl prints an age (``<unknown>`` for
    an empty or unreadable time)."""
    moment = parse_time(since)
    return "<unknown>" if moment is None else human_duration(now - moment)
