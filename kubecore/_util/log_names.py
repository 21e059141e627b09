"""The names log lines carry: the room a user knows (``kubecore.agent``, ``kubecore.api``,
``kubecore.cli``), not the private module that logged (``kubecore._agent.pod_workers``).

Loggers keep their module names (``logging.getLogger(__name__)``), so that a host can still tune
one module; only what the command prints is the room's name, through ``RoomFormatter``."""

from __future__ import annotations

import logging

ROOMS = {
    "_agent": "agent",
    "_api": "api",
    "_apimachinery": "api",
    "_cli": "cli",
    "_config": "sources",
    "_contract": "runtime",
    "_housekeeping": "housekeeping",
    "_http": "server",
    "_kuberuntime": "runtime",
    "_manifest": "manifest",
    "_model": "v1",
    "_observability": "observability",
    "_observability.events": "events",
    "_observability.event_log": "events",
    "_planner": "agent",
    "_plugins": "plugins",
    "_prober": "prober",
    "_status": "status",
    "_streaming": "streaming",
    "_util": "util",
    "_volumes": "volumes",
}
"""Each private folder of ``kubecore`` (or one module of it) and the room its log lines are named
after: the longest key that the module is in wins; a folder not listed is named after itself,
without its underscore."""


def room_of(logger_name: str) -> str:
    """``kubecore.agent`` for ``kubecore._agent.pod_workers``; ``kubecore_docker`` for
    ``kubecore_docker._runtime``; a public module's or another library's name unchanged."""
    package, _, rest = logger_name.partition(".")
    if not package.startswith("kubecore") or not rest:
        return logger_name
    parts = rest.split(".")
    if not parts[0].startswith("_"):
        return logger_name
    if package != "kubecore":  # a plugin package: its own name is what its user knows
        return package
    for length in range(len(parts), 0, -1):
        room = ROOMS.get(".".join(parts[:length]))
        if room is not None:
            return f"kubecore.{room}"
    return f"kubecore.{parts[0].lstrip('_')}"


class RoomFormatter(logging.Formatter):
    """A formatter whose ``%(name)s`` is the room (``room_of``) of the logger."""

    def format(self, record: logging.LogRecord) -> str:
        logger_name = record.name
        record.name = room_of(logger_name)
        try:
            return super().format(record)
        finally:
            record.name = logger_name
