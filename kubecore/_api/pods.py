"""Pods over the node's Kubernetes API: the ``Resource`` of the generic registry for ``pods``
(list, get, watch, create, replace, patch, apply, graceful delete: ``kubecore._api.deletion``)
and the ``pods/log`` and ``pods/status`` subresources.

Every pod on the node is read here, whatever its source; pods written over the API belong to
the API's in-process source (a ``StaticSource`` named ``kube-apiserver``), and a write to a pod of
another source (a manifest file, a URL) is refused with 403, as the API server refuses to change a
static pod's mirror pod."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import attrs

from kubecore._agent.admission.pod_security import (
    PodSecurityPolicy,
    forbidden_message,
    violations,
)
from kubecore._api.ephemeral_rules import keep_ephemeral_containers, refuse_ephemeral_change
from kubecore._api.errors import bad_request, forbidden, not_allowed, not_found
from kubecore._api.kubelet import ApiKubelet
from kubecore._api.patch import strategic_merge_patch
from kubecore._api.pod_logs import serve_log
from kubecore._api.pod_update import update_problems
from kubecore._api.request import (
    READS,
    SERVER_FIELDS,
    Exchange,
    Request,
    body_metadata,
    has_body,
    in_namespace,
    read_body,
)
from kubecore._api.resources import Resource
from kubecore._api.selectors import POD_FIELDS, pod_fields
from kubecore._api.storage import Storage
from kubecore._api.tables import POD_COLUMNS, pod_cells
from kubecore._api.terminating import PodDeletions, being_deleted
from kubecore._api.watch import PodLog, Render, public, serve_watch
from kubecore._apimachinery.rules import error_for
from kubecore._config.base import prepare_pods
from kubecore._config.static import StaticSource
from kubecore._contract.errors import ValidationError
from kubecore._manifest import pod_from_dict, pod_to_dict
from kubecore._manifest.identity import SOURCE_ANNOTATION
from kubecore._model.v1 import Pod
from kubecore._util.timefmt import rfc3339

_STREAMING_SUBRESOURCES = frozenset({"exec", "attach", "portforward", "proxy"})


def clean_manifest(data: object, namespace: str) -> dict[str, Any]:
    """A pod sent by a client, ready for ``pod_from_dict``: server-written metadata dropped, the
    URL's namespace filled in (and checked against the body's)."""
    if not isinstance(data, dict):
        raise bad_request("the body must be a JSON object (a v1 Pod)")
    if data.get("kind", "Pod") != "Pod" or data.get("apiVersion", "v1") != "v1":
        raise bad_request(f"expected a v1 Pod, got {data.get('apiVersion')}/{data.get('kind')}")
    body = {key: value for key, value in data.items() if key != "status"}
    meta = body_metadata(body)
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    in_namespace(meta, namespace)
    if not meta.get("labels"):
        meta.pop("labels", None)
    body["metadata"] = meta
    return body


def refuse_insecure(pod: Pod, policy: PodSecurityPolicy) -> None:
    """403 for a pod the node's pod-security policy forbids, in PSA's words (as an API server
    running Pod Security Admission refuses its create)."""
    found = violations(pod, policy)
    if found:
        raise forbidden("pods", pod.metadata.name, forbidden_message(found, policy.level))


def grace_period(options: object, request: Request) -> int | None:
    """The grace period a delete asks for (its query, else its ``DeleteOptions``)."""
    given = request.number("gracePeriodSeconds")
    if given is None and isinstance(options, dict):
        value = options.get("gracePeriodSeconds")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            given = value
    if given is not None and given < 0:
        return None
    return given


def _nudged_by_the_agent(kubelet: object, log: PodLog) -> None:
    """The agent pushes its changes (``Kubelet.subscribe``): watches look when told."""
    subscribe = getattr(kubelet, "subscribe", None)
    if subscribe is not None:
        subscribe(events=False, initial=False, maxsize=1, callback=lambda _change: log.nudge())
        log.pushed = True


class PodResource(Resource[dict[str, Any], Pod]):
    """``pods``: read from the agent (through the change log), written to the API's source."""

    name = "pods"
    kind = "Pod"
    fields = POD_FIELDS
    columns = POD_COLUMNS
    watchable = True
    status_subresource = True

    def __init__(self, kubelet: ApiKubelet, source: StaticSource, storage: Storage) -> None:
        self.kubelet = kubelet
        self.source = source
        self.log = PodLog(kubelet.clock.now)
        self.deletions = PodDeletions(kubelet, source, storage)
        _nudged_by_the_agent(kubelet, self.log)

    @property
    def node_name(self) -> str:
        return self.kubelet.config.node_name

    def current_pods(self) -> list[dict[str, Any]]:
        """The agent's pods, and the API's pods still terminating, as the API shows them, the
        change log brought up to date."""
        return self.look()[0]

    # --- reads

    def look(self) -> tuple[list[dict[str, Any]], int]:
        """``current_pods``, with the resourceVersion of exactly that list."""
        self.log.looking()
        pods = self.deletions.with_terminating(self.kubelet.pods())
        return self.log.listed(pods, self.node_name, self.deletions.marks())

    def listed(self, namespace: str | None) -> tuple[list[dict[str, Any]], str]:
        pods, version = self.look()
        return pods, str(version)

    def find(self, namespace: str, name: str) -> dict[str, Any]:
        for pod in self.current_pods():
            meta = pod["metadata"]
            if meta["namespace"] == namespace and meta["name"] == name:
                return pod
        raise not_found("pods", name)

    def version(self) -> str:
        return str(self.log.version)

    def selected(self, view: dict[str, Any]) -> tuple[str, Mapping[str, str], Mapping[str, str]]:
        meta = view["metadata"]
        return meta.get("namespace"), meta.get("labels") or {}, pod_fields(view)

    def shown(self, view: dict[str, Any]) -> dict[str, Any]:
        return public(view)

    def cells(self, view: dict[str, Any], now: float) -> list[Any]:
        return pod_cells(view, now, self.node_name)

    def watch(
        self,
        exchange: Exchange,
        request: Request,
        match: Callable[[dict[str, Any]], bool],
        render: Render,
    ) -> None:
        serve_watch(exchange, request, match, self, render)

    def subresource(
        self, exchange: Exchange, request: Request, namespace: str, rest: tuple[str, ...]
    ) -> None:
        method = request.method
        if len(rest) == 2 and rest[1] == "log" and method in READS:
            serve_log(exchange, request, self.kubelet.streams, self.find(namespace, rest[0]))
        elif len(rest) == 2 and rest[1] in _STREAMING_SUBRESOURCES:
            raise not_allowed(
                f"pods/{rest[1]} is not served by this node's API (it needs a streaming "
                "upgrade); run commands with the kubelet endpoint /run/{namespace}/{pod}/"
                "{container} instead"
            )
        else:
            raise not_allowed(f"{method} is not supported on pods/{'/'.join(rest)}")

    # --- writes

    def merge_strategic(self, target: Any, patch: Any) -> Any:
        return strategic_merge_patch(target, patch)

    def clean(self, data: object, namespace: str) -> dict[str, Any]:
        return clean_manifest(data, namespace)

    def decode(self, data: dict[str, Any], owned: Pod | None) -> Pod:
        if owned is not None:
            data["metadata"]["uid"] = owned.metadata.uid
        keep_ephemeral_containers(data, owned)
        try:
            pod = pod_from_dict(data)
        except ValidationError as error:
            name = (data.get("metadata") or {}).get("name", "")
            raise error_for(error, kind="Pod", name=name) from None
        refuse_ephemeral_change(pod, owned)
        if owned is None:
            refuse_insecure(pod, self.kubelet.config.pod_security_policy())
        elif problems := update_problems(pod, owned, self.node_name):
            raise error_for(ValidationError(problems), kind="Pod", name=pod.metadata.name)
        return pod

    def owned(self, namespace: str, name: str) -> Pod | None:
        for pod in self.source.pods:
            if pod.metadata.namespace == namespace and pod.metadata.name == name:
                return pod
        return None

    def exists(self, namespace: str, name: str) -> bool:
        shown = any(
            (pod["metadata"]["namespace"], pod["metadata"]["name"]) == (namespace, name)
            for pod in self.current_pods()
        )
        return shown or self.owned(namespace, name) is not None

    def refuse_foreign(self, namespace: str, name: str) -> NoReturn:
        """A pod of another source (a manifest file) is read-only over the API, as is a pod
        being deleted; a pod not on the node is not found."""
        pod = self.find(namespace, name)
        if self.deletions.get(namespace, name) is not None:
            raise being_deleted(name)
        source = pod["metadata"].get("annotations", {}).get(SOURCE_ANNOTATION, "?")
        raise forbidden(
            "pods",
            name,
            f'it comes from the "{source}" source (a static pod); change or remove it there, '
            "the API cannot",
        )

    def current(self, owned: Pod) -> dict[str, Any]:
        return pod_to_dict(owned)

    def stamp(self, item: Pod, owned: Pod | None) -> Pod:
        # Created once, by the API: a replace or patch keeps the uid and the time (AGE goes on).
        # A new random uid at each create, as the API server gives: a pod deleted and made
        # again is a new pod, with none of the old one's events or containers.
        created = owned.metadata.creation_timestamp if owned is not None else ""
        meta = attrs.evolve(
            item.metadata,
            uid=owned.metadata.uid if owned is not None else str(uuid.uuid4()),
            creation_timestamp=created or rfc3339(self.kubelet.clock.now()),
        )
        (stamped,) = prepare_pods([attrs.evolve(item, metadata=meta)], self.source.name)
        return stamped

    def apply(self, item: Pod, owned: Pod | None) -> None:
        if owned is None:
            self.source.add(item)
        else:
            self.source.update(item)

    def written(self, item: Pod, dry_run: bool) -> dict[str, Any]:
        body = pod_to_dict(item)
        key = (item.metadata.namespace, item.metadata.name)
        for obj in self.current_pods():
            meta = obj["metadata"]
            if (meta["namespace"], meta["name"]) != key:
                continue
            if not dry_run:
                return public(obj)
            # What would be stored, with what the node shows of the pod now.
            for field in ("creationTimestamp", "resourceVersion"):
                body["metadata"][field] = meta[field]
            body["spec"].setdefault("nodeName", self.node_name)
            if "status" in obj:
                body["status"] = obj["status"]
            return body
        body["metadata"]["creationTimestamp"] = rfc3339(self.kubelet.clock.now())
        return body

    def delete_options(self, exchange: Exchange, request: Request) -> object:
        options = read_body(exchange) if has_body(exchange) else {}
        return grace_period(options, request)

    def deletable(self, namespace: str, name: str) -> bool:
        """The API's pods, and those terminating (a shorter grace period may apply)."""
        owned = self.owned(namespace, name) is not None
        return owned or self.deletions.get(namespace, name) is not None

    def delete(
        self, storage: Storage, namespace: str, name: str, options: object, dry_run: bool
    ) -> dict[str, Any]:
        """A graceful delete (``kubecore._api.deletion``): the answer is the pod with its
        deletion fields, still shown ``Terminating`` unless it went at once."""
        asked = options if isinstance(options, int) else None
        now = self.kubelet.clock.now()
        last = public(self.find(namespace, name))
        terminating = self.deletions.get(namespace, name)
        if terminating is not None:
            deletion = self.deletions.again(terminating, asked, now, dry_run)
        else:
            owned = self.owned(namespace, name)
            if owned is None:
                self.refuse_foreign(namespace, name)
            shown = next((p for p in self.kubelet.pods() if p.uid == owned.uid), owned)
            deletion = self.deletions.start(owned, shown, asked, now, dry_run)
        for pod in [] if dry_run else self.current_pods():
            if (pod["metadata"]["namespace"], pod["metadata"]["name"]) == (namespace, name):
                return public(pod)
        last["metadata"].update(deletion.fields())
        return last
