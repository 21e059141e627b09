"""What one kind the API serves supplies to the generic registry (``kubecore._api.registry``),
as a kind's strategy does for the API server's generic store: how its objects are read (listed,
found, selected, shown, put in a ``Table`` row), cleaned and decoded from what a client writes,
stamped and handed to the agent, and removed. Pods are ``kubecore._api.pods``, ConfigMaps and
Secrets ``kubecore._api.objects``."""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar

from kubecore._api.errors import ApiError, not_allowed
from kubecore._api.patch import merge_patch
from kubecore._api.request import Exchange, Request, has_body, read_body
from kubecore._api.watch import Render
from kubecore._model.v1 import KubeObject, Pod

if TYPE_CHECKING:
    from kubecore._api.storage import Storage

View = TypeVar("View")
"""How the kind's objects are read (a pod as the API shows it, a ConfigMap as stored)."""
Item = TypeVar("Item", bound=Pod | KubeObject)
"""What the kind's writes hand to the agent."""


class Resource(abc.ABC, Generic[View, Item]):
    """One kind of the API: ``name`` on the URL (``pods``), ``kind`` in documents (``Pod``)."""

    name: str
    kind: str
    fields: tuple[str, ...]
    """What ``fieldSelector`` can select by."""
    columns: tuple[dict[str, Any], ...]
    """The columns of its ``Table``."""
    reads_need_token = False
    """Whether reads need the bearer token even on loopback (a Secret's values)."""
    watchable = False
    status_subresource = False
    """Whether ``<name>/status`` reads the object (with its status) as ``<name>`` does."""

    # --- reads

    @abc.abstractmethod
    def listed(self, namespace: str | None) -> tuple[list[View], str]:
        """The objects (of one namespace, or all) and the resourceVersion of that list."""

    @abc.abstractmethod
    def find(self, namespace: str, name: str) -> View:
        """One object; a 404 when it is not there."""

    @abc.abstractmethod
    def version(self) -> str:
        """The resourceVersion of what is shown now."""

    @abc.abstractmethod
    def selected(self, view: View) -> tuple[str, Mapping[str, str], Mapping[str, str]]:
        """What selectors read of an object: its namespace, labels and selectable fields."""

    @abc.abstractmethod
    def shown(self, view: View) -> dict[str, Any]:
        """The object as the API serves it."""

    @abc.abstractmethod
    def cells(self, view: View, now: float) -> list[Any]:
        """Its row of the ``Table``."""

    def watch(
        self,
        exchange: Exchange,
        request: Request,
        match: Callable[[View], bool],
        render: Render,
    ) -> None:
        """Stream the changes of the objects ``match`` selects. The registry asks only a kind that
        is ``watchable`` (which overrides this); any other answers as the registry does."""
        raise not_allowed(f"{request.method} with watch is not supported on {self.name}")

    def subresource(
        self, exchange: Exchange, request: Request, namespace: str, rest: tuple[str, ...]
    ) -> None:
        """Answer ``<name>/<subresource>`` (``rest``); a kind without any has none to find."""
        raise ApiError(
            HTTPStatus.NOT_FOUND,
            "NotFound",
            f"the server could not find the requested resource ({self.name} are not served)",
        )

    # --- writes

    def merge_strategic(self, target: Any, patch: Any) -> Any:
        """What a strategic merge patch does to it (a plain merge for a kind without lists to
        merge by key)."""
        return merge_patch(target, patch)

    def read_body(self, exchange: Exchange) -> object:
        """A whole object written (``POST``, ``PUT``), in its JSON shape."""
        return read_body(exchange)

    @abc.abstractmethod
    def clean(self, data: object, namespace: str) -> dict[str, Any]:
        """What a client wrote, ready to decode: checked to be this kind, server-written
        metadata dropped, the URL's namespace filled in."""

    @abc.abstractmethod
    def decode(self, data: dict[str, Any], owned: Item | None) -> Item:
        """The object ``data`` describes, replacing ``owned`` (None: created); a 422 naming
        every problem."""

    @abc.abstractmethod
    def owned(self, namespace: str, name: str) -> Item | None:
        """The API's own object of that name (None for another source's, or none)."""

    @abc.abstractmethod
    def exists(self, namespace: str, name: str) -> bool:
        """Whether any source holds an object of that name."""

    @abc.abstractmethod
    def refuse_foreign(self, namespace: str, name: str) -> NoReturn:
        """The 403 for a write to another source's object, the 404 when there is none."""

    @abc.abstractmethod
    def current(self, owned: Item) -> dict[str, Any]:
        """The API's object in its JSON shape, as a patch applies to it."""

    @abc.abstractmethod
    def stamp(self, item: Item, owned: Item | None) -> Item:
        """``item`` with what the server gives it (uid, creation time) kept from ``owned``."""

    @abc.abstractmethod
    def apply(self, item: Item, owned: Item | None) -> None:
        """Hand the stored ``item`` to the agent (``owned``: the object it replaces)."""

    @abc.abstractmethod
    def written(self, item: Item, dry_run: bool) -> dict[str, Any]:
        """The answer to a write of ``item``."""

    def delete_options(self, exchange: Exchange, request: Request) -> object:
        """What a delete asks for beyond the name (``DeleteOptions``: none apply by default)."""
        if has_body(exchange):
            exchange._read_body()
        return None

    def deletable(self, namespace: str, name: str) -> bool:
        """Whether a ``deletecollection`` deletes the object: the API's own only."""
        return self.owned(namespace, name) is not None

    @abc.abstractmethod
    def delete(
        self, storage: Storage, namespace: str, name: str, options: object, dry_run: bool
    ) -> dict[str, Any]:
        """Delete the API's object ``namespace/name`` (under the store's lock, ``options``: what
        ``delete_options`` read); the answer is the object as the API shows it."""

    def adopt(self, objects: Iterable[KubeObject]) -> None:
        """Take the stored ``objects`` of this kind as the API's own (pods are the source's)."""
