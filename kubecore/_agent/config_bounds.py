"""What a ``KubeletConfig`` may hold: one table of ranges and rules, read by ``KubeletConfig``
itself (an embedder's typo is refused where it is made) and by the command's flags (the same
ranges in ``--help`` and in their error messages)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs


@attrs.frozen
class Bounds:
    """The range a numeric setting must lie in; ``open_low``: the low end itself is excluded."""

    low: float
    high: float
    open_low: bool = False

    def contains(self, value: float) -> bool:
        above = value > self.low if self.open_low else value >= self.low
        return above and value <= self.high

    def describe(self) -> str:
        if self.open_low:
            return f"greater than {self.low:g} and at most {self.high:g}"
        return f"from {self.low:g} to {self.high:g}"


SECONDS = Bounds(0, 7 * 86400, open_low=True)
"""Any interval or deadline: positive, at most a week."""
AGE = Bounds(0, 365 * 86400)
PERCENT = Bounds(0, 100)

FIELD_BOUNDS: Mapping[str, Bounds] = {
    "resync_interval": SECONDS,
    "relist_interval": SECONDS,
    "housekeeping_interval": SECONDS,
    "pull_qps": Bounds(0, 10_000),
    "pull_burst": Bounds(1, 10_000),
    "max_pods": Bounds(1, 1_000_000),
    "workers": Bounds(1, 1024),
    "container_gc_interval": SECONDS,
    "gc_max_dead_per_container": Bounds(0, 1_000_000),
    "gc_min_age": AGE,
    "image_gc_interval": SECONDS,
    "image_gc_high": PERCENT,
    "image_gc_low": PERCENT,
    "image_min_age": AGE,
    "max_events": Bounds(1, 10_000_000),
    "backoff_initial": SECONDS,
    "backoff_max": SECONDS,
    "container_log_max_files": Bounds(2, 1000),
}
"""The range of each numeric ``KubeletConfig`` field."""

ORDERED_FIELDS: tuple[tuple[str, str], ...] = (
    ("image_gc_low", "image_gc_high"),
    ("backoff_initial", "backoff_max"),
)
"""(low, high): the first must not be above the second."""


def shown(value: object) -> str:
    """A value as an error message quotes it: short."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def number_problem(value: object, integer: bool, bounds: Bounds | None) -> str | None:
    """Why ``value`` cannot be a number of this kind within ``bounds`` (None: it can)."""
    kind = "an integer" if integer else "a number"
    accepted = int if integer else int | float
    if isinstance(value, bool) or not isinstance(value, accepted):
        return f"must be {kind}, got {shown(value)}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {shown(value)}"
    if bounds is not None and not bounds.contains(value):
        return f"must be {kind} {bounds.describe()}, got {shown(value)}"
    return None


def config_problems(fields: tuple[attrs.Attribute[Any], ...], values: Any) -> list[str]:
    """Every problem of a config's values, each as ``field: why``, in field order."""
    problems: list[str] = []
    for field in fields:
        value = getattr(values, field.name)
        problem = _field_problem(field, value)
        if problem is not None:
            problems.append(f"{field.name}: {problem}")
    if isinstance(getattr(values, "node_name", None), str):
        problem = node_name_problem(values.node_name)
        if problem is not None:
            problems.append(f"node_name: {problem}")
    if isinstance(getattr(values, "node_labels", None), tuple):
        from kubecore._agent.admission.node_fit import parse_node_labels

        try:
            parse_node_labels(values.node_labels)
        except ValueError as error:
            problems.append(f"node_labels: {error}")
    eviction_hard = getattr(values, "eviction_hard", None)
    if isinstance(eviction_hard, tuple) and all(isinstance(e, str) for e in eviction_hard):
        from kubecore._housekeeping.eviction import eviction_thresholds

        try:
            eviction_thresholds(eviction_hard)
        except ValueError as error:
            problems.append(f"eviction_hard: {error}")
    if hasattr(values, "pod_security"):
        from kubecore._agent.admission.pod_security import policy_problems

        problems += policy_problems(
            values.pod_security, values.allowed_host_paths, values.allowed_host_ports
        )
    max_size = getattr(values, "container_log_max_size", None)
    if isinstance(max_size, str):
        problem = log_size_problem(max_size)
        if problem is not None:
            problems.append(f"container_log_max_size: {problem}")
    if not problems:
        for low, high in ORDERED_FIELDS:
            if getattr(values, low) > getattr(values, high):
                problems.append(f"{low}: must not be above {high}")
    return problems


def _field_problem(field: attrs.Attribute[Any], value: object) -> str | None:
    kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
    if kind in ("int", "float"):
        return number_problem(value, kind == "int", FIELD_BOUNDS.get(field.name))
    if kind == "bool":
        return None if isinstance(value, bool) else f"must be true or false, got {shown(value)}"
    if kind == "str":
        return None if isinstance(value, str) else f"must be a string, got {shown(value)}"
    if kind == "tuple[str, ...]":
        if isinstance(value, tuple) and all(isinstance(item, str) for item in value):
            return None
        return f"must be a tuple of strings, got {shown(value)}"
    return None


MAX_LOG_SIZE = 2**40


def log_size_problem(text: str) -> str | None:
    """Why ``text`` cannot be a container log's rotation size: a quantity of bytes, positive,
    at most 1Ti (None: it can)."""
    from kubecore._model.quantity import memory_bytes

    try:
        size = memory_bytes(text)
    except ValueError:
        return f"must be a quantity of bytes (10Mi), got {shown(text)}"
    if not 0 < size <= MAX_LOG_SIZE:
        return f"must be greater than 0 and at most 1Ti, got {shown(text)}"
    return None


def node_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a node: it must be a DNS-1123 subdomain, as the API server
    requires of a Node's name ("" is an agent that labels no node)."""
    if name == "":
        return None
    from kubecore._manifest.validation import dns_subdomain_problem

    return dns_subdomain_problem(name)
