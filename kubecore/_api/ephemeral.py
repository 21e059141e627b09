"""``pods/{name}/ephemeralcontainers``, the one way to add an ephemeral container (``kubectl
debug``), as the API server serves it: GET reads the pod; PUT and PATCH (strategic merge, JSON
merge or JSON patch, applied to the pod) change only its ``spec.ephemeralContainers`` (every other
change is dropped, as the API server drops it), may add ephemeral containers but never change
nor remove one (422 naming the field, ``ephemeral_rules``), and are stored like every write before
they are applied."""

from __future__ import annotations

import copy
from http import HTTPStatus
from typing import Any

import attrs

from kubecore._api.ephemeral_rules import invalid_field, unchanged_problems
from kubecore._api.errors import bad_request, not_allowed
from kubecore._api.patch import merge_for
from kubecore._api.pods import PodResource
from kubecore._api.request import READS, Exchange, Request, content_type, read_body, send_json
from kubecore._api.storage import Storage
from kubecore._api.watch import public
from kubecore._contract.errors import ValidationError
from kubecore._http.rules import error_for
from kubecore._manifest import pod_from_dict, pod_to_dict
from kubecore._model.v1 import Pod

SUBRESOURCE = "ephemeralcontainers"


class EphemeralContainers:
    """The subresource over the pods' ``Resource`` and the API's storage."""

    def __init__(self, pods: PodResource, storage: Storage) -> None:
        self.pods = pods
        self.storage = storage

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
            raise not_allowed(f"{method} is not supported on pods/{name}/{SUBRESOURCE}")

    def _write(
        self,
        exchange: Exchange,
        request: Request,
        namespace: str,
        name: str,
        make: Any,
    ) -> None:
        pods = self.pods
        with self.storage.lock:
            self.storage.check_writable()
            owned = pods.owned(namespace, name)
            if owned is None:
                pods.refuse_foreign(namespace, name)  # a static pod has none (403), or 404
            current = public(pods.find(namespace, name))
            wanted = make(copy.deepcopy(current))
            item = self._decode(owned, self._containers_of(wanted, name))
            problems = unchanged_problems(item, owned)
            if problems:
                raise error_for(ValidationError(problems), kind="Pod", name=name)
            stamped = pods.stamp(item, owned)
            if not request.dry_run():
                self.storage.save(stamped)
                pods.apply(stamped, owned)
            answer = pods.written(stamped, request.dry_run())
        send_json(exchange, answer, HTTPStatus.OK)

    @staticmethod
    def _containers_of(wanted: object, name: str) -> list[Any]:
        """``spec.ephemeralContainers`` of the pod a client wrote (everything else is dropped)."""
        if not isinstance(wanted, dict):
            raise bad_request("the body must be a JSON object (a v1 Pod)")
        if wanted.get("kind", "Pod") != "Pod":
            raise bad_request(f"expected a v1 Pod, got {wanted.get('kind')}")
        spec = wanted.get("spec")
        if not isinstance(spec, dict):
            raise bad_request("the pod has no spec")
        containers = spec.get("ephemeralContainers")
        if containers is None:
            return []
        if not isinstance(containers, list):
            raise invalid_field(name, "must be a list")
        return containers

    @staticmethod
    def _decode(owned: Pod, containers: list[Any]) -> Pod:
        """``owned`` with these ephemeral containers, decoded and validated as any pod."""
        data = pod_to_dict(owned)
        data["spec"]["ephemeralContainers"] = containers
        try:
            pod = pod_from_dict(data)
        except ValidationError as error:
            raise error_for(error, kind="Pod", name=owned.metadata.name) from None
        return attrs.evolve(pod, metadata=owned.metadata)
