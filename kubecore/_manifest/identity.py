"""The identity of a pod that came without one: its UID (the one identity rule) and the
annotation that names its source."""

from __future__ import annotations

import uuid

import attrs

from kubecore._model import v1 as m

_UID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://kubecore.invalid/pod-uid")


def pod_uid(source: str, namespace: str, name: str, *, node_name: str) -> str:
    """The UID of a static pod its source gave none: the same for the same (node, source,
    namespace, name) across restarts and whichever way the pod reached the agent (the one
    identity rule). The node name is in it, as upstream kubelet hashes it into a static pod's
    UID: two nodes given the same manifest make differently named containers on one engine."""
    key = "\x00".join((node_name, source, namespace, name))
    return str(uuid.uuid5(_UID_NAMESPACE, key))


def assign_uid(pod: m.Pod, source: str, *, node_name: str) -> m.Pod:
    """A pod without a uid gets ``pod_uid`` of (node, source, namespace, name); others keep
    theirs."""
    if pod.metadata.uid:
        return pod
    meta = pod.metadata
    uid = pod_uid(source, meta.namespace, meta.name, node_name=node_name)
    return attrs.evolve(pod, metadata=attrs.evolve(meta, uid=uid))


def stamp_source(pod: m.Pod, source: str) -> m.Pod:
    """The pod with annotation ``kubernetes.io/config.source`` set to ``source``."""
    meta = pod.metadata
    if meta.annotations.get(SOURCE_ANNOTATION) == source:
        return pod
    annotations = {**meta.annotations, SOURCE_ANNOTATION: source}
    return attrs.evolve(pod, metadata=attrs.evolve(meta, annotations=annotations))


SOURCE_ANNOTATION = "kubernetes.io/config.source"
"""Every pod is stamped with the name of the source it came from."""
