"""The pod source contract and what every source shares.

A source turns some outside state (a manifest directory, a URL, calls from an embedding program)
into ``PodUpdate`` values for the agent. Every source has a ``name`` (stamped on each of its pods
under ``SOURCE_ANNOTATION``) and a ``poll(now)`` method that returns the next pending update, or
None when nothing changed. ``SourcePoller`` calls ``poll`` on a clock and hands every update to a
sink (normally ``Kubelet.update``).

Sources own their timing: ``poll`` may be called as often as the caller likes and a source that is
not due (its interval has not passed, or it is backing off after an error) returns None at once.
Calling ``poll`` again right after it returned an update gives the next pending update, if any.

Adding a networked store (an etcd or API-server watch) later: write a class with a ``name`` and a
``poll(now)`` that never blocks. Its watch runs in its own thread (started by ``start()``, ended by
``close()``, which ``SourcePoller`` calls when present); the thread turns watch events into
``PodUpdate(ADD / UPDATE / REMOVE)`` values on a queue, and after a (re)list it queues one
``PodUpdate(SET)`` with the whole list so a missed event cannot leave a stale pod. ``poll`` pops
the queue. Nothing else in the agent needs to change: the merge of sources, the per-source state
and the "every source has reported" gate already work from those updates.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs

from kubecore._config.updates import Operation, PodUpdate, SourceName
from kubecore._contract.errors import FieldError, ValidationError
from kubecore._manifest import load_manifest_lenient, stamp_source
from kubecore._model.v1 import KubeObject, Pod

logger = logging.getLogger(__name__)

FILE_SOURCE: str = SourceName.FILE.value
HTTP_SOURCE: str = SourceName.HTTP.value
API_SOURCE: str = SourceName.API.value

PodKey = tuple[str, str]
"""(namespace, name): a pod's identity inside one source."""


@runtime_checkable
class PodSource(Protocol):
    """Something that produces desired pods. See the module docstring for the contract."""

    @property
    def name(self) -> str:
        """The source's name, unique among the sources of one agent: each of its pods carries it
        in its source annotation (``kubecore.runtime.SOURCE_ANNOTATION``)."""
        ...

    def poll(self, now: float) -> PodUpdate | None:
        """Return the next pending update, or None. Must not raise; should not block for long
        (an HTTP fetch with a timeout is fine). ``now`` is the clock's monotonic time."""
        ...


@attrs.frozen
class SourceProblem:
    """Something a source could not use: a bad file, a failed fetch, a duplicate pod."""

    where: str
    """A file path or a URL."""
    errors: tuple[FieldError, ...]

    def lines(self) -> list[str]:
        """One ``where: field: message`` line per error, as ``kubecore validate`` prints them."""
        return [f"{self.where}: {error}" for error in self.errors]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def pod_key(pod: Pod) -> PodKey:
    return (pod.metadata.namespace, pod.metadata.name)


def prepare_pods(pods: Iterable[Pod], source: str) -> tuple[Pod, ...]:
    """Stamp the source name on each pod. A pod given no uid gets the node's deterministic one
    when ``PodConfig`` takes it in (only the agent knows the node name)."""
    return tuple(stamp_source(pod, source) for pod in pods)


def problem_from_exception(where: str, error: Exception) -> SourceProblem:
    if isinstance(error, ValidationError):
        return SourceProblem(where, error.problems)
    return SourceProblem(where, (FieldError("", str(error) or type(error).__name__),))


def parse_manifest(text: str, where: str) -> tuple[tuple[Pod, ...], tuple[FieldError, ...]]:
    """Every valid pod of a manifest text and every problem in it (never raises)."""
    pods, _objects, problems = parse_documents(text, where)
    return pods, problems


def parse_documents(
    text: str, where: str
) -> tuple[tuple[Pod, ...], tuple[KubeObject, ...], tuple[FieldError, ...]]:
    """Every valid pod, ConfigMap and Secret of a manifest text and every problem in it (never
    raises)."""
    try:
        pods, objects, errors = load_manifest_lenient(text, source_name=where)
    except Exception as error:  # a YAML syntax error, or anything the loader did not expect
        return (), (), problem_from_exception(where, error).errors
    problems = tuple(problem for error in errors for problem in error.problems)
    return tuple(pods), tuple(objects), problems


def last_known_state(
    source: str, pods: tuple[Pod, ...], objects: tuple[KubeObject, ...], reason: str
) -> PodUpdate:
    """A source that cannot be read at start offers what it remembers: run and kept, but not a
    report (``reason`` keeps the source not ready, so nothing else is deleted)."""
    logger.warning(
        "source %s: %d remembered pod(s) are kept as its last known state", source, len(pods)
    )
    return PodUpdate(Operation.SET, pods, source, objects, reason=reason)


def path_problem(path: Path, message: str) -> SourceProblem:
    return SourceProblem(str(path), (FieldError("", message),))


def sha256_hex(data: bytes) -> str:
    import hashlib  # imported on first use: loading OpenSSL slows ``kubecore validate``

    return hashlib.sha256(data).hexdigest()
