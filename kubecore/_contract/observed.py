"""What the runtime shows of a pod, read one way everywhere (planner, status, executor, GC, agent).

An observed object is read through its labels and annotations only, so an agent restart adopts it:

* a container's name is its ``CONTAINER_NAME_LABEL`` (an empty label counts as absent), else
  ``RuntimeContainer.name``;
* its restart count is ``RESTART_COUNT_ANNOTATION`` (else the label of that name, else
  ``attempt``);
* "newest" orders containers by (created_at, restart count, id) and sandboxes by
  (created_at, attempt, id): the id breaks ties, so every reader picks the same instance.

``ObservedPod`` is one pod's part of a runtime snapshot, ``PodEntry`` the agent's pass's entry for
it (with a cheap key that changes when anything that matters does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

import attrs

from kubecore._contract.labels import container_name as container_name
from kubecore._contract.labels import init_flag, is_ephemeral, recorded_hash
from kubecore._contract.labels import restart_count as restart_count
from kubecore._contract.values import RuntimeContainer, RuntimeSandbox, RuntimeState, SandboxState

_RUNNING = RuntimeState.RUNNING
_UNKNOWN = RuntimeState.UNKNOWN
_CREATED = RuntimeState.CREATED
_READY = SandboxState.READY

_S = TypeVar("_S", bound=RuntimeSandbox)


def container_age(c: RuntimeContainer) -> tuple[float, int, str]:
    """Sort key: a larger key is a newer instance."""
    return (c.created_at, restart_count(c), c.id)


def never_started(c: RuntimeContainer) -> bool:
    """Created but never ran, with no error: an interrupted start (an agent or engine stopped
    between the create and the start), which has no run, logs or exit status of its own."""
    return c.state is _CREATED and not c.exit_code and not c.reason


def sandbox_age(s: RuntimeSandbox) -> tuple[float, int, str]:
    """Sort key: a larger key is a newer sandbox."""
    return (s.created_at, s.attempt, s.id)


def newest_sandbox(sandboxes: Iterable[_S]) -> _S | None:
    return max(sandboxes, key=sandbox_age, default=None)


def newest_ready_sandbox(sandboxes: Iterable[RuntimeSandbox]) -> RuntimeSandbox | None:
    """The pod's sandbox: the newest one that is ready."""
    best: RuntimeSandbox | None = None
    for s in sandboxes:  # a loop, not max(): this runs on every sync of every pod
        if s.state is _READY and (best is None or sandbox_age(s) > sandbox_age(best)):
            best = s
    return best


class Record:
    """One observed container, read through its labels and annotations."""

    __slots__ = ("c", "is_init", "key", "name", "restart_count")

    def __init__(self, c: RuntimeContainer, name: str, is_init: bool) -> None:
        self.c = c
        self.name = name
        self.is_init = is_init
        self.restart_count = restart_count(c)
        self.key = (c.created_at, self.restart_count, c.id)

    @property
    def hash(self) -> str:
        """The spec hash it was created with ('': none recorded)."""
        return recorded_hash(self.c)

    @property
    def live(self) -> bool:
        """Running, or unknown (which may be running)."""
        state = self.c.state
        return state is _RUNNING or state is _UNKNOWN

    @property
    def never_started(self) -> bool:
        """Created but never ran, with no error (an interrupted start): start it again."""
        return never_started(self.c)

    @property
    def failed(self) -> bool:
        """A dead container that did not exit 0 (an unknown exit code is a failure)."""
        return self.c.exit_code != 0


class SpecIndex:
    """What ``View`` needs of the pod spec: container names by kind, and the containers that
    run once and can never be started again (app or init, not sidecars: the pod's policy or
    their own is Never, with no rule that restarts them)."""

    __slots__ = ("app_index", "ephemeral_index", "init_index", "run_once")

    def __init__(
        self,
        app_index: Mapping[str, int],
        init_index: Mapping[str, int],
        run_once: frozenset[str],
        ephemeral_index: Mapping[str, int] | None = None,
    ) -> None:
        self.app_index = app_index
        self.init_index = init_index
        self.run_once = run_once
        self.ephemeral_index: Mapping[str, int] = ephemeral_index or {}


def _set_aside_unstarted(records: list[Record], stray: list[Record]) -> None:
    """A container that cannot restart is never started again once it has run: a newer instance
    that was created but never started (an interrupted start) does not count, and the container
    is judged by the run it had."""
    while (
        len(records) > 1
        and records[0].never_started
        and any(not r.never_started and not r.live for r in records[1:])
    ):
        stray.append(records.pop(0))


def _newest_first(records: list[Record]) -> None:
    if len(records) > 1:
        records.sort(key=lambda r: r.key, reverse=True)


class View:
    """One pod's observed state, grouped by container name (newest first). An ephemeral
    container (its annotation, else a name only the spec's ephemeral containers have) is in
    ``ephemeral``; a container whose name its kind does not have in the spec is a stray."""

    __slots__ = ("any_live", "app", "ephemeral", "init", "sandbox", "stray")

    def __init__(self, spec: SpecIndex, observed: ObservedPod) -> None:
        self.sandbox = newest_ready_sandbox(observed.sandboxes)
        app: dict[str, list[Record]] = {}
        init: dict[str, list[Record]] = {}
        stray: list[Record] = []
        ephemeral: dict[str, list[Record]] = {}
        any_live = False
        app_index, init_index = spec.app_index, spec.init_index
        ephemeral_index = spec.ephemeral_index
        for c in observed.containers:
            name = container_name(c)
            if ephemeral_index and _is_ephemeral(c, name, spec):
                record = Record(c, name, False)
                any_live = any_live or record.live
                ephemeral.setdefault(name, []).append(record)
                continue
            is_init = init_flag(c.annotations)
            if is_init is None:  # not made by kubecore: judged by the spec
                is_init = name in init_index and name not in app_index
            record = Record(c, name, is_init)
            if record.live:
                any_live = True
            group = init if is_init else app
            if name in (init_index if is_init else app_index):
                if name in group:
                    group[name].append(record)
                else:
                    group[name] = [record]
            else:
                stray.append(record)
        run_once = spec.run_once
        for name, records in (*app.items(), *init.items()):
            _newest_first(records)
            if name in run_once:
                _set_aside_unstarted(records, stray)
        for records in ephemeral.values():
            _newest_first(records)
        self.app = app
        self.init = init
        self.ephemeral = ephemeral
        self.stray = stray
        self.any_live = any_live

    def records(self) -> Iterable[Record]:
        for records in self.app.values():
            yield from records
        for records in self.init.values():
            yield from records
        for records in self.ephemeral.values():
            yield from records
        yield from self.stray


def _is_ephemeral(c: RuntimeContainer, name: str, spec: SpecIndex) -> bool:
    """An ephemeral container of the spec: one kubecore marked so, or (not made by kubecore) a
    name only the spec's ephemeral containers have."""
    if name not in spec.ephemeral_index:
        return False
    if is_ephemeral(c.annotations):
        return True
    return init_flag(c.annotations) is None and name not in spec.app_index


@attrs.frozen
class ObservedPod:
    """What the runtime shows for one pod (from the sync's snapshot, filtered by pod UID)."""

    sandboxes: tuple[RuntimeSandbox, ...] = ()
    containers: tuple[RuntimeContainer, ...] = ()


class PodEntry:
    """One pod's part of a snapshot, and a cheap key that changes when anything that matters
    does."""

    __slots__ = ("_observed", "containers", "key", "sandboxes")

    def __init__(self) -> None:
        self.sandboxes: list[RuntimeSandbox] = []
        self.containers: list[RuntimeContainer] = []
        self.key: list[object] = []
        self._observed: ObservedPod | None = None

    def observed(self) -> ObservedPod:
        # Made once: an entry outlives its pass when the next snapshot lists the same objects.
        observed = self._observed
        if observed is None:
            observed = self._observed = ObservedPod(tuple(self.sandboxes), tuple(self.containers))
        return observed
