"""Writing documents: the status documents of pods and the v1 Events, encoded fast (a node writes
one per pod change and six events per pod started) and equal to what the v1 builders make."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any

import attrs

from kubecore import Pod
from kubecore.events import EVENT_COMPONENT, Event, v1_event
from kubecore.manifest import pod_status_to_dict, pod_to_dict, rfc3339
from kubecore.v1 import PodStatus

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
"""One encoder for every document (``json.dumps`` with options builds one per call)."""


def encode_json(document: Mapping[str, Any]) -> bytes:
    """A document as compact JSON with sorted keys, as every value kubecore writes to etcd."""
    return _ENCODER.encode(document).encode()


def document_digest(document: bytes) -> bytes:
    """A short fingerprint of a status document, to tell whether it changed."""
    return hashlib.blake2b(document, digest_size=16).digest()


def status_document(pod: Pod) -> bytes:
    """What the status key of ``pod`` holds: the v1 Pod JSON with its status."""
    if pod.status is None:
        return encode_json(pod_to_dict(pod))
    return with_status(document_head(pod), pod.status)


def document_head(pod: Pod) -> bytes:
    """The status document of ``pod`` up to its status: the JSON object of its ``apiVersion``,
    ``kind``, ``metadata`` and ``spec`` (sorted before ``status``) without its closing brace."""
    return encode_json(pod_to_dict(attrs.evolve(pod, status=None)))[:-1]


def with_status(head: bytes, status: PodStatus) -> bytes:
    """A status document from its head (``document_head``) and the pod's status."""
    return b"".join((head, b',"status":', encode_json(pod_status_to_dict(status)), b"}"))


def _event_stamp(event: Event) -> str:
    # The agent's clock may be virtual (a monotonic count): only a wall time is shown as one.
    return rfc3339(event.timestamp if event.timestamp > 1e9 else time.time())


def event_document(event: Event, node: str, name: str) -> dict[str, Any]:
    """A v1 Event for one of the agent's events (the one builder's)."""
    return v1_event(event, node=node, name=name, stamp=_event_stamp(event))


_quote = json.encoder.encode_basestring_ascii


def event_json(event: Event, node: str, name: str) -> bytes:
    """``encode_json(event_document(event, node, name))``, written out directly: six events
    per pod started, their dictionaries and sorting cost more than the rest of their write."""
    ref = event.involved_object
    stamp = _quote(_event_stamp(event))
    involved = ['"apiVersion":"v1"']
    if ref.field_path:
        involved.append(f'"fieldPath":{_quote(ref.field_path)}')
    involved.append(f'"kind":{_quote(ref.kind)},"name":{_quote(ref.name)}')
    involved.append(f'"namespace":{_quote(ref.namespace)}')
    if ref.uid:
        involved.append(f'"uid":{_quote(ref.uid)}')
    host = _quote(node)
    return (
        f'{{"apiVersion":"v1","count":1,"firstTimestamp":{stamp},'
        f'"involvedObject":{{{",".join(involved)}}},"kind":"Event","lastTimestamp":{stamp},'
        f'"message":{_quote(event.message)},'
        f'"metadata":{{"creationTimestamp":{stamp},"name":{_quote(name)},'
        f'"namespace":{_quote(ref.namespace or "default")}}},'
        f'"reason":{_quote(event.reason)},'
        f'"reportingComponent":"{EVENT_COMPONENT}","reportingInstance":{host},'
        f'"source":{{"component":"{EVENT_COMPONENT}","host":{host}}},'
        f'"type":{_quote(str(event.type))}}}'
    ).encode()
