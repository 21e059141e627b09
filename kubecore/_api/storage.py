"""The guard of every write over the API: one lock, the store every change reaches first (before
it is applied and answered), and the refusal of writes while a stored file cannot be read. The
store's files themselves are ``kubecore._api.store``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from http import HTTPStatus
from typing import Protocol

from kubecore._api.deletion import Deletion
from kubecore._api.errors import ApiError, not_stored
from kubecore._api.managed_fields import Entries, ManagedFieldsBook, entries_from
from kubecore._api.store import ApiStore, StoredState, StoreProblem, unreadable
from kubecore._config.static import StaticSource
from kubecore._config.updates import Operation, PodUpdate
from kubecore._model.v1 import KubeObject, Pod

logger = logging.getLogger(__name__)


class _Adopter(Protocol):
    def adopt(self, objects: Iterable[KubeObject]) -> None: ...


class Storage:
    """The API's store and its source's state as read back from it."""

    def __init__(
        self,
        store: ApiStore | None,
        source: StaticSource,
        update: Callable[[PodUpdate], None],
        adopters: Sequence[_Adopter],
    ) -> None:
        self.store = store
        """Where every change written over the API is kept (None: in memory only)."""
        self.problems: tuple[StoreProblem, ...] = ()
        """The stored files that cannot be read back: while any is left, the source is not
        ready and writes are refused."""
        self.lock = threading.RLock()
        """Held by each write, from its checks to its answer (and by the end of a pod's
        deletion, which a write's own look at the pods may bring about)."""
        self.managed = ManagedFieldsBook()
        """The ``managedFields`` of each object the API owns, kept in its stored file."""
        self._source = source
        self._update = update
        self._adopters = adopters

    def restore(self, state: StoredState) -> None:
        """Take ``state`` (what the store holds) as the source's whole state: one SET of its
        pods and objects. Files it could not read keep the source not ready (their pods are
        kept running, nothing is deleted) until they are fixed or removed."""
        for adopter in self._adopters:
            adopter.adopt(state.objects)
        for (kind, namespace, name), fields in state.managed.items():
            self.managed.put(kind, namespace, name, entries_from(fields))
        self._source.set(state.pods, state.objects, unknown=unreadable(state.problems))
        self._set_problems(state.problems)

    def _set_problems(self, problems: tuple[StoreProblem, ...]) -> None:
        name = self._source.name
        if problems and problems != self.problems:
            for problem in problems:
                logger.error(
                    "API store file %s cannot be read (%s): source %s is not ready; pods are "
                    "kept and nothing is deleted, and writes over the API are refused, until "
                    "the file is fixed or removed",
                    problem.path,
                    problem.reason,
                    name,
                )
            reason = unreadable(problems)
            self._update(PodUpdate(Operation.NOT_READY, (), name, reason=reason))
        elif self.problems and not problems:
            logger.warning("the API store can be read again: source %s is ready", name)
        self.problems = problems

    def check_writable(self) -> None:
        """Raise 503 while a stored file cannot be read (reading the store again first: a file
        fixed or removed since lets writes through). Call under ``lock``."""
        if not self.problems or self.store is None:
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

    def save(self, item: Pod | KubeObject | Deletion, managed: Entries | None = None) -> None:
        """Put ``item`` in the store (before the change is applied; a ``Deletion``: the pod
        with its deletion fields), with its ``managed`` fields (None: those it had); 500 when
        it cannot be."""
        named = item.pod if isinstance(item, Deletion) else item
        key = (named.kind, named.metadata.namespace, named.metadata.name)
        entries = self.managed.get(*key) if managed is None else managed
        if self.store is not None:
            try:
                self.store.put(item, [entry.to_dict() for entry in entries])
            except (OSError, ValueError) as error:
                raise not_stored(named.kind, named.metadata.name, error) from None
        self.managed.put(*key, entries)

    def forget(self, item: Pod | KubeObject) -> None:
        """Remove ``item`` from the store (before it is removed from the source)."""
        key = (item.kind, item.metadata.namespace, item.metadata.name)
        if self.store is not None:
            try:
                self.store.delete(*key)
            except (OSError, ValueError) as error:
                raise not_stored(item.kind, item.metadata.name, error) from None
        self.managed.forget(*key)
