"""The key layout, which is the interface: any etcd client (``etcdctl put`` included) can bind a
pod by writing its key. Every function takes the layout's ``prefix`` (``DEFAULT_PREFIX``)."""

from __future__ import annotations

DEFAULT_PREFIX = "/kubecore"
"""The key prefix every etcd key of kubecore is under unless another is given."""


def clean_prefix(prefix: str) -> str:
    return "/" + prefix.strip("/") if prefix.strip("/") else ""


def pods_prefix(prefix: str, node: str) -> str:
    """The keys of the pods bound to ``node`` start with this (slash included)."""
    return f"{clean_prefix(prefix)}/pods/{node}/"


def pod_key(prefix: str, node: str, namespace: str, name: str) -> str:
    """``<prefix>/pods/<node>/<namespace>/<name>``: a pod bound to ``node``."""
    return f"{pods_prefix(prefix, node)}{namespace}/{name}"


def status_prefix(prefix: str, node: str | None = None) -> str:
    """``<prefix>/status/`` (every node's), or ``<prefix>/status/<node>/`` (one node's)."""
    base = f"{clean_prefix(prefix)}/status/"
    return base if node is None else f"{base}{node}/"


def status_key(prefix: str, node: str, namespace: str, name: str) -> str:
    """``<prefix>/status/<node>/<namespace>/<name>``: the status the agent of ``node`` wrote
    for a pod."""
    return f"{status_prefix(prefix, node)}{namespace}/{name}"


def nodes_prefix(prefix: str) -> str:
    """``<prefix>/nodes/``: every node's Node document is under it."""
    return f"{clean_prefix(prefix)}/nodes/"


def node_key(prefix: str, node: str) -> str:
    """``<prefix>/nodes/<node>``: the node's Node document."""
    return f"{nodes_prefix(prefix)}{node}"


def split_key(key: str, key_prefix: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of ``<key_prefix><namespace>/<name>``; None for any other shape."""
    if not key.startswith(key_prefix):
        return None
    parts = key[len(key_prefix) :].split("/")
    if len(parts) != 2 or not all(parts):
        return None
    return parts[0], parts[1]


OBJECT_RESOURCES = {"ConfigMap": "configmaps", "Secret": "secrets"}
"""The kinds stored under ``<prefix>/<resource>/<namespace>/<name>`` (not per node: every node
reads them), by kind."""


def objects_prefix(prefix: str, kind: str) -> str:
    """The keys of the ConfigMaps (``kind="ConfigMap"``) or Secrets start with this."""
    return f"{clean_prefix(prefix)}/{OBJECT_RESOURCES[kind]}/"


def object_key(prefix: str, kind: str, namespace: str, name: str) -> str:
    """``<prefix>/<kind>/<namespace>/<name>``: a ConfigMap's or Secret's key (``kind``:
    ``configmaps`` or ``secrets``)."""
    return f"{objects_prefix(prefix, kind)}{namespace}/{name}"
