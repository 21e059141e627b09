"""What the subresources that change part of a pod's spec share (``ephemeralcontainers``,
``resize``), as the API server serves them: GET reads the pod; PUT and PATCH (strategic merge,
JSON merge or JSON patch, applied to the pod as served) change only the part the subresource
owns, every other change dropped, as the API server drops it; the write is checked (422 naming
the field), stored, then applied."""

from __future__ import annotations

import abc
import copy
from http import HTTPStatus
from typing import Any

import attrs

from kubecore._api.errors import bad_request, not_allowed
from kubecore._api.patch import merge_for
from kubecore._api.pods import PodResource
from kubecore._api.request import READS, Exchange, Request, content_type, read_body, send_json
from kubecore._api.storage import Storage
from kubecore._api.watch import public
from kubecore._apimachinery.rules import error_for
from kubecore._contract.errors import ValidationError
from kubecore._manifest import pod_from_dict
from kubecore._model.v1 import Pod


class PodSubresource(abc.ABC):
    """One such subresource over the pods' ``Resource`` and the API's storage."""

    name: str
    """On the URL: ``pods/{pod}/{name}``."""

    def __init__(self, pods: PodResource, storage: Storage) -> None:
        self.pods = pods
        self.storage = storage

    @abc.abstractmethod
    def changed(self, owned: Pod, wanted: dict[str, Any]) -> Pod:
        """``owned`` with what this subresource takes of ``wanted`` (the pod a client wrote),
        checked: a 422 naming every problem."""

    def handle(self, exchange: Exchange, request: Request, namespace: str, name: str) -> None:
        method = request.method
        if method in READS:
            send_json(exchange, self.pods.shown(self.pods.find(namespace, name)))
        elif method == "PUT":
            body = read_body(exchange)
            self._write(exchange, request, namespace, name, lambda _current: body)
        elif method == "PATCH":
            merge = merge_for(content_type(exchange), self.pods.merge_strategic)
            patch = read_body(exchange)
            self._write(exchange, request, namespace, name, lambda current: merge(current, patch))
        else:
            raise not_allowed(f"{method} is not supported on pods/{name}/{self.name}")

    def _write(
        self, exchange: Exchange, request: Request, namespace: str, name: str, make: Any
    ) -> None:
        pods = self.pods
        with self.storage.lock:
            self.storage.check_writable()
            owned = pods.owned(namespace, name)
            if owned is None:
                pods.refuse_foreign(namespace, name)  # a static pod (403), or none (404)
            current = public(pods.find(namespace, name))
            item = self.changed(owned, spec_of(make(copy.deepcopy(current))))
            stamped = pods.stamp(item, owned)
            if not request.dry_run():
                self.storage.save(stamped)
                pods.apply(stamped, owned)
            answer = pods.written(stamped, request.dry_run())
        send_json(exchange, answer, HTTPStatus.OK)


def spec_of(wanted: object) -> dict[str, Any]:
    """The spec of the pod a client wrote (a 400 when it is not a pod with one)."""
    if not isinstance(wanted, dict):
        raise bad_request("the body must be a JSON object (a v1 Pod)")
    if wanted.get("kind", "Pod") != "Pod":
        raise bad_request(f"expected a v1 Pod, got {wanted.get('kind')}")
    spec = wanted.get("spec")
    if not isinstance(spec, dict):
        raise bad_request("the pod has no spec")
    return spec


def decoded(owned: Pod, data: dict[str, Any]) -> Pod:
    """The pod ``data`` (``owned``'s JSON, changed) describes, decoded and validated as any pod,
    with ``owned``'s metadata."""
    try:
        pod = pod_from_dict(data)
    except ValidationError as error:
        raise error_for(error, kind="Pod", name=owned.metadata.name) from None
    return attrs.evolve(pod, metadata=owned.metadata)
